// The convolutional networks of the SMS-UBU paper, appendix E.1. Every
// network uses 3x3 convolutions with padding 1, Softplus activations,
// BatchNorm with momentum 1.0 (Note [BatchNorm] in models/classifier.h) and a
// low-rank fully connected head; the parameter counts below are the paper's
// and are asserted by tests/models/models_test.cpp.
//
// fmnist_cnn: seven 3x3 convolutions (32, 64 | 64, 128, 128 | 256, 256
// channels, padding 1) with Softplus, BatchNorm (momentum 1.0) and three 2x2
// max-pools, then a low-rank head: BatchNorm1d(2304) -> Linear(2304, 32) ->
// BatchNorm1d(32) -> Linear(32, 512) -> Softplus -> BatchNorm1d(512) ->
// Linear(512, 10). 1,265,258 parameters for a 1x28x28 input. The layer order
// follows the appendix listing literally, including the fifth convolution
// (128 -> 128), which is followed directly by the max-pool without Softplus.
//
// chest_xray_cnn: five blocks conv -> Softplus -> MaxPool(2, stride 2,
// padding 1), with BatchNorm2d between blocks (32, 64, 64, 128, 256
// channels). The padded pool maps a side s to floor(s / 2) + 1, so 180 ->
// 91 -> 46 -> 24 -> 13 -> 7 and the flattened size is 256 * 7 * 7 = 12544.
// Head: BatchNorm1d(12544) -> Linear(12544, 32) -> BatchNorm1d(32) ->
// Linear(32, 512) -> Softplus -> BatchNorm1d(512) -> Linear(512, 2).
// 870,882 parameters for a 1x180x180 input.
//
// celeba_cnn: six convolutions (32, 64 | 128, 128 | 256, 256 channels), each
// followed by Softplus and BatchNorm2d, with a 2x2 max-pool after every
// second convolution (before its BatchNorm; the last block ends in the pool).
// The head repeats a low-rank bottleneck (low rank 16) three times, as the
// listing does: BatchNorm1d(16384) -> Linear(16384, 16) -> BatchNorm1d(16) ->
// Linear(16, 4096) -> Softplus -> BatchNorm1d(4096) -> Linear(4096, 16) ->
// BatchNorm1d(16) -> Linear(16, 1024) -> Softplus -> BatchNorm1d(1024) ->
// Linear(1024, 16) -> BatchNorm1d(16) -> Linear(16, 512) -> Softplus ->
// BatchNorm1d(512) -> Linear(512, 2). 1,612,306 parameters for 3x64x64.
//
// cifar10_wide_cnn: 73,038,346 parameters for 3x32x32 (the paper's count).
// The appendix listing is garbled: it shows five convolutions per stage (15
// in all, which gives 90,150,154 parameters) while the text says twelve
// convolutions. The layout here keeps the listing's pattern with four
// convolutions per stage of 512, 768 and 1024 channels; the first of each
// stage changes the width. Every convolution is followed by Softplus and a
// BatchNorm2d; the last convolution of a stage is followed by Softplus,
// MaxPool(2, 2) and then its BatchNorm2d, as in the listing's first two
// stages. That gives 32 / 8 = 4, a flattened size 1024 * 4 * 4 = 16384, and
// the head of the listing: BatchNorm1d(16384) -> Linear(16384, 512) ->
// BatchNorm1d(512) -> Linear(512, 2048) -> Softplus -> BatchNorm1d(2048) ->
// Linear(2048, 512) -> Softplus -> BatchNorm1d(512) -> Linear(512, 1024) ->
// Softplus -> BatchNorm1d(1024) -> Linear(1024, 10).
// Count: convolutions 3*512*9+512 + 3*(512*512*9+512) + 512*768*9+768 +
// 3*(768*768*9+768) + 768*1024*9+1024 + 3*(1024*1024*9+1024) = 61,944,576;
// their twelve BatchNorms 2*(4*512 + 4*768 + 4*1024) = 18,432; head
// 11,065,354 (of which 32,768 is BatchNorm1d(16384)); total 73,038,346
// exactly. Dropping the BatchNorm after the last pool (where the listing's
// third stage has none) would give 2,048 fewer, so the paper's count says
// that BatchNorm is there. The listing's final BatchNorm1d(1024) omits
// momentum=1.0; momentum has no parameters and we use 1.0 everywhere.
#pragma once

#include "models/classifier.h"

namespace bnn::models {

struct PaperCnnOptions {
  int64_t in_channels = 1;
  int64_t num_classes = 10;
  int64_t image_size = 28;   // square input
  int64_t low_rank = 32;
};

// A convolutional feature extractor followed by a fully connected head.
class PaperCnn : public Classifier {
 public:
  torch::Tensor forward(const torch::Tensor& images) override;
  std::string pretty_string() const override;

 protected:
  PaperCnn(std::string type_name, const PaperCnnOptions& options);
  // Registers the two stages; called once by each subclass constructor.
  void set_layers(torch::nn::Sequential features, torch::nn::Sequential head);
  const PaperCnnOptions& options() const { return options_; }

 private:
  std::string type_name_;
  PaperCnnOptions options_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential head_{nullptr};
};

class FmnistCnn : public PaperCnn {
 public:
  explicit FmnistCnn(const PaperCnnOptions& options);
};

class ChestXrayCnn : public PaperCnn {
 public:
  explicit ChestXrayCnn(const PaperCnnOptions& options);
};

class CelebaCnn : public PaperCnn {
 public:
  explicit CelebaCnn(const PaperCnnOptions& options);
};

class Cifar10WideCnn : public PaperCnn {
 public:
  explicit Cifar10WideCnn(const PaperCnnOptions& options);
};

}  // namespace bnn::models
