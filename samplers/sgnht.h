// SGNHT: stochastic gradient Nose-Hoover thermostat (Ding, Fang, Babbush,
// Chen, Skeel, Neven 2014, Alg. 1). A scalar thermostat xi replaces the fixed
// friction and adapts so that the kinetic energy per coordinate stays at 1/2,
// absorbing unknown gradient noise:
//
//   v_k  = v_{k-1} - h xi_{k-1} v_{k-1} - h G(x_{k-1}, b) + sqrt(2 A h) eta
//   x_k  = x_{k-1} + h v_k
//   xi_k = xi_{k-1} + h (v_k . v_k / d - 1)
//
// with A = the friction option (the injected diffusion) and xi_0 = A. With
// exact gradients xi settles around A; gradient noise of variance s^2 per
// coordinate moves its mean to about A + h s^2 / 2. xi lives on the device
// (no host synchronisation per step). Batches reshuffled per epoch by default.
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class Sgnht : public KineticLangevin {
 public:
  Sgnht(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;
  std::string diagnostics() const override;
  // The thermostat xi (0-dim, on device).
  const torch::Tensor& thermostat() const { return xi_; }

 protected:
  torch::Tensor do_step() override;
  torch::Tensor fused_step();  // Note [Fused steps]
  void save_extra(torch::serialize::OutputArchive& archive) const override;
  void load_extra(torch::serialize::InputArchive& archive) override;

 private:
  torch::Tensor xi_;
};

}  // namespace bnn::samplers
