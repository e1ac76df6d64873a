#include "samplers/ubu.h"

namespace bnn::samplers {

Ubu::Ubu(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed),
      half_(ubu_constants(options_.friction(), options_.step_size() / 2.0)) {
  allocate_noise({2, x_.numel()});
  enable_fused_steps();
}

std::string Ubu::pretty_string() const { return describe("Ubu"); }

void Ubu::half_ou() {
  draw_noise();
  const torch::Tensor xi1 = noise_[0];
  const torch::Tensor xi2 = noise_[1];
  x_.add_(v_, half_.x_from_v).add_(xi1, half_.x_noise);
  v_.mul_(half_.decay).add_(xi1, half_.v_from_xi1).add_(xi2, half_.v_noise);
  bounce();
}

torch::Tensor Ubu::do_step() {
  if (fused_steps()) return fused_step();
  half_ou();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  v_.add_(force, -options_.step_size());
  half_ou();
  return loss;
}

// The same step as do_step's tensor operations in two passes: U(h/2), then
// after the gradient the kick and U(h/2).
torch::Tensor Ubu::fused_step() {
  const detail::UbuHalf c{static_cast<float>(half_.x_from_v), static_cast<float>(half_.x_noise),
                          static_cast<float>(half_.decay), static_cast<float>(half_.v_from_xi1),
                          static_cast<float>(half_.v_noise)};
  const float minus_h = static_cast<float>(-options_.step_size());
  bounce_if(fused_->ubu(fused_span(), c, nullptr, minus_h));
  torch::Tensor loss;
  const detail::ForceTerms terms = gradient_.evaluate_terms(order_.next(), &loss);
  bounce_if(fused_->ubu(fused_span(), c, &terms, minus_h));
  return loss;
}

}  // namespace bnn::samplers
