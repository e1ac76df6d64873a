#include "samplers/sghmc.h"

#include <cmath>

namespace bnn::samplers {

Sghmc::Sghmc(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  allocate_noise({x_.numel()});
}

std::string Sghmc::pretty_string() const { return describe("Sghmc"); }

torch::Tensor Sghmc::do_step() {
  const double h = options_.step_size();
  const double gamma = options_.friction();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  draw_noise();
  x_.add_(v_, h);
  v_.mul_(1.0 - h * gamma).add_(force, -h).add_(noise_, std::sqrt(2.0 * gamma * h));
  bounce();
  return loss;
}

}  // namespace bnn::samplers
