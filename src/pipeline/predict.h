// `bnn predict`: class probabilities and uncertainties of new images from the
// weights a finished run kept, without re-running it and without its data set.
//
// Inputs: image files (JPEG, PNG, BMP), folders of them (the files directly
// inside, sorted by name), and .npy files of uint8 pixels, N x H x W (one
// channel) or N x C x H x W, already at the model's size. Images are
// preprocessed as the training images were (Note [Preprocessing] in
// preprocess.h).
//
// Methods (docs/design.md §5), each over the selected finished members:
//   swa    each member's x* (swa_weights.npy) with its recalibrated BatchNorm
//          statistics (swa_buffers.npy); the ensemble is the mean over members
//          (in a run with map.optimizer lbfgs: the MAP point, map_weights.npy
//          and map_buffers.npy, reported as method "map")
//   bayes  the stored posterior samples (Note [Stored samples] in
//          stored_weights.h); each member's samples are averaged, then the
//          members (so members weigh equally, as in `bnn evaluate`)
// Per image and method: the mean probabilities pbar, the predicted class
// (argmax, ties to the lowest index), the predictive entropy H(pbar) and the
// mutual information H(pbar) - mean_d H(p_d) over the draws d (members for
// swa, samples for bayes; Note [Uncertainty decomposition] in
// src/evaluation/uncertainty.h), clamped at 0 against rounding.
//
// With the run's float32 sample weights, the probabilities reproduce the
// rows of the run's swa_probs.npy and bayes_probs.npy (averaged over the
// selected members) for the same images to float32 rounding: the same
// weights, statistics and inputs, scored in batches of another size and
// averaged in another order (tests/src/pipeline/predict_test.cpp measures 0 for swa and
// 3e-8 for bayes, and allows 1e-5). float16 weights moved them by 3e-4 there
// (allowed 5e-3).
//
// Errors (config::ConfigError, or std::runtime_error naming the file): a run
// directory without preprocess.json or finished members, a member without
// stored samples for bayes (naming evaluation.save_sample_weights), a missing
// path or empty folder, an unreadable image, an image or .npy of the wrong
// size or channels (expected versus got).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace bnn::pipeline {

struct PredictOptions {
  std::filesystem::path run_dir;
  std::vector<std::filesystem::path> inputs;
  std::vector<int64_t> members;  // member indices; empty = every finished member
  bool swa = true;
  bool bayes = true;
  std::string device = "cpu";    // as run.device: auto, cpu, cuda, cuda:N
};

struct MethodPrediction {
  std::string method;  // "swa" or "bayes"
  int64_t draws = 0;   // members (swa) or stored samples (bayes) averaged
  torch::Tensor probs;               // N x K double, CPU
  torch::Tensor entropy;             // N double
  torch::Tensor mutual_information;  // N double
};

struct Predictions {
  std::vector<std::string> images;  // the file, or "<file.npy>[i]", per row
  std::vector<std::string> class_names;
  std::vector<std::string> members;  // member directory names used
  std::vector<MethodPrediction> methods;
};

Predictions predict_images(const PredictOptions& options);

// One row per image and method:
// image,method,predicted,class,entropy,mutual_information,p_0,...,p_{K-1}
std::string to_csv(const Predictions& predictions);
// {"run_members": [...], "class_names": [...], "draws": {"swa": M, "bayes": D},
//  "images": [{"image", "<method>": {"predicted", "class", "probabilities",
//  "entropy", "mutual_information"}, ...}, ...]}
nlohmann::json to_json(const Predictions& predictions);
// A short fixed-width table: image, method, class, its probability, entropy,
// mutual information.
std::string to_table(const Predictions& predictions);

// Throws ConfigError unless `path` ends in .csv or .json and is new or an
// earlier output of `bnn predict` (Note [Output files] in run_directory.h).
void check_predictions_path(const std::filesystem::path& path);

// Writes to_csv (a .csv path) or to_json (a .json path) atomically
// (check_predictions_path first).
void write_predictions(const Predictions& predictions, const std::filesystem::path& path);

}  // namespace bnn::pipeline
