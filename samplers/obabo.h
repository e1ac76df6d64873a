// OBABO (gradient-guided Monte Carlo) with an optional Metropolis-Hastings
// correction over blocks of steps.
//
// Horowitz (1991); Bussi and Parrinello (2007); Garriga-Alonso and Fortuin,
// "Exact Langevin dynamics with stochastic gradients" (AABI 2021).
// With a = e^{-gamma h/2} and the force G cached from the previous step:
//
//   O:  v = a v + sqrt(1 - a^2) xi          (v_{1/4})
//   B:  v -= (h/2) G
//   A:  x += h v
//   G = G(x, b_next)                         (reused by the next step)
//   B:  v -= (h/2) G                         (v_{3/4})
//   O:  v = a v + sqrt(1 - a^2) xi'
//
// Metropolis-Hastings (mh_block = L > 0): a block of L steps from (x0, v0) is
// accepted with probability min(1, exp(-(U(x_L) - U(x0)) - sum_k (K(v_{3/4,k})
// - K(v_{1/4,k})))), the product of the one-step GGMC ratios (their eq. 9; the
// multi-step expression printed in the paper is not used). U is the exact
// full-data potential f/T (StochasticGradient::potential(): one forward pass
// over every batch, at block ends only; the U terms of the product telescope)
// and K(v) = |v|^2/2. On rejection the chain returns to x0 with velocity -v0
// and the force cached at x0. The accept/reject decision is made on the device
// (no host synchronisation); diagnostics() reports the acceptance rate.
// Only the states at block ends are the chain's: inside a block the position
// is a proposal the test may still reject, so `bnn run` keeps samples at
// block ends only (it refuses a sampler.thin, or batches per epoch, that L does
// not divide).
// For the same reason each step's loss, with MH, is not the proposal's
// minibatch loss but the chain's: the full-data loss of the state at the last
// block end (x* before the first) over N_m, so that an epoch's mean training
// loss (trace.csv, the divergence check) is that of states the chain held. The
// test computes it anyway; a block rejected returns to x0's.
// Without MH the scheme is the unadjusted OBABO: bias O(h^2) with exact
// gradients (Var x = 1/(1 - h^2/4) on N(0, 1)).
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class Obabo : public KineticLangevin {
 public:
  Obabo(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;
  std::string diagnostics() const override;
  // Where the test accepted under 5% of the blocks (kLowAcceptance), the
  // chain has hardly moved: its samples are nearly copies of its start.
  std::string warning() const override;
  static constexpr double kLowAcceptance = 0.05;
  // Accepted / completed Metropolis-Hastings blocks (0 / 0 without MH).
  int64_t accepted_blocks() const;
  int64_t completed_blocks() const;

 protected:
  torch::Tensor do_step() override;
  void save_extra(torch::serialize::OutputArchive& archive) const override;
  void load_extra(torch::serialize::InputArchive& archive) override;

 private:
  void half_o(const torch::Tensor& xi);
  void begin_block();
  void end_block();
  // Sets d0_ from the state at the last block end, for a checkpoint of an
  // older bnn that did not store it.
  void recover_state_loss();

  double decay_, noise_scale_;
  bool primed_ = false;
  // Metropolis-Hastings state (mh_block > 0).
  at::Generator uniform_gen_;
  torch::Tensor x0_, v0_, f0_;     // state at the block start
  torch::Tensor u0_;               // U(x0), 0-dim double
  torch::Tensor d0_;               // the data term of U(x0) times T: summed loss over every batch, 0-dim double
  bool d0_known_ = true;           // false after loading a checkpoint without it
  torch::Tensor kinetic_change_;   // sum of K(v_{3/4}) - K(v_{1/4}) in the block, 0-dim double
  torch::Tensor accepted_, blocks_;  // 0-dim int64 counters
  bool have_u0_ = false;
};

}  // namespace bnn::samplers
