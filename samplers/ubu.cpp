#include "samplers/ubu.h"

namespace bnn::samplers {

Ubu::Ubu(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed),
      half_(ubu_constants(options_.friction(), options_.step_size() / 2.0)) {
  allocate_noise({2, x_.numel()});
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
  half_ou();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  v_.add_(force, -options_.step_size());
  half_ou();
  return loss;
}

}  // namespace bnn::samplers
