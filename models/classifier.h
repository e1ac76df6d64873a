// The model interface bnn trains and samples: an image classifier returning
// logits, plus the BatchNorm recalibration pass and batched prediction.
//
// Note [BatchNorm]: every BatchNorm layer uses momentum 1.0 and batch
// statistics (train mode) while training and sampling. Before any prediction
// the running statistics are recalibrated: one train-mode forward pass without
// grad over the first K training batches (K = 20, 4000 images) makes them the
// statistics of those images exactly; then eval mode (docs/design.md §4).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace bnn::models {

class Classifier : public torch::nn::Module {
 public:
  // images: N x C x H x W. Returns N x num_classes logits.
  virtual torch::Tensor forward(const torch::Tensor& images) = 0;
  virtual std::string pretty_string() const = 0;
  // Whether the model has BatchNorm layers (then a forward pass couples the
  // examples of a batch, and predictions need recalibrate()).
  virtual bool has_batch_norm();
  // Note [BatchNorm]: running statistics of `images`, then eval mode.
  virtual void recalibrate(const torch::Tensor& images);
};

int64_t count_parameters(torch::nn::Module& module);

// Note [BatchNorm]. No-op for a model without BatchNorm. Leaves eval mode.
void recalibrate_batch_norm(Classifier& model, const torch::Tensor& images);

// Softmax probabilities (float32) in eval mode, `chunk` images at a time.
torch::Tensor predict_probabilities(Classifier& model, const torch::Tensor& images, int64_t chunk = 1000);

// The same for `count` examples whose model input is made chunk by chunk:
// input(start, n) returns the N x C x H x W input of examples [start, start
// + n) (e.g. uint8 pixels standardized on the device), so a whole split is
// never converted at once.
using ChunkInput = std::function<torch::Tensor(int64_t start, int64_t n)>;
torch::Tensor predict_probabilities(Classifier& model, int64_t count, const ChunkInput& input, int64_t chunk = 1000);

}  // namespace bnn::models
