// NOGIN, the noisy gradient integrator: ABOBA with the covariance of the
// gradient noise folded into the friction of the O part.
//
// Matthews and Weare, "Langevin Markov chain Monte Carlo with stochastic
// gradients" (arXiv 2016), Algorithm 1 and eq. (12)-(13),
// with unit mass and unit temperature. With lambda^2 = tanh(gamma h/2) =
// (1 - e^{-gamma h}) / (1 + e^{-gamma h}) and S = lambda^2 I + (h^2/4) Sigma,
// one step from (x, v):
//
//   A:  x += (h/2) v
//   G = G(x, b), Sigma = the estimated covariance of G, R ~ N(0, I)
//   B:  v += -(h/2) G + lambda R
//   O:  v = Gamma v,  Gamma = (I - S)(I + S)^{-1} = 2 (I + S)^{-1} - I
//   B:  v += -(h/2) G + lambda R          (the same G and the same R)
//   A:  x += (h/2) v
//
// The two half kicks together inject (I + Gamma)(lambda R + gradient noise),
// of covariance (I + Gamma) S (I + Gamma) = I - Gamma^2: the
// fluctuation-dissipation balance of v ~ N(0, I) holds with the gradient noise
// counted. With Sigma = 0, Gamma = e^{-gamma h}. Bias O(h^2) in general
// (their Theorem 4.1); on a Gaussian target with Gaussian gradient noise of
// covariance exactly Sigma the x-marginal is exact and Var v = (I -
// (h^2/4) Omega^{-1})^{-1} at the end of a step (their Lemma 4.2: 1/(1 - h^2/4)
// on N(0, 1)). One gradient per step (evaluated mid-step, so not reused).
//
// Sigma from the batch's per-example gradients (GradientOracle::
// evaluate_per_example): with rows r_i = grad CE_i(x) (or grad CE_i(x) -
// grad CE_i(x*) for the control variate), i = 1..N_b, their centred matrix D
// (N_b x d) and sample covariance C = D^T D / (N_b - 1), the covariance of
// G = N_m sum_i r_i / T for a batch of N_b out of N = N_m N_b examples drawn
// without replacement is their eq. (4) over T^2:
//
//   Sigma = N_m (N_m - 1) N_b C / T^2,   so   (h^2/4) Sigma = c D^T D,
//   c = h^2 N_m (N_m - 1) N_b / (4 T^2 (N_b - 1))
//
// (zero with one batch: the full gradient has no noise). Two estimates
// (LangevinOptions::noise_covariance):
//   diagonal: Sigma's diagonal only, Gamma_jj = 2 / (1 + s_j) - 1 with
//     s_j = lambda^2 + c sum_i D_ij^2; O(N_b d) per step.
//   low_rank: the whole rank <= N_b - 1 matrix, with a = 1 + lambda^2 and
//     Woodbury, (a I + c D^T D)^{-1} v = (v - c D^T (a I + c D D^T)^{-1} D v) / a:
//     an N_b x N_b Gram matrix and its Cholesky factor, never a d x d matrix;
//     O(N_b^2 d) per step. With N_b < d the sample covariance only spans N_b - 1
//     directions; the diagonal estimate is the robust default.
// Either way the oracle computes N_b per-example gradients into an N_b x d
// buffer (the network oracle with one backward pass per example,
// src/pipeline/model_oracle.h: about N_b times the cost of one gradient), and
// the control variate needs a second per-example pass at x* every step.
//
// Temperature (Note [Temperature]): G is divided by T and so Sigma by T^2;
// the noise stays at unit temperature. The paper's Algorithm 2 (mass M,
// inverse temperature beta) is not used: as printed it damps with
// ((1 - lambda^2) I - (h^2/(4 beta)) M Sigma)((1 + lambda^2) I + (h^2/(4 beta))
// M Sigma)^{-1}, but keeping p ~ N(0, M/beta) against kick noise of covariance
// lambda^2 M/beta + (h^2/4) Sigma needs
// ((1 - lambda^2) I - (beta h^2/4) Sigma M^{-1})((1 + lambda^2) I +
// (beta h^2/4) Sigma M^{-1})^{-1} (beta multiplies, and M enters inverted), so
// the printed scheme samples the wrong distribution unless beta = 1 and M = I.
// Unit mass and unit temperature, with T folded into G, are all we need.
//
// The bounce follows each A.
#pragma once

#include "samplers/kinetic_langevin.h"

namespace bnn::samplers {

class Nogin : public KineticLangevin {
 public:
  Nogin(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed);
  std::string pretty_string() const override;

  // v <- Gamma v with S = lambda2 I + c diag(D^T D) (diagonal) or
  // S = lambda2 I + c D^T D (low rank), for D the already centred N_b x d rows;
  // `scratch` is a d-vector. The diagonal form overwrites `centred` (it squares
  // it in place). Exposed for tests.
  static void damp_diagonal(torch::Tensor& v, torch::Tensor& centred, double lambda2, double c,
                            torch::Tensor& scratch);
  static void damp_low_rank(torch::Tensor& v, const torch::Tensor& centred, double lambda2, double c,
                            torch::Tensor& scratch);

 protected:
  torch::Tensor do_step() override;

 private:
  double lambda_, lambda2_;
  double noise_scale_;    // h^2 N_m (N_m - 1) / (4 T^2); times N_b / (N_b - 1) is c
  torch::Tensor kick_;    // -(h/2) G + lambda R
  torch::Tensor mean_;    // row mean, d
  torch::Tensor scratch_; // d
};

}  // namespace bnn::samplers
