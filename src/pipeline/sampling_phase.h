// A member's sampling phase: the chain around x*, and which of its states
// are retained as samples of the posterior.
//
// After `sampler.burn_in` epochs the chain keeps one sample every `thin`
// steps (default: one per epoch, thin = N_m): BatchNorm recalibration, a
// test-set prediction added to the running sum (MemberState::prob_sum), the
// prediction stored as samples/step_XXXXXXXX.npy (Note [Stored sample
// probabilities]), and with evaluation.save_sample_weights the weights of
// every k-th sample (Note [Stored samples]). At the end, bayes_probs.npy =
// the mean of the retained predictions.
//
// Note [Stored sample probabilities]: each retained prediction (of the test
// set and of every OOD set) is written in evaluation.sample_probs_dtype,
// float32 by default, so that `bnn evaluate --burn-in/--thin` recomputes the
// Bayesian ensemble as the run's own float32 mean would be. float16 halves
// the disk space, but its smallest step is 6e-8: a probability below 3e-8
// reads as 0. Where every retained sample of a member puts less than that on
// an image's true class, the recomputed ensemble scores that image at the
// NLL's clamp of 100 nats instead of its true -log p (about 20 for p = 1e-9).
// On configs/demo.yaml that raised the recomputed NLL at ensemble size 1 from
// 0.2995 to 0.3052 (2%), at size 2 by 1.3%, and left accuracy, ACE and RPS
// within 5e-6. Runs of a bnn older than this option stored float16; `bnn
// evaluate` says how many of the samples it recomputes from are float16. The
// OOD scores, always computed from the stored samples, barely see the floor:
// entropy and mutual information weigh a probability p by log p, and
// p log p -> 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "samplers/sampler.h"
#include "src/config/config.h"
#include "src/pipeline/fault_injection.h"
#include "src/pipeline/phase_hooks.h"

namespace bnn::pipeline {

// One epoch of `sampler`: a step per batch of `partition`, after_step(step
// loss) after each; the losses are summed in a scalar of `loss_options`
// (the parameters'). Returns the mean training CE per example.
double sampling_epoch(samplers::Sampler& sampler, const data_loaders::Partition& partition,
                      const torch::TensorOptions& loss_options, const std::string& label,
                      const std::function<void(const torch::Tensor&)>& after_step);

// The steps whose state is a retained sample: burn_in_steps + thin,
// burn_in_steps + 2 thin, ...
class Retention {
 public:
  Retention(int64_t burn_in_steps, int64_t thin) : burn_in_steps_(burn_in_steps), thin_(thin) {}
  bool retains(int64_t steps_done) const {
    return steps_done > burn_in_steps_ && (steps_done - burn_in_steps_) % thin_ == 0;
  }
  int64_t thin() const { return thin_; }
  // How many of steps 1..total_steps are retained.
  int64_t count(int64_t total_steps) const {
    return total_steps > burn_in_steps_ ? (total_steps - burn_in_steps_) / thin_ : 0;
  }
  // The step of the j-th retained sample (j = 1, 2, ...).
  int64_t retained_step(int64_t j) const { return burn_in_steps_ + j * thin_; }

 private:
  int64_t burn_in_steps_;
  int64_t thin_;
};

class SamplingPhase {
 public:
  // make_sampler(seed) builds the configured sampler at state.anchor, where
  // the parameters must be.
  SamplingPhase(const config::Config& config, int64_t member, const data_loaders::Partition& partition,
                const data_loaders::Split& test, int64_t num_classes,
                std::function<std::unique_ptr<samplers::Sampler>()> make_sampler, PhaseHooks& hooks);

  // Sampling epochs first_epoch .. sampler.epochs - 1. From epoch 0 it
  // starts the chain at the current parameters (x*); later epochs continue
  // the restored state. Writes bayes_probs.npy at the end; throws if the
  // schedule retains no sample.
  void run(MemberState& state, const torch::Tensor& parameters, int64_t first_epoch, const FaultInjection& faults);

 private:
  const config::Config& cfg_;
  int64_t member_;
  const data_loaders::Partition& partition_;
  const data_loaders::Split& test_;
  int64_t num_classes_;
  std::function<std::unique_ptr<samplers::Sampler>()> make_sampler_;
  PhaseHooks& hooks_;
};

// Steps between retained samples: sampler.thin, or one epoch (N_m steps) for 0.
int64_t thin_steps(const config::Config& config, int64_t num_batches);
int64_t thin_steps(const config::Config& config, const data_loaders::Partition& partition);

// The samples `config`'s sampling phase retains with `num_batches` batches an
// epoch (those of `partition`): after sampler.burn_in epochs, every thin_steps().
Retention retention_of(const config::Config& config, int64_t num_batches);
Retention retention_of(const config::Config& config, const data_loaders::Partition& partition);

}  // namespace bnn::pipeline
