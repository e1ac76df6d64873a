#include "samplers/euler_maruyama.h"

#include <cmath>

#include <c10/util/MathConstants.h>
#include <fmt/format.h>

namespace bnn::samplers {

EulerMaruyama::EulerMaruyama(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed), last_step_(options_.step_size()) {
  allocate_noise({x_.numel()});
  enable_fused_steps();
}

std::string EulerMaruyama::pretty_string() const {
  const int64_t L = options_.cycle_length();
  return describe(L > 0 ? "CyclicalSghmc" : "Sghmc", L > 0 ? fmt::format("cycle={}", L) : std::string());
}

double EulerMaruyama::cyclical_step(double h, int64_t cycle_length, int64_t k) {
  if (cycle_length <= 0) return h;
  const double phase = static_cast<double>(k % cycle_length) / static_cast<double>(cycle_length);
  return 0.5 * h * (std::cos(c10::pi<double> * phase) + 1.0);
}

torch::Tensor EulerMaruyama::do_step() {
  if (fused_steps()) return fused_step();
  const double h = cyclical_step(options_.step_size(), options_.cycle_length(), steps_taken());
  const double gamma = options_.friction();
  last_step_ = h;
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  draw_noise();
  x_.add_(v_, h);
  v_.mul_(1.0 - h * gamma).add_(force, -h).add_(noise_, std::sqrt(2.0 * gamma * h));
  bounce();
  return loss;
}

// do_step's update in one pass after the gradient.
torch::Tensor EulerMaruyama::fused_step() {
  const double h = cyclical_step(options_.step_size(), options_.cycle_length(), steps_taken());
  const double gamma = options_.friction();
  last_step_ = h;
  torch::Tensor loss;
  const detail::ForceTerms terms = gradient_.evaluate_terms(order_.next(), &loss);
  const float hf = static_cast<float>(h), friction = static_cast<float>(1.0 - h * gamma),
              minus_h = static_cast<float>(-h), sigma = static_cast<float>(std::sqrt(2.0 * gamma * h));
  bounce_if(fused_->euler(fused_span(), terms, hf, friction, minus_h, sigma));
  return loss;
}

}  // namespace bnn::samplers
