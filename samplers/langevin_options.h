// Options shared by the Langevin samplers (samplers/registry.h lists them).
//
// Required values go in the constructor, the rest have chained setters in the
// style of torch::optim (LangevinOptions(1e-4).friction(7.07).rho(0.14)).
// validate() checks every value and names the offending one.
//
// Note [Step-size convention]: `step_size` is always the step actually run.
// The SMS-UBU reference notebooks call their UBU step with "h/2" (their
// Fashion-MNIST table value 2.5e-4 is a step of 1.25e-4 here); configs that
// reproduce the paper state which value they use.
//
// Note [Temperature]: sampling exp(-f/T) is done by dividing the force by T
// (the noise keeps unit temperature), which leaves v ~ N(0, I) at equilibrium
// and x ~ exp(-f/T).
#pragma once

#include <limits>
#include <optional>
#include <string>

#include <torch/arg.h>

#include "samplers/batch_order.h"

namespace bnn::samplers {

// How the stochastic gradient G(x, b) is estimated (docs/design.md §2).
enum class GradientEstimator {
  kPlain,           // N_m * sum_b grad CE + prior + localization
  kControlVariate,  // S* + N_m * (sum_b grad CE(x) - g*_b) + prior + localization
};
// Where the control variate's per-batch anchor gradients g*_b come from.
enum class AnchorGradients {
  kStored,      // all N_m gradients at x* kept (N_m * d floats, no extra work)
  kRecomputed,  // one extra backward per step at x*, no memory
};

// How NOGIN (samplers/nogin.h) estimates the covariance of the minibatch
// gradient from the batch's per-example gradients.
enum class NoiseCovariance {
  kDiagonal,  // per-coordinate sample variances: O(N_b d) per step
  kLowRank,   // the full rank <= N_b - 1 sample covariance, by Woodbury: O(N_b^2 d)
};

GradientEstimator parse_gradient_estimator(const std::string& name);  // "plain", "control_variate"
AnchorGradients parse_anchor_gradients(const std::string& name);      // "stored", "recomputed"
std::string to_string(GradientEstimator e);
std::string to_string(AnchorGradients a);
NoiseCovariance parse_noise_covariance(const std::string& name);  // "diagonal", "low_rank"
std::string to_string(NoiseCovariance c);

struct LangevinOptions {
  explicit LangevinOptions(double step_size) : step_size_(step_size) {}
  // h, the step actually run (Note [Step-size convention]).
  TORCH_ARG(double, step_size);
  // gamma, friction.
  TORCH_ARG(double, friction) = 1.0;
  // Localization radius: adds ||x - x*||^2 / (2 rho^2). Infinity = global.
  TORCH_ARG(double, rho) = std::numeric_limits<double>::infinity();
  // Half-width of the bounce hypercube around x*. Infinity = no bounces.
  TORCH_ARG(double, rho_max) = std::numeric_limits<double>::infinity();
  // lambda: Gaussian prior precision on the coordinates where prior_mask is 1.
  TORCH_ARG(double, prior_precision) = 1.0;
  // T (Note [Temperature]).
  TORCH_ARG(double, temperature) = 1.0;
  // Unset: the sampler's default (samplers/registry.h); samplers receive it set.
  TORCH_ARG(std::optional<BatchOrderKind>, order);
  TORCH_ARG(GradientEstimator, estimator) = GradientEstimator::kPlain;
  TORCH_ARG(AnchorGradients, anchor_gradients) = AnchorGradients::kStored;
  // Cyclical samplers (csghmc): steps per cosine cycle of the step size.
  TORCH_ARG(int64_t, cycle_length) = 0;
  // OBABO: steps per Metropolis-Hastings block; 0 = unadjusted.
  TORCH_ARG(int64_t, mh_block) = 0;
  // NOGIN: the gradient-noise covariance estimate; other samplers ignore it.
  TORCH_ARG(NoiseCovariance, noise_covariance) = NoiseCovariance::kDiagonal;

  // TORCH_ARG leaves the section private.
 public:
  // TORCH_CHECKs every value: h > 0, gamma > 0, rho > 0, rho_max >= rho when
  // both are finite, lambda >= 0, T > 0, all finite where they must be.
  void validate() const;
  bool localized() const;  // rho is finite
  bool bounded() const;    // rho_max is finite
};

}  // namespace bnn::samplers
