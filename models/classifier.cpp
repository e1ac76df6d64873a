#include "models/classifier.h"

namespace bnn::models {

bool Classifier::has_batch_norm() { return !buffers(/*recurse=*/true).empty(); }

int64_t count_parameters(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) n += p.numel();
  return n;
}

void Classifier::recalibrate(const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  if (has_batch_norm()) {
    train();
    forward(images);
  }
  eval();
}

void recalibrate_batch_norm(Classifier& model, const torch::Tensor& images) { model.recalibrate(images); }

torch::Tensor predict_probabilities(Classifier& model, const torch::Tensor& images, int64_t chunk) {
  return predict_probabilities(
      model, images.size(0), [&images](int64_t start, int64_t n) { return images.narrow(0, start, n); }, chunk);
}

torch::Tensor predict_probabilities(Classifier& model, int64_t count, const ChunkInput& input, int64_t chunk) {
  TORCH_CHECK(chunk >= 1, "prediction chunk must be positive, got ", chunk);
  torch::NoGradGuard no_grad;
  model.eval();
  std::vector<torch::Tensor> parts;
  for (int64_t start = 0; start < count; start += chunk) {
    const int64_t n = std::min(chunk, count - start);
    parts.push_back(torch::softmax(model.forward(input(start, n)), /*dim=*/1).to(torch::kFloat));
  }
  return torch::cat(parts, 0);
}

}  // namespace bnn::models
