#include "samplers/sgnht.h"

#include <cmath>

#include <fmt/format.h>

namespace bnn::samplers {

Sgnht::Sgnht(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  xi_ = torch::full({}, options_.friction(), x_.options());
  allocate_noise({x_.numel()});
  enable_fused_steps();
}

std::string Sgnht::pretty_string() const { return describe("Sgnht"); }

std::string Sgnht::diagnostics() const { return fmt::format("xi={:.4g}", xi_.item<double>()); }

torch::Tensor Sgnht::do_step() {
  if (fused_steps()) return fused_step();
  const double h = options_.step_size();
  const double d = static_cast<double>(x_.numel());
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  draw_noise();
  v_.mul_(1.0 - h * xi_).add_(force, -h).add_(noise_, std::sqrt(2.0 * options_.friction() * h));
  x_.add_(v_, h);
  bounce();
  xi_.add_(torch::dot(v_, v_).div_(d).sub_(1.0).mul_(h));
  return loss;
}

// do_step's velocity and position update in one pass after the gradient;
// the thermostat's scalar factor and its update stay tensor operations.
torch::Tensor Sgnht::fused_step() {
  const double h = options_.step_size();
  const double d = static_cast<double>(x_.numel());
  torch::Tensor loss;
  const detail::ForceTerms terms = gradient_.evaluate_terms(order_.next(), &loss);
  const torch::Tensor thermostat = 1.0 - h * xi_;  // the factor do_step multiplies v by
  const float minus_h = static_cast<float>(-h), hf = static_cast<float>(h),
              sigma = static_cast<float>(std::sqrt(2.0 * options_.friction() * h));
  bounce_if(fused_->sgnht(fused_span(), terms, thermostat, minus_h, sigma, hf));
  xi_.add_(torch::dot(v_, v_).div_(d).sub_(1.0).mul_(h));
  return loss;
}

void Sgnht::save_extra(torch::serialize::OutputArchive& archive) const { archive.write("sgnht.xi", xi_); }

void Sgnht::load_extra(torch::serialize::InputArchive& archive) { read_into(archive, "sgnht.xi", xi_); }

}  // namespace bnn::samplers
