// One chain, data-parallel over the ranks of a ProcessGroup (docs/distributed.md).
//
// Every rank holds the whole chain state (parameters, optimiser or sampler
// state, generators) and wraps an oracle that evaluates only its shard of each
// minibatch: with batch size B and W ranks, rank r takes rows
// [r B / W, (r+1) B / W) of batch b (pipeline::ModelOracle's Shard). This
// oracle all-reduces what the shard oracle returns, so on every rank
//
//   gradient() = sum_r sum_{i in shard r of b} grad CE_i(x) = g_b(x)
//   evaluate(b) = loss(b) = sum_r sum_{i in shard r of b} CE_i(x)
//
// the full-minibatch sums the samplers and optimisers expect (one collective
// per evaluation: gradient and loss packed in one buffer). Since every rank
// draws the same noise and batch order from the same seeds and the all-reduce
// returns the same bits everywhere (process_group.h), the ranks stay
// identical without broadcasting parameters. The parameters equal a
// single-process chain's up to the order of the float sums.
//
// Per-example gradients (NOGIN) are refused: the rows would have to be
// gathered from every rank, which this oracle does not do.
#pragma once

#include "samplers/gradient_oracle.h"
#include "src/distributed/process_group.h"

namespace bnn::distributed {

class DataParallelOracle : public samplers::GradientOracle {
 public:
  // Both must outlive the oracle; `shard` evaluates this rank's shard.
  DataParallelOracle(samplers::GradientOracle& shard, ProcessGroup& group);

  torch::Tensor parameters() override { return shard_.parameters(); }
  torch::Tensor gradient() override { return shard_.gradient(); }
  torch::Tensor prior_mask() override { return shard_.prior_mask(); }
  int64_t num_batches() const override { return shard_.num_batches(); }
  torch::Tensor evaluate(int64_t b) override;
  torch::Tensor loss(int64_t b) override;
  torch::Tensor evaluate_per_example(int64_t b) override;
  bool begin_cycle(int64_t cycle) override { return shard_.begin_cycle(cycle); }

 private:
  samplers::GradientOracle& shard_;
  ProcessGroup& group_;
  torch::Tensor packed_;  // [gradient..., loss], allocated on first use
};

}  // namespace bnn::distributed
