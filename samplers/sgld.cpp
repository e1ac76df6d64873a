#include "samplers/sgld.h"

#include <cmath>

namespace bnn::samplers {

Sgld::Sgld(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  v_.zero_();
  allocate_noise({x_.numel()});
}

std::string Sgld::pretty_string() const { return describe("Sgld"); }

torch::Tensor Sgld::do_step() {
  const double h = options_.step_size();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  draw_noise();
  x_.add_(force, -h).add_(noise_, std::sqrt(2.0 * h));
  bounce();
  return loss;
}

}  // namespace bnn::samplers
