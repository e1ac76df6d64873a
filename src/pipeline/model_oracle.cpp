#include "src/pipeline/model_oracle.h"

namespace bnn::pipeline {

ModelOracle::ModelOracle(models::Classifier& model, models::FlatParameters& flat,
                         const data_loaders::Partition& partition)
    : model_(model), flat_(flat), partition_(partition) {}

torch::Tensor ModelOracle::evaluate(int64_t b) {
  const data_loaders::Split batch = partition_.batch(b);
  flat_.zero_grad();
  model_.train();
  torch::AutoGradMode grad_mode(/*enabled=*/true);
  // Summed, not averaged: the sampler scales by N_m to estimate the full-data
  // gradient (DESIGN.md §2: a mean-reduced loss would be off by N_b).
  const torch::Tensor loss = torch::nn::functional::cross_entropy(
      model_.forward(batch.inputs()), batch.labels,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  loss.backward();
  return loss.detach();
}

torch::Tensor ModelOracle::evaluate_per_example(int64_t b) {
  const data_loaders::Split batch = partition_.batch(b);
  model_.train();
  torch::AutoGradMode grad_mode(/*enabled=*/true);
  const torch::Tensor losses = torch::nn::functional::cross_entropy(
      model_.forward(batch.inputs()), batch.labels,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const int64_t n = losses.size(0);
  torch::Tensor grads = flat_.grads();
  if (!rows_.defined() || rows_.size(0) != n) rows_ = torch::empty({n, grads.numel()}, grads.options());
  for (int64_t i = 0; i < n; ++i) {
    flat_.zero_grad();
    losses[i].backward({}, /*retain_graph=*/i + 1 < n);
    rows_[i].copy_(grads);
  }
  torch::NoGradGuard no_grad;
  at::sum_out(grads, rows_, {0});
  return losses.detach().sum();
}

torch::Tensor ModelOracle::loss(int64_t b) {
  const data_loaders::Split batch = partition_.batch(b);
  model_.train();
  torch::NoGradGuard no_grad;
  return torch::nn::functional::cross_entropy(model_.forward(batch.inputs()), batch.labels,
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

}  // namespace bnn::pipeline
