// The convolutional networks of the SMS-UBU paper, appendix E.1.
//
// fmnist_cnn: seven 3x3 convolutions (32, 64 | 64, 128, 128 | 256, 256
// channels, padding 1) with Softplus, BatchNorm (momentum 1.0) and three 2x2
// max-pools, then a low-rank head: BatchNorm1d(2304) -> Linear(2304, 32) ->
// BatchNorm1d(32) -> Linear(32, 512) -> Softplus -> BatchNorm1d(512) ->
// Linear(512, 10). 1,265,258 parameters for a 1x28x28 input. The layer order
// follows the appendix listing literally, including the fifth convolution
// (128 -> 128), which is followed directly by the max-pool without Softplus.
#pragma once

#include "models/classifier.h"

namespace bnn::models {

struct PaperCnnOptions {
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  int64_t image_size = 28;   // square input
  int64_t low_rank = 32;
};

class FmnistCnn : public Classifier {
 public:
  explicit FmnistCnn(const PaperCnnOptions& options);
  torch::Tensor forward(const torch::Tensor& images) override;
  std::string pretty_string() const override;

 private:
  PaperCnnOptions options_;
  torch::nn::Sequential features_;
  torch::nn::Sequential head_;
};

}  // namespace bnn::models
