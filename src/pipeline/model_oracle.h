// A GradientOracle backed by a network and a fixed minibatch partition: the
// summed cross-entropy gradient of batch b at the network's current weights,
// written straight into the flat gradient buffer (models/flat_parameters.h).
// With a Shard it evaluates only its part of every batch (one rank of a
// data-parallel chain, src/distributed/data_parallel_oracle.h).
#pragma once

#include <optional>

#include "data_loaders/dataset.h"
#include "models/classifier.h"
#include "models/flat_parameters.h"
#include "samplers/gradient_oracle.h"

namespace bnn::pipeline {

// Part `index` of `count` of every batch: rows [index N_b / count,
// (index + 1) N_b / count) of a batch of N_b, contiguous and as equal as
// integer division makes them. The default is the whole batch.
struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};

class ModelOracle : public samplers::GradientOracle {
 public:
  // All three must outlive the oracle. The model is put in train mode (batch
  // statistics, Note [BatchNorm]) for every evaluation; with a shard, those
  // are the shard's statistics. Throws unless 0 <= index < count <= N_b.
  ModelOracle(models::Classifier& model, models::FlatParameters& flat, const data_loaders::Partition& partition,
              Shard shard = {});

  torch::Tensor parameters() override { return flat_.values(); }
  torch::Tensor gradient() override { return flat_.grads(); }
  torch::Tensor prior_mask() override { return flat_.prior_mask(); }
  int64_t num_batches() const override { return partition_.num_batches(); }
  torch::Tensor evaluate(int64_t b) override;
  // Forward only, in train mode like evaluate() (the same batch statistics).
  torch::Tensor loss(int64_t b) override;

  // Per-example gradients (for nogin), copied into a preallocated N_b x d
  // buffer; the rows sum to evaluate()'s gradient.
  // - With BatchNorm (train mode couples the examples through the batch
  //   statistics): one forward pass of the whole batch, then one backward
  //   pass per example through the whole batch's graph (retained). Row i is
  //   the gradient of example i's cross-entropy with the batch's statistics.
  //   About N_b backward passes of a batch per evaluation.
  // - Without BatchNorm an example's loss depends on that example alone, so a
  //   forward and backward pass of it alone gives the same row (to float
  //   rounding) at about 1/N_b of the cost: about one batch's gradient, plus
  //   the overhead of N_b small passes.
  // Either way N_b * d floats of memory.
  bool has_per_example_gradients() const override { return true; }
  torch::Tensor evaluate_per_example(int64_t b) override;
  torch::Tensor per_example_gradients() override { return rows_; }

  // Note [Redrawn batches] (data_loaders/dataset.h): from now on, cycle c > 0
  // of the sampler's batch order cuts the batches in the order
  // partition.redrawn_order(derive_seed(seed, c)); cycle 0 keeps the
  // partition's own. Without this call begin_cycle() changes nothing.
  void redraw_batches_each_cycle(uint64_t seed) { redraw_seed_ = seed; }
  bool begin_cycle(int64_t cycle) override;
  // Batch b as the current cycle cuts it, whole (every shard's rows).
  data_loaders::Split batch(int64_t b) const { return partition_.batch(b, order_); }

 private:
  // This oracle's rows of batch b.
  data_loaders::Split rows_of(int64_t b) const;

  models::Classifier& model_;
  models::FlatParameters& flat_;
  const data_loaders::Partition& partition_;
  Shard shard_;
  std::optional<uint64_t> redraw_seed_;
  int64_t cycle_ = 0;
  torch::Tensor order_;  // the current cycle's order of the examples; undefined: the partition's own
  torch::Tensor rows_;  // N_b x d, allocated on the first evaluate_per_example()
};

}  // namespace bnn::pipeline
