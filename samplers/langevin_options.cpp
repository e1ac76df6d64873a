#include "samplers/langevin_options.h"

#include <cmath>

#include <torch/torch.h>

namespace bnn::samplers {

GradientEstimator parse_gradient_estimator(const std::string& name) {
  if (name == "plain") return GradientEstimator::kPlain;
  if (name == "control_variate") return GradientEstimator::kControlVariate;
  TORCH_CHECK(false, "unknown gradient estimator '", name, "'; valid: plain, control_variate");
}

AnchorGradients parse_anchor_gradients(const std::string& name) {
  if (name == "stored") return AnchorGradients::kStored;
  if (name == "recomputed") return AnchorGradients::kRecomputed;
  TORCH_CHECK(false, "unknown anchor gradient mode '", name, "'; valid: stored, recomputed");
}

std::string to_string(GradientEstimator e) {
  return e == GradientEstimator::kPlain ? "plain" : "control_variate";
}

std::string to_string(AnchorGradients a) { return a == AnchorGradients::kStored ? "stored" : "recomputed"; }

NoiseCovariance parse_noise_covariance(const std::string& name) {
  if (name == "diagonal") return NoiseCovariance::kDiagonal;
  if (name == "low_rank") return NoiseCovariance::kLowRank;
  TORCH_CHECK(false, "unknown noise covariance '", name, "'; valid: diagonal, low_rank");
}

std::string to_string(NoiseCovariance c) { return c == NoiseCovariance::kDiagonal ? "diagonal" : "low_rank"; }

void LangevinOptions::validate() const {
  TORCH_CHECK(step_size_ > 0 && std::isfinite(step_size_), "step_size h must be positive and finite, got ",
              step_size_);
  TORCH_CHECK(friction_ > 0 && std::isfinite(friction_), "friction gamma must be positive and finite, got ",
              friction_);
  TORCH_CHECK(rho_ > 0, "localization rho must be positive (or infinite for a global sampler), got ", rho_);
  TORCH_CHECK(rho_max_ > 0, "rho_max must be positive (or infinite for no bounces), got ", rho_max_);
  TORCH_CHECK(!(std::isfinite(rho_) && std::isfinite(rho_max_) && rho_max_ < rho_),
              "rho_max must be at least rho, got rho_max ", rho_max_, " < rho ", rho_);
  TORCH_CHECK(prior_precision_ >= 0 && std::isfinite(prior_precision_),
              "prior precision lambda must be non-negative and finite, got ", prior_precision_);
  TORCH_CHECK(temperature_ > 0 && std::isfinite(temperature_), "temperature must be positive and finite, got ",
              temperature_);
  TORCH_CHECK(cycle_length_ >= 0, "cycle_length must be non-negative (0 = no cycles), got ", cycle_length_);
  TORCH_CHECK(mh_block_ >= 0, "mh_block must be non-negative (0 = no Metropolis-Hastings), got ", mh_block_);
}

bool LangevinOptions::localized() const { return std::isfinite(rho_); }
bool LangevinOptions::bounded() const { return std::isfinite(rho_max_); }

}  // namespace bnn::samplers
