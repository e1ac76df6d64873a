// Euler-Maruyama for kinetic Langevin dynamics: SGHMC (SG-EM), EM-RR, SMS-EM,
// and cyclical SGHMC.
//
// Chen, Fox, Guestrin (2014); in the form of the SMS-UBU paper, Alg. 4:
//
//   x_k = x_{k-1} + h v_{k-1}
//   v_k = v_{k-1} - h G(x_{k-1}, b) - h gamma v_{k-1} + sqrt(2 gamma h) xi
//
// Localized (finite rho, bounces at rho_max) or global (rho = rho_max = inf).
// The force is evaluated before the position moves; the bounce follows the
// position update. Bias O(h) whatever the batch order ("sg_em": with
// replacement; "sghmc" and "em_rr": reshuffled per epoch; "sms_em": symmetric).
//
// Cyclical SGHMC (Zhang, Li, Zhang, Chen, Wilson 2020, "cSG-MCMC"): with
// cycle length L > 0 steps, step k runs with
//   h_k = (h / 2) (cos(pi (k mod L) / L) + 1),
// from h at the start of each cycle down towards 0 at its end; the noise
// scale follows h_k. (The paper's optional noise-free exploration stage is
// not used: every step samples.)
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class EulerMaruyama : public KineticLangevin {
 public:
  EulerMaruyama(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;
  double step_size() const override { return last_step_; }

  // h_k of step k (0-based) for base step h and cycle length L (0 = constant).
  static double cyclical_step(double h, int64_t cycle_length, int64_t k);

 protected:
  torch::Tensor do_step() override;
  torch::Tensor fused_step();  // Note [Fused steps]

 private:
  double last_step_;
};

}  // namespace bnn::samplers
