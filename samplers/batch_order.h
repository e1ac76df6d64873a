// The order in which a sampler visits the fixed minibatches.
//
// - kSymmetric (SMS, SMS-UBU paper Alg. 2): cycles of 2 N_m steps; a fresh
//   random permutation p per cycle; step k of the cycle uses p[k] for k < N_m
//   and p[2 N_m - 1 - k] otherwise, so a forward sweep is followed by the same
//   sweep backwards and the turning batch is used twice in a row.
// - kReshuffle (random reshuffling, "-RR"): a fresh permutation every N_m
//   steps, forward sweeps only.
// - kWithReplacement (plain "SG-"): a uniform batch each step.
// Draws come from a CPU generator owned by the order (Note [RNG streams]).
// Cycles are numbered 0, 1, ...: 2 N_m batches each for kSymmetric, N_m for
// the others; a hook hears of each before its first batch is given.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace bnn::samplers {

enum class BatchOrderKind { kSymmetric, kReshuffle, kWithReplacement };

// "sms", "rr", "iid" <-> kind. Unknown names throw, listing the valid names.
BatchOrderKind parse_batch_order(const std::string& name);
std::string to_string(BatchOrderKind kind);

class BatchOrder {
 public:
  BatchOrder(BatchOrderKind kind, int64_t num_batches, uint64_t seed);

  // The batch index for the next step.
  int64_t next();

  // hook(c) is called as cycle c begins, before its first batch is returned
  // (the sampler tells its oracle: GradientOracle::begin_cycle).
  void on_new_cycle(std::function<void(int64_t)> hook) { hook_ = std::move(hook); }
  // The cycle of the last batch returned; -1 before the first.
  int64_t cycle() const { return cycle_; }

  BatchOrderKind kind() const { return kind_; }
  // Generator state, permutation and position (Note [Sampler checkpoints]).
  void save(torch::serialize::OutputArchive& archive, const std::string& prefix) const;
  void load(torch::serialize::InputArchive& archive, const std::string& prefix);
  int64_t num_batches() const { return num_batches_; }

 private:
  void refill();

  BatchOrderKind kind_;
  int64_t num_batches_;
  at::Generator gen_;
  std::vector<int64_t> perm_;
  int64_t position_ = 0;  // position within the current cycle
  int64_t cycle_length_;
  int64_t cycle_ = -1;
  std::function<void(int64_t)> hook_;
};

}  // namespace bnn::samplers
