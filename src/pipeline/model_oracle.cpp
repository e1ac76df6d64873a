#include "src/pipeline/model_oracle.h"

#include "samplers/random.h"

namespace bnn::pipeline {

ModelOracle::ModelOracle(models::Classifier& model, models::FlatParameters& flat,
                         const data_loaders::Partition& partition, Shard shard)
    : model_(model), flat_(flat), partition_(partition), shard_(shard) {
  TORCH_CHECK(shard_.count >= 1 && shard_.index >= 0 && shard_.index < shard_.count,
              "shard ", shard_.index, " of ", shard_.count, " does not exist");
  TORCH_CHECK(shard_.count <= partition_.batch_size(), "a batch of ", partition_.batch_size(),
              " examples cannot be split into ", shard_.count, " shards; use a batch size of at least ",
              shard_.count);
}

bool ModelOracle::begin_cycle(int64_t cycle) {
  if (!redraw_seed_ || cycle == cycle_) return false;
  cycle_ = cycle;
  order_ = cycle == 0 ? torch::Tensor() : partition_.redrawn_order(samplers::derive_seed(*redraw_seed_, cycle));
  return model_.has_batch_norm();
}

data_loaders::Split ModelOracle::rows_of(int64_t b) const {
  const data_loaders::Split batch = this->batch(b);
  if (shard_.count == 1) return batch;
  const int64_t n = batch.size();
  const int64_t start = shard_.index * n / shard_.count;
  return batch.slice(start, (shard_.index + 1) * n / shard_.count - start);
}

torch::Tensor ModelOracle::evaluate(int64_t b) {
  const data_loaders::Split batch = rows_of(b);
  flat_.zero_grad();
  model_.train();
  torch::AutoGradMode grad_mode(/*enabled=*/true);
  // Summed, not averaged: the sampler scales by N_m to estimate the full-data
  // gradient (docs/design.md §2: a mean-reduced loss would be off by N_b).
  const torch::Tensor loss = torch::nn::functional::cross_entropy(
      model_.forward(batch.inputs()), batch.labels,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  loss.backward();
  return loss.detach();
}

torch::Tensor ModelOracle::evaluate_per_example(int64_t b) {
  const data_loaders::Split batch = rows_of(b);
  model_.train();
  torch::AutoGradMode grad_mode(/*enabled=*/true);
  const torch::Tensor inputs = batch.inputs();
  const int64_t n = batch.size();
  torch::Tensor grads = flat_.grads();
  if (!rows_.defined() || rows_.size(0) != n) rows_ = torch::empty({n, grads.numel()}, grads.options());
  torch::Tensor loss;
  if (model_.has_batch_norm()) {
    const torch::Tensor losses = torch::nn::functional::cross_entropy(
        model_.forward(inputs), batch.labels,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    for (int64_t i = 0; i < n; ++i) {
      flat_.zero_grad();
      losses[i].backward({}, /*retain_graph=*/i + 1 < n);
      rows_[i].copy_(grads);
    }
    loss = losses.detach().sum();
  } else {
    std::vector<torch::Tensor> losses;
    losses.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      flat_.zero_grad();
      const torch::Tensor one = torch::nn::functional::cross_entropy(
          model_.forward(inputs.narrow(0, i, 1)), batch.labels.narrow(0, i, 1),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
      one.backward();
      rows_[i].copy_(grads);
      losses.push_back(one.detach());
    }
    loss = torch::stack(losses).sum();
  }
  torch::NoGradGuard no_grad;
  at::sum_out(grads, rows_, {0});
  return loss;
}

torch::Tensor ModelOracle::loss(int64_t b) {
  const data_loaders::Split batch = rows_of(b);
  model_.train();
  torch::NoGradGuard no_grad;
  return torch::nn::functional::cross_entropy(model_.forward(batch.inputs()), batch.labels,
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
}

}  // namespace bnn::pipeline
