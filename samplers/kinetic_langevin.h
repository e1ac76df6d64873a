// State shared by the Langevin samplers: the oracle, the localized stochastic
// gradient, the velocity (started at N(0, I), its equilibrium), the noise
// generator on the parameters' device, the batch order, the bounce, and the
// checkpoint of all of these (Note [Sampler checkpoints]).
#pragma once

#include <functional>
#include <memory>

#include "samplers/batch_order.h"
#include "samplers/fused_step.h"
#include "samplers/gradient_oracle.h"
#include "samplers/langevin_options.h"
#include "samplers/random.h"
#include "samplers/sampler.h"
#include "samplers/stochastic_gradient.h"

namespace bnn::samplers {

class KineticLangevin : public Sampler {
 public:
  double step_size() const override { return options_.step_size(); }
  const torch::Tensor& velocity() const override { return v_; }
  const LangevinOptions& options() const { return options_; }
  const StochasticGradient& gradient_estimator() const { return gradient_; }
  // Every LangevinOptions field, and the batch order in effect.
  std::vector<std::pair<std::string, double>> option_values() const override;

  // Note [Coupled noise]: when a hook is set, every draw of the sampler's
  // N(0, I) noise calls hook(buffer) to fill the preallocated buffer instead
  // of the sampler's own generator (the buffer's shape is the sampler's: UBU
  // fills {2, d} twice per step, BAOAB and Euler-Maruyama {d} once). Used to
  // drive two chains with shared Brownian increments (bnn coupled-bias,
  // src/experiments/coupled_bias.h). The hook is not part of a checkpoint.
  using NoiseHook = std::function<void(torch::Tensor& buffer)>;
  void set_noise_hook(NoiseHook hook) { noise_hook_ = std::move(hook); }

  // Note [Fused steps] (samplers/fused_kernels.h) and Note [Buffered passes]
  // (samplers/buffered_passes.h): where the sampler has a fused step and the
  // chain is float32 on the CPU, or on a GPU with bnn's CUDA kernels built,
  // each step runs it instead of the tensor operations, with the same results
  // (on a GPU to float rounding: ATen does not promise how its CUDA kernels
  // round). On by default; BNN_FUSED_STEPS=0 in the environment turns it off
  // for every sampler, BNN_FUSED_STEPS=buffered runs the GPU's passes on the
  // CPU too. It may be switched at any step. A noise hook turns it off.
  void set_fused_steps(bool on) { fused_on_ = on; }
  // Whether the next step runs the fused path.
  bool fused_steps() const { return fused_ != nullptr && fused_on_ && !noise_hook_; }
  // The fused path's name ("cpu passes", "buffered passes on cuda:0"), or
  // "tensor operations" where none can run.
  std::string fused_path() const { return fused_ != nullptr ? fused_->name() : "tensor operations"; }

 protected:
  // `anchor` is x* (used for localization, bounces and the control variate);
  // the oracle's parameters are the starting point. `seed` seeds the noise
  // and order streams (Note [RNG streams]).
  KineticLangevin(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);

  // Allocates noise_ with `shape`; call once from the derived constructor.
  void allocate_noise(torch::IntArrayRef shape);
  // Fills noise_ with fresh N(0, 1) draws.
  void draw_noise();
  // Reflects x into the hypercube (no-op when unbounded).
  void bounce();
  // Samplers with a fused step call this after allocate_noise(); it sets up
  // fused_ where the fused path can run.
  void enable_fused_steps();
  // x, v, the anchor and the box, for a fused pass.
  detail::PassSpan fused_span();
  // Bounces after a fused pass that reported a coordinate outside the box.
  void bounce_if(bool left_box) {
    if (left_box) bounce();
  }
  // Common part of pretty_string(); `extra` is appended inside the brackets.
  std::string describe(const std::string& name, const std::string& extra = {}) const;

  // x, v, noise and order; then save_extra / load_extra for derived state.
  void save_state(torch::serialize::OutputArchive& archive) const final;
  void load_state(torch::serialize::InputArchive& archive) final;
  virtual void save_extra(torch::serialize::OutputArchive&) const {}
  virtual void load_extra(torch::serialize::InputArchive&) {}

  GradientOracle& oracle_;
  LangevinOptions options_;
  StochasticGradient gradient_;
  torch::Tensor x_;       // the oracle's parameters (a view, updated in place)
  torch::Tensor v_;
  torch::Tensor noise_;   // preallocated, refilled by draw_noise()
  std::unique_ptr<FusedPasses> fused_;  // set by enable_fused_steps() where a fused path can run
  BatchOrder order_;
  uint64_t seed_;         // the sampler seed, for derived streams

 private:
  std::unique_ptr<ChunkedNormal> noise_source_;
  uint64_t noise_seed_;
  torch::Tensor bounce_scratch_;
  NoiseHook noise_hook_;
  FusedChoice fused_choice_ = fused_choice_from_environment();
  bool fused_on_ = fused_choice_ != FusedChoice::kOff;
};

}  // namespace bnn::samplers
