#include "samplers/baoab.h"

#include <cmath>

namespace bnn::samplers {

Baoab::Baoab(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  const double gh = options_.friction() * options_.step_size();
  eta_ = std::exp(-gh);
  noise_scale_ = std::sqrt(-std::expm1(-2.0 * gh));  // sqrt(1 - eta^2), accurate for small gamma h
  allocate_noise({x_.numel()});
}

std::string Baoab::pretty_string() const { return describe("Baoab"); }

torch::Tensor Baoab::do_step() {
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

void Baoab::save_extra(torch::serialize::OutputArchive& archive) const {
  archive.write("baoab.primed", torch::tensor(primed_ ? 1 : 0, torch::kLong));
  if (primed_) archive.write("baoab.force", gradient_.force());
}

void Baoab::load_extra(torch::serialize::InputArchive& archive) {
  primed_ = read_tensor(archive, "baoab.primed").item<int64_t>() != 0;
  if (primed_) read_into(archive, "baoab.force", gradient_.force());
}

}  // namespace bnn::samplers
