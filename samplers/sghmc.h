// SGHMC: kinetic Langevin discretised by Euler-Maruyama.
//
// Chen, Fox, Guestrin (2014); in the form of the SMS-UBU paper, Alg. 4:
//
//   x_k = x_{k-1} + h v_{k-1}
//   v_k = v_{k-1} - h G(x_{k-1}, b) - h gamma v_{k-1} + sqrt(2 gamma h) xi
//
// Localized (finite rho, bounces at rho_max) or global (rho = rho_max = inf).
// The force is evaluated before the position moves; the bounce follows the
// position update. Batch order reshuffled per epoch by default.
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class Sghmc : public KineticLangevin {
 public:
  Sghmc(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;

 protected:
  torch::Tensor do_step() override;
};

}  // namespace bnn::samplers
