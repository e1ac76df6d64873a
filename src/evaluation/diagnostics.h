// Convergence diagnostics of scalar traces across parallel chains (docs/design.md
// section 5): the Gelman-Rubin potential scale reduction R-hat, classic and
// split, and the multi-chain effective sample size. The paper's Fig. 3 runs
// four SMS-UBU chains from perturbations of one SWA point and reports R-hat of
// the average training loss after burn-in; these functions score such traces.
//
// Note [Diagnostics conventions]: every function takes `chains`, an M x N
// tensor (M chains of N draws each, any floating dtype, any device), copied to
// the CPU in double precision and reduced with plain loops in a fixed order, so
// results are deterministic. Entries must be finite. All functions are pure and
// thread-safe.
//
// Notation: chain m has draws theta_{m,1..N}, mean thetabar_m and variance
// s_m^2 = 1/(N-1) sum_i (theta_{m,i} - thetabar_m)^2; thetabar is the mean of
// the chain means.
//   W    = (1/M) sum_m s_m^2                                   within-chain
//   B    = N/(M-1) sum_m (thetabar_m - thetabar)^2             between-chain
//   var+ = (N-1)/N W + B/N     pooled estimate of the marginal variance
// (Gelman and Rubin 1992; Gelman et al., Bayesian Data Analysis, 3rd ed., 11.4).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace bnn::evaluation {

// Classic R-hat = sqrt(var+ / W) over the chains as given. Near 1 when all
// chains sample one distribution; above 1 when their means disagree (the usual
// alarm level is 1.1, or 1.01 for final results). Needs M >= 2, N >= 2 and
// W > 0 (constant chains have no defined R-hat: TORCH_CHECK).
double rhat(const torch::Tensor& chains);

// Split R-hat (BDA3 11.4; Vehtari et al. 2021, "Rank-normalization, folding,
// and localization: an improved R-hat"): each chain is cut into its first and
// second halves of floor(N/2) draws (the middle draw of an odd N is dropped)
// and classic R-hat is computed over the 2M half-chains. Unlike the classic
// form it also detects a single chain that drifts (has not reached its
// stationary distribution). Needs M >= 1 and N >= 4.
double split_rhat(const torch::Tensor& chains);

// Multi-chain effective sample size of the mean (Vehtari et al. 2021, eq. 10;
// Geyer 1992 initial monotone sequence), computed on the chains as given
// (split them first for the split form):
//   gamma_{m,t} = 1/N sum_{i=1..N-t} (theta_{m,i} - thetabar_m)(theta_{m,i+t} - thetabar_m)
//   rho_t = 1 - (W - (1/M) sum_m gamma_{m,t}) / var+              (rho_0 = 1)
//   Gamma_k = rho_{2k} + rho_{2k+1}, summed for k = 0, 1, ... up to (excluding)
//   the first k with Gamma_k < 0 or 2k+1 >= N, each Gamma_k replaced by
//   min(Gamma_k, Gamma_{k-1}) so the sequence is monotone;
//   tau = -1 + 2 sum_k Gamma_k,  ESS = M N / max(tau, 1 / log10(M N)).
// The lower bound on tau (as in Stan) caps ESS at M N log10(M N) for
// antithetic chains. Needs M >= 1, N >= 4 and W > 0 (TORCH_CHECK).
// For a stationary AR(1) chain x_t = phi x_{t-1} + eps_t, rho_t = phi^t and
// ESS -> M N (1 - phi) / (1 + phi).
double effective_sample_size(const torch::Tensor& chains);

// R-hat after burn-in, as a function of how long the chains have run.
struct RhatAtEpoch {
  int64_t epoch = 0;        // 1-based: draws burn_in+1 .. epoch are used
  int64_t draws = 0;        // epoch - burn_in draws per chain
  double rhat = 0;          // classic; NaN when undefined (fewer than 2 draws or chains, or constant chains)
  double split_rhat = 0;    // NaN when undefined (fewer than 4 draws, or constant half-chains)
};

// For `chains` (M x E: chain m's scalar at epochs 1..E, e.g. its mean
// training loss per epoch) and a burn-in of B epochs, one entry per epoch
// e = B+2 .. E: R-hat and split R-hat of the draws of epochs B+1 .. e. Empty
// when E < B + 2. Undefined values are NaN rather than errors, so a curve can
// start before split R-hat is defined; non-finite draws still throw.
std::vector<RhatAtEpoch> rhat_by_epoch(const torch::Tensor& chains, int64_t burn_in);

}  // namespace bnn::evaluation
