#include "samplers/sgld.h"

#include <cmath>

namespace bnn::samplers {

Sgld::Sgld(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  v_.zero_();
  allocate_noise({x_.numel()});
  enable_fused_steps();
}

std::string Sgld::pretty_string() const { return describe("Sgld"); }

torch::Tensor Sgld::do_step() {
  if (fused_steps()) return fused_step();
  const double h = options_.step_size();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  draw_noise();
  x_.add_(force, -h).add_(noise_, std::sqrt(2.0 * h));
  bounce();
  return loss;
}

// do_step's update in one pass after the gradient.
torch::Tensor Sgld::fused_step() {
  const double h = options_.step_size();
  torch::Tensor loss;
  const detail::ForceTerms terms = gradient_.evaluate_terms(order_.next(), &loss);
  const float minus_h = static_cast<float>(-h), sigma = static_cast<float>(std::sqrt(2.0 * h));
  bounce_if(fused_->sgld(fused_span(), terms, minus_h, sigma));
  return loss;
}

}  // namespace bnn::samplers
