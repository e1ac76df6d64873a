// Note [Divergence check]
// A chain can blow up without a NaN: a step size far too large for the
// curvature, or a global chain with too little friction, wanders into
// regions of high loss and stays finite. Its samples are then not of the
// posterior around x*, and the ensemble built from them is worse than x*
// alone, yet nothing failed. After the sampling phase each member compares
// the chain with x*:
//   - the mean training loss per example of the sampling epochs after
//     burn-in with the loss of the last epoch of the phase that made x*
//     (SWA's last epoch, or L-BFGS's final loss);
//   - the mean test accuracy of those epochs (each epoch's last retained
//     sample) with x*'s test accuracy, from its stored probabilities
//     (<anchor>_probs.npy; the trace's last SWA row scores the last iterate,
//     not their average x*, and serves only where that file is missing).
// SWA's epoch loss is the mean over its iterates, which the average x*
// usually beats, so the reference errs high: the check only fires on a
// clear blow-up. A member is diverged when the loss rises by more than
// sampler.max_loss_increase (nats per example; 1 by default, against a
// posterior spread of a few hundredths in the paper's runs) or the accuracy
// falls by more than sampler.max_accuracy_drop (0.25). Its outputs are kept,
// status.json records "diverged" with the numbers, the log warns, and
// `bnn run` exits 3. At the end of every `bnn run` and in every `bnn
// evaluate` the check is made again from each member's trace.csv with the
// thresholds of the config in use, so raising them (they are not part of
// the experiment) clears the warning and the exit code.
// x* itself is checked first: when its loss (the same last-epoch loss)
// exceeds a uniform guess's, log K for K classes, by more than
// sampler.max_loss_increase, the phase that made x* diverged (an Adam
// learning rate far too large, say: the chain then sits in a region as bad
// as x* and the comparison above passes), and the member is diverged
// whatever its chain did. The log says so as soon as x* is made, so that a
// long run's user need not wait for the sampling phase to learn it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "src/config/config.h"

namespace bnn::pipeline {

struct Divergence {
  std::string reason;  // one line with the numbers
  double reference_loss = 0, chain_loss = 0;
  double reference_accuracy = 0, chain_accuracy = 0;
};

// The check above, over the rows of trace.csv (without its header) of a
// member of `config` on data of `num_classes` classes; `anchor_phase` is
// "swa" or "map"; `anchor_accuracy` is x*'s test accuracy (unset: the
// anchor row's). nullopt when x* and the chain stayed within the
// thresholds, or when the trace holds no x* phase.
std::optional<Divergence> check_divergence(const std::string& trace_rows, const std::string& anchor_phase,
                                           const config::Config& config, int64_t num_classes,
                                           std::optional<double> anchor_accuracy = std::nullopt);

// x*'s test accuracy from `member`/<anchor>_probs.npy and the run's
// labels.npy; nullopt where either is missing or unreadable.
std::optional<double> anchor_accuracy(const std::filesystem::path& member, const config::Config& config);
// The accuracy of `probs` (N x K) against `labels` (N); nullopt where their
// shapes do not fit (the caller names a damaged file when it checks them).
std::optional<double> accuracy_of(const torch::Tensor& probs, const torch::Tensor& labels);

// The check over `member`/trace.csv (Note [Run directory]).
std::optional<Divergence> check_member_divergence(const std::filesystem::path& member, const config::Config& config,
                                                  int64_t num_classes);

}  // namespace bnn::pipeline
