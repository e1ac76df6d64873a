// BAOAB splitting with stochastic gradients: SG-BAOAB, BAOAB-RR, SMS-BAOAB.
//
// Leimkuhler and Matthews (2013); with minibatches as in the SMS-UBU paper,
// Alg. 5-6. With eta = e^{-gamma h}, one step from (x, v) with the force G
// cached from the previous step:
//
//   B:  v -= (h/2) G
//   A:  x += (h/2) v
//   O:  v = eta v + sqrt(1 - eta^2) xi
//   A:  x += (h/2) v
//   G = G(x, b_next)          (the end-of-step gradient, reused next step)
//   B:  v -= (h/2) G
//
// so each step costs one gradient, evaluated with the next batch of the order:
// symmetric (SMS-BAOAB, bias O(h^2)), with replacement (SG-BAOAB, O(h)) or a
// fresh permutation per epoch (BAOAB-RR). The very first step evaluates the
// force at the starting point as well (two gradients, once). The bounce
// follows each A.
//
// Which batch each force uses. Here the k-th force evaluated (the starting
// point's first) takes the k-th batch of the order, so with SMS the forces at
// x_0 ... x_{2N_m - 1} of a cycle use p_0 ... p_{N_m-1} p_{N_m-1} ... p_0.
// Alg. 6 of the SMS-UBU paper as printed shifts this by one (omega_{N_m+1} :=
// omega_1): the forces at x_1 ... x_{2N_m} use omega_2 ... omega_{N_m} omega_1
// omega_{N_m} ... omega_2 omega_1, and the next cycle starts from the force
// already at hand. Both use every batch twice per cycle and both make a
// cycle a palindrome of B, A, O steps (here about the middle of an O step,
// there about a B), which is what gives the O(h^2) bias; they are not the
// same chain. BiasOrder (tests/src/experiments/bias_test.cpp) finds this
// one second order.
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class Baoab : public KineticLangevin {
 public:
  Baoab(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;

 protected:
  torch::Tensor do_step() override;
  torch::Tensor fused_step();  // Note [Fused steps]
  void save_extra(torch::serialize::OutputArchive& archive) const override;
  void load_extra(torch::serialize::InputArchive& archive) override;

 private:
  double eta_, noise_scale_;
  bool primed_ = false;  // the cached force in gradient_.force() is valid
};

}  // namespace bnn::samplers
