// How a raw image becomes the input of a run's models, recorded in the run
// directory so that `bnn predict` (src/pipeline/predict.h) treats new images
// exactly as the training data was treated, without the data set.
//
// Note [Preprocessing]: <run>/preprocess.json, written by `bnn run` next to
// config.yaml:
//   {"dataset": "fashion_mnist",
//    "model": {"name", "input_shape": [C, H, W], "num_classes", "hidden", "batch_norm",
//              "path": "model.pt" for a torchscript model (the run's copy, relative to it), else ""},
//    "class_names": [...],
//    "image": {"channels": C, "side": H, "resize": false, "center_square": false},
//    "pixels": {"mean": [..], "std": [..], "standardization": "table"}}
// A run on float32 feature arrays (data.dataset arrays) has input shape
// [D, 1, 1], per-feature "mean" and "std" in feature units, and
// "standardization": "features": `bnn predict` then takes .npy files of
// N x D float32 features and maps x to (x - mean) / std in double.
// A decoded image (grayscale when C = 1, RGB when C = 3; OpenCV converts
// whatever the file holds) is
//   - fashion_mnist, cifar10 ("resize": false): used as it is; a file that is
//     not H x W is an error, since the training images were never
//     resized;
//   - chest_xray, celeba, image_folder ("resize": true): resized to side x side
//     (INTER_AREA when shrinking, INTER_LINEAR otherwise, the aspect ratio not
//     kept) after, for celeba ("center_square": true), a crop to the largest
//     centred square: what the loaders do (data_loaders/image_files.h);
// then pixel p of channel c becomes (p / 255 - mean[c]) / std[c], with mean
// and std the data set's fixed statistics (Fashion-MNIST, CIFAR-10) or those
// of the run's training pixels (the others), rounded as the loader rounded
// (Note [Pixel storage] in data_loaders/dataset.h): "table" evaluates it in
// double and rounds once, "affine" computes p * scale + shift in float32.
// Training-time augmentation (chest_xray) is not applied to new images.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "data_loaders/image_files.h"
#include "models/registry.h"
#include "src/config/config.h"

namespace bnn::pipeline {

struct Preprocess {
  std::string dataset;
  models::ModelSpec model;
  std::vector<std::string> class_names;
  bool resize = false;
  bool center_square = false;
  data_loaders::ChannelStats stats;
  std::string standardization;  // "table", "affine", or "features" (float feature arrays)

  bool features() const { return standardization == "features"; }

  int64_t channels() const { return model.input_shape.at(0); }
  int64_t height() const { return model.input_shape.at(1); }
  int64_t width() const { return model.input_shape.at(2); }
};

// The preprocessing of the data `config` loaded as `data`.
Preprocess preprocess_of(const config::Config& config, const data_loaders::Dataset& data);

nlohmann::json to_json(const Preprocess& preprocess);

// <run_dir>/preprocess.json. Throws config::ConfigError naming the file when
// it is missing (a run made before bnn wrote it) or malformed.
Preprocess read_preprocess(const std::filesystem::path& run_dir);

// How data_loaders::decode_images reads a new image file.
data_loaders::ImageDecodeOptions decode_options(const Preprocess& preprocess);

// N x C x height x width uint8 CPU pixels as float32 model inputs; for a
// features run, the output of features_of, unchanged.
torch::Tensor model_inputs(const Preprocess& preprocess, const torch::Tensor& pixels);

// N x D float32 features of a features run as its N x D x 1 x 1 model inputs.
torch::Tensor features_of(const Preprocess& preprocess, const torch::Tensor& x);

}  // namespace bnn::pipeline
