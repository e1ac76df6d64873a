// Models created by name, as configs name them, with each model's natural
// input shape and class count (what `bnn models` lists).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/classifier.h"

namespace bnn::models {

struct ModelSpec {
  std::string name = "mlp";
  std::vector<int64_t> input_shape = {1, 28, 28};  // C, H, W
  int64_t num_classes = 10;
  std::vector<int64_t> hidden = {256, 256};        // mlp only
  bool batch_norm = false;                         // mlp only
  std::string path;                                // torchscript only: the saved module
  bool init_from_file = false;                     // torchscript only: keep the file's weights
};

// Every valid model name, in the order `bnn models` lists them. The config's
// model.name choices are taken from here.
const std::vector<std::string>& model_names();

// The spec of `name` for the data it was designed for (the paper's dataset:
// fmnist_cnn 1x28x28 with 10 classes, chest_xray_cnn 1x180x180 with 2,
// celeba_cnn 3x64x64 with 2, cifar10_wide_cnn 3x32x32 with 10; mlp like
// fmnist_cnn; torchscript has no shape of its own: it takes the data set's).
// Unknown names throw, listing the valid names.
ModelSpec default_spec(const std::string& name);

// Builds the model with weights initialised from `seed` (LibTorch's default
// initialisers draw from the global generator; construction is serialised
// under a lock and the generator re-seeded, so the same seed gives the same
// weights). Unknown names throw, listing the valid names. The paper CNNs take
// square images and their low rank from the paper (32, or 16 for celeba_cnn
// and 512 for cifar10_wide_cnn). torchscript loads spec.path and checks it
// against the input shape and class count (Note [TorchScript models] in
// models/torchscript.h), throwing std::invalid_argument naming the file.
std::shared_ptr<Classifier> make_model(const ModelSpec& spec, uint64_t seed);

}  // namespace bnn::models
