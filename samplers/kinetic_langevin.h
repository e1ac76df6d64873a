// State shared by the kinetic Langevin samplers: the oracle, the localized
// stochastic gradient, the velocity (started at N(0, I), its equilibrium), the
// noise generator on the parameters' device, the batch order, and the bounce.
#pragma once

#include <memory>

#include "samplers/batch_order.h"
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
  // Common part of pretty_string().
  std::string describe(const std::string& name) const;

  GradientOracle& oracle_;
  LangevinOptions options_;
  StochasticGradient gradient_;
  torch::Tensor x_;       // the oracle's parameters (a view, updated in place)
  torch::Tensor v_;
  torch::Tensor noise_;   // preallocated, refilled by draw_noise()
  BatchOrder order_;

 private:
  std::unique_ptr<ChunkedNormal> noise_source_;
  uint64_t noise_seed_;
  torch::Tensor bounce_scratch_;
};

}  // namespace bnn::samplers
