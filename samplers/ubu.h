// UBU splitting of kinetic Langevin dynamics with stochastic gradients:
// SMS-UBU, SG-UBU and SG-UBU with random reshuffling.
//
// Paulin, Whalley, Chada, Leimkuhler, "Symmetric minibatch splitting and UBU
// kinetic Langevin for Bayesian neural networks" (the SMS-UBU paper),
// Alg. 1-2. One step of size h with minibatch b:
//
//   U(h/2):  x += ((1 - e^{-gamma h/2})/gamma) v + Zx,  v = e^{-gamma h/2} v + Zv
//   B(h):    v -= h G(x, b)
//   U(h/2)
//
// with (Zx, Zv) the exact Gaussian increments of samplers/ubu_constants.h, the
// elastic bounce of samplers/bounce.h after every position update, and b from
// the batch order: symmetric (SMS-UBU, a forward sweep then the same sweep
// backwards; bias O(h^2)), with replacement (SG-UBU, bias O(h)) or a fresh
// permutation per epoch (SG-UBU-RR, "ubu_rr"). One gradient per step.
// h is the step actually run (Note [Step-size convention]).
#pragma once

#include "samplers/kinetic_langevin.h"
#include "samplers/ubu_constants.h"

namespace bnn::samplers {

class Ubu : public KineticLangevin {
 public:
  Ubu(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;

 protected:
  torch::Tensor do_step() override;

 private:
  void half_ou();
  torch::Tensor fused_step();  // Note [Fused steps]
  UbuConstants half_;
};

}  // namespace bnn::samplers
