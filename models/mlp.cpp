#include "models/mlp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bnn::models {

Mlp::Mlp(const MlpOptions& options) : options_(options) {
  TORCH_CHECK(options.num_classes >= 2, "mlp needs at least 2 classes, got ", options.num_classes);
  int64_t in = 1;
  for (int64_t s : options.input_shape) in *= s;
  body_->push_back(torch::nn::Flatten());
  for (int64_t width : options.hidden) {
    TORCH_CHECK(width >= 1, "mlp hidden widths must be positive, got ", width);
    body_->push_back(torch::nn::Linear(in, width));
    body_->push_back(torch::nn::Softplus());
    if (options.batch_norm) body_->push_back(torch::nn::BatchNorm1d(torch::nn::BatchNormOptions(width).momentum(1.0)));
    in = width;
  }
  body_->push_back(torch::nn::Linear(in, options.num_classes));
  register_module("body", body_);
}

torch::Tensor Mlp::forward(const torch::Tensor& images) { return body_->forward(images); }

std::string Mlp::pretty_string() const {
  return fmt::format("Mlp(input={}, hidden=[{}], classes={}, batch_norm={})", fmt::join(options_.input_shape, "x"),
                     fmt::join(options_.hidden, ", "), options_.num_classes, options_.batch_norm);
}

}  // namespace bnn::models
