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
// The chest X-ray network's pool: side s becomes floor(s / 2) + 1.
torch::nn::MaxPool2d padded_pool2() {
  return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2).padding(1));
}

void check_image_size(const char* name, const PaperCnnOptions& options, int64_t min_size) {
  TORCH_CHECK(options.image_size >= min_size, name, " needs images of at least ", min_size, "x", min_size, ", got ",
              options.image_size);
}

// conv -> Softplus -> BatchNorm2d, the listings' repeated unit.
void add_conv_unit(torch::nn::Sequential& layers, int64_t in, int64_t out) {
  layers->push_back(conv3x3(in, out));
  layers->push_back(torch::nn::Softplus());
  layers->push_back(bn2d(out));
}

// The last convolution of a cifar10_wide_cnn stage: its BatchNorm follows the pool.
void add_pooled_conv_unit(torch::nn::Sequential& layers, int64_t in, int64_t out) {
  layers->push_back(conv3x3(in, out));
  layers->push_back(torch::nn::Softplus());
  layers->push_back(pool2());
  layers->push_back(bn2d(out));
}

// The head shared by fmnist_cnn and chest_xray_cnn (appendix E.1):
// BatchNorm1d(flattened) -> Linear(flattened, r) -> BatchNorm1d(r) ->
// Linear(r, 512) -> Softplus -> BatchNorm1d(512) -> Linear(512, classes).
torch::nn::Sequential low_rank_head(int64_t flattened, const PaperCnnOptions& options) {
  return torch::nn::Sequential(
      torch::nn::Flatten(), bn1d(flattened), torch::nn::Linear(flattened, options.low_rank), bn1d(options.low_rank),
      torch::nn::Linear(options.low_rank, 512), torch::nn::Softplus(), bn1d(512),
      torch::nn::Linear(512, options.num_classes));
}

}  // namespace

PaperCnn::PaperCnn(std::string type_name, const PaperCnnOptions& options)
    : type_name_(std::move(type_name)), options_(options) {}

void PaperCnn::set_layers(torch::nn::Sequential features, torch::nn::Sequential head) {
  features_ = register_module("features", std::move(features));
  head_ = register_module("head", std::move(head));
}

torch::Tensor PaperCnn::forward(const torch::Tensor& images) { return head_->forward(features_->forward(images)); }

std::string PaperCnn::pretty_string() const {
  return fmt::format("{}(in_channels={}, image={}x{}, low_rank={}, classes={})", type_name_, options_.in_channels,
                     options_.image_size, options_.image_size, options_.low_rank, options_.num_classes);
}

FmnistCnn::FmnistCnn(const PaperCnnOptions& options) : PaperCnn("FmnistCnn", options) {
  check_image_size("fmnist_cnn", options, /*min_size=*/8);
  const int64_t c = options.in_channels;
  torch::nn::Sequential features(
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
  set_layers(features, low_rank_head(flattened, options));
}

ChestXrayCnn::ChestXrayCnn(const PaperCnnOptions& options) : PaperCnn("ChestXrayCnn", options) {
  check_image_size("chest_xray_cnn", options, /*min_size=*/1);
  torch::nn::Sequential features;
  const std::vector<int64_t> widths = {32, 64, 64, 128, 256};
  int64_t in = options.in_channels;
  int64_t side = options.image_size;
  for (size_t block = 0; block < widths.size(); ++block) {
    if (block > 0) features->push_back(bn2d(in));
    features->push_back(conv3x3(in, widths[block]));
    features->push_back(torch::nn::Softplus());
    features->push_back(padded_pool2());
    in = widths[block];
    side = side / 2 + 1;
  }
  const int64_t flattened = in * side * side;
  set_layers(features, low_rank_head(flattened, options));
}

CelebaCnn::CelebaCnn(const PaperCnnOptions& options) : PaperCnn("CelebaCnn", options) {
  check_image_size("celeba_cnn", options, /*min_size=*/8);
  const int64_t c = options.in_channels;
  const int64_t r = options.low_rank;
  torch::nn::Sequential features(
      // block 1
      conv3x3(c, 32), torch::nn::Softplus(), bn2d(32),
      conv3x3(32, 64), torch::nn::Softplus(), pool2(), bn2d(64),
      // block 2
      conv3x3(64, 128), torch::nn::Softplus(), bn2d(128),
      conv3x3(128, 128), torch::nn::Softplus(), pool2(), bn2d(128),
      // block 3
      conv3x3(128, 256), torch::nn::Softplus(), bn2d(256),
      conv3x3(256, 256), torch::nn::Softplus(), pool2());
  const int64_t side = options.image_size / 2 / 2 / 2;
  const int64_t flattened = 256 * side * side;
  torch::nn::Sequential head(
      torch::nn::Flatten(), bn1d(flattened), torch::nn::Linear(flattened, r), bn1d(r),
      torch::nn::Linear(r, 4096), torch::nn::Softplus(), bn1d(4096), torch::nn::Linear(4096, r), bn1d(r),
      torch::nn::Linear(r, 1024), torch::nn::Softplus(), bn1d(1024), torch::nn::Linear(1024, r), bn1d(r),
      torch::nn::Linear(r, 512), torch::nn::Softplus(), bn1d(512),
      torch::nn::Linear(512, options.num_classes));
  set_layers(features, head);
}

Cifar10WideCnn::Cifar10WideCnn(const PaperCnnOptions& options) : PaperCnn("Cifar10WideCnn", options) {
  check_image_size("cifar10_wide_cnn", options, /*min_size=*/8);
  constexpr int64_t kConvsPerStage = 4;
  torch::nn::Sequential features;
  int64_t in = options.in_channels;
  for (int64_t width : {512, 768, 1024}) {
    for (int64_t k = 0; k + 1 < kConvsPerStage; ++k) {
      add_conv_unit(features, in, width);
      in = width;
    }
    add_pooled_conv_unit(features, in, width);
  }
  const int64_t side = options.image_size / 2 / 2 / 2;
  const int64_t flattened = in * side * side;
  const int64_t r = options.low_rank;
  torch::nn::Sequential head(
      torch::nn::Flatten(), bn1d(flattened), torch::nn::Linear(flattened, r), bn1d(r),
      torch::nn::Linear(r, 2048), torch::nn::Softplus(), bn1d(2048),
      torch::nn::Linear(2048, r), torch::nn::Softplus(), bn1d(r),
      torch::nn::Linear(r, 1024), torch::nn::Softplus(), bn1d(1024),
      torch::nn::Linear(1024, options.num_classes));
  set_layers(features, head);
}

}  // namespace bnn::models
