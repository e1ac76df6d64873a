// A member's sampling phase: the chain around x*, and which of its states
// are retained as samples of the posterior.
//
// After `sampler.burn_in` epochs the chain keeps one sample every `thin`
// steps (default: one per epoch, thin = N_m): BatchNorm recalibration, a
// test-set prediction added to the running sum (MemberState::prob_sum), the
// prediction stored as samples/step_XXXXXXXX.npy (float16), and with
// evaluation.save_sample_weights the weights of every k-th sample (Note
// [Stored samples]). At the end, bayes_probs.npy = the mean of the retained
// predictions.
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
int64_t thin_steps(const config::Config& config, const data_loaders::Partition& partition);

}  // namespace bnn::pipeline
