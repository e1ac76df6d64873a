// Models created by name, as configs name them.
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
};

const std::vector<std::string>& model_names();

// Builds the model with weights initialised from `seed` (LibTorch's default
// initialisers draw from the global generator; construction is serialised
// under a lock and the generator re-seeded, so the same seed gives the same
// weights). Unknown names throw, listing the valid names.
std::shared_ptr<Classifier> make_model(const ModelSpec& spec, uint64_t seed);

}  // namespace bnn::models
