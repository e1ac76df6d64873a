#include "samplers/baoab.h"

#include <cmath>

namespace bnn::samplers {

Baoab::Baoab(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  const double gh = options_.friction() * options_.step_size();
  eta_ = std::exp(-gh);
  noise_scale_ = std::sqrt(-std::expm1(-2.0 * gh));  // sqrt(1 - eta^2), accurate for small gamma h
  allocate_noise({x_.numel()});
  enable_fused_steps();
}

std::string Baoab::pretty_string() const { return describe("Baoab"); }

torch::Tensor Baoab::do_step() {
  if (fused_steps()) return fused_step();
  const double h = options_.step_size();
  if (!primed_) {
    gradient_.evaluate(order_.next());
    primed_ = true;
  }
  v_.add_(gradient_.force(), -h / 2);
  x_.add_(v_, h / 2);
  bounce();
  draw_noise();
  v_.mul_(eta_).add_(noise_, noise_scale_);
  x_.add_(v_, h / 2);
  bounce();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  v_.add_(force, -h / 2);
  return loss;
}

// do_step's tensor operations in three passes: B(h/2) A(h/2) from the cached
// force, O A(h/2), and after the gradient the closing B(h/2), which also
// caches the new force.
torch::Tensor Baoab::fused_step() {
  const double h = options_.step_size();
  if (!primed_) {
    gradient_.evaluate(order_.next());
    primed_ = true;
  }
  const float minus_half_h = static_cast<float>(-h / 2), half_h = static_cast<float>(h / 2);
  const float eta = static_cast<float>(eta_), sigma = static_cast<float>(noise_scale_);
  const float* cached = gradient_.force().data_ptr<float>();
  bounce_if(fused_->kick_drift(fused_span(), cached, minus_half_h, half_h));
  bounce_if(fused_->ou_drift(fused_span(), eta, sigma, half_h));
  torch::Tensor loss;
  const detail::ForceTerms terms = gradient_.evaluate_terms(order_.next(), &loss);
  float* force = gradient_.force().data_ptr<float>();
  fused_->kick(fused_span(), terms, force, minus_half_h);
  return loss;
}

void Baoab::save_extra(torch::serialize::OutputArchive& archive) const {
  archive.write("baoab.primed", torch::tensor(primed_ ? 1 : 0, torch::kLong));
  if (primed_) archive.write("baoab.force", gradient_.force());
}

void Baoab::load_extra(torch::serialize::InputArchive& archive) {
  primed_ = read_tensor(archive, "baoab.primed").item<int64_t>() != 0;
  if (primed_) read_into(archive, "baoab.force", gradient_.force());
}

}  // namespace bnn::samplers
