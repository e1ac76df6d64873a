// SGLD: overdamped Langevin dynamics by Euler-Maruyama with stochastic
// gradients (Welling and Teh 2011):
//
//   x_k = x_{k-1} - h G(x_{k-1}, b) + sqrt(2 h) xi
//
// targeting exp(-f/T) (the force is divided by T, Note [Temperature]). There
// is no velocity (velocity() stays zero) and the friction is unused. Bias
// O(h); batches reshuffled per epoch by default. Bounces fold x back into the
// hypercube.
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class Sgld : public KineticLangevin {
 public:
  Sgld(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;

 protected:
  torch::Tensor do_step() override;
  torch::Tensor fused_step();  // Note [Fused steps]
};

}  // namespace bnn::samplers
