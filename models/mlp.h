// A multilayer perceptron on flattened images: Linear -> Softplus
// [-> BatchNorm1d(momentum 1.0)] per hidden layer, then a Linear head.
#pragma once

#include <vector>

#include "models/classifier.h"

namespace bnn::models {

struct MlpOptions {
  std::vector<int64_t> input_shape = {1, 28, 28};
  std::vector<int64_t> hidden = {256, 256};
  int64_t num_classes = 10;
  bool batch_norm = false;
};

class Mlp : public Classifier {
 public:
  explicit Mlp(const MlpOptions& options);
  torch::Tensor forward(const torch::Tensor& images) override;
  std::string pretty_string() const override;

 private:
  MlpOptions options_;
  torch::nn::Sequential body_;
};

}  // namespace bnn::models
