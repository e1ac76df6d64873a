#include "models/paper_cnns.h"

#include <fmt/format.h>

namespace bnn::models {

namespace {

torch::nn::Conv2d conv3x3(int64_t in, int64_t out) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, /*kernel_size=*/3).padding(1));
}
torch::nn::BatchNorm2d bn2d(int64_t c) { return torch::nn::BatchNorm2d(torch::nn::BatchNormOptions(c).momentum(1.0)); }
torch::nn::BatchNorm1d bn1d(int64_t c) { return torch::nn::BatchNorm1d(torch::nn::BatchNormOptions(c).momentum(1.0)); }
torch::nn::MaxPool2d pool2() { return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)); }

}  // namespace

FmnistCnn::FmnistCnn(const PaperCnnOptions& options) : options_(options) {
  TORCH_CHECK(options.image_size >= 8, "fmnist_cnn needs images of at least 8x8, got ", options.image_size);
  const int64_t c = options.in_channels;
  features_ = torch::nn::Sequential(
      // block 1
      conv3x3(c, 32), torch::nn::Softplus(), bn2d(32),
      conv3x3(32, 64), torch::nn::Softplus(), pool2(), bn2d(64),
      // block 2
      conv3x3(64, 64), torch::nn::Softplus(), bn2d(64),
      conv3x3(64, 128), torch::nn::Softplus(), bn2d(128),
      conv3x3(128, 128), pool2(),
      // block 3
      bn2d(128),
      conv3x3(128, 256), torch::nn::Softplus(), bn2d(256),
      conv3x3(256, 256), torch::nn::Softplus(), pool2());
  const int64_t side = options.image_size / 2 / 2 / 2;
  const int64_t flattened = 256 * side * side;
  head_ = torch::nn::Sequential(
      torch::nn::Flatten(), bn1d(flattened), torch::nn::Linear(flattened, options.low_rank), bn1d(options.low_rank),
      torch::nn::Linear(options.low_rank, 512), torch::nn::Softplus(), bn1d(512),
      torch::nn::Linear(512, options.num_classes));
  register_module("features", features_);
  register_module("head", head_);
}

torch::Tensor FmnistCnn::forward(const torch::Tensor& images) { return head_->forward(features_->forward(images)); }

std::string FmnistCnn::pretty_string() const {
  return fmt::format("FmnistCnn(in_channels={}, image={}x{}, low_rank={}, classes={})", options_.in_channels,
                     options_.image_size, options_.image_size, options_.low_rank, options_.num_classes);
}

}  // namespace bnn::models
