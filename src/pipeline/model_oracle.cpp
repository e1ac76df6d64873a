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

torch::Tensor ModelOracle::loss(int64_t b) {
  const data_loaders::Split batch = partition_.batch(b);
  model_.train();
  torch::NoGradGuard no_grad;
  return torch::nn::functional::cross_entropy(model_.forward(batch.images), batch.labels,
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

}  // namespace bnn::pipeline
