#include "samplers/kinetic_langevin.h"

#include <fmt/format.h>

#include "samplers/bounce.h"
#include "samplers/random.h"

namespace bnn::samplers {

namespace {
constexpr uint64_t kNoiseStream = 1;
constexpr uint64_t kOrderStream = 2;
}  // namespace

KineticLangevin::KineticLangevin(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options,
                                 uint64_t seed)
    : oracle_(oracle),
      options_(std::move(options)),
      gradient_(oracle, anchor, options_),
      x_(oracle.parameters()),
      noise_gen_(make_generator(oracle.parameters().device(), derive_seed(seed, kNoiseStream))),
      order_(options_.order(), oracle.num_batches(), derive_seed(seed, kOrderStream)) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(x_.dim() == 1 && x_.is_contiguous(), "sampler parameters must be a flat contiguous vector");
  v_ = torch::empty_like(x_);
  v_.normal_(0.0, 1.0, noise_gen_);
}

void KineticLangevin::draw_noise() { noise_.normal_(0.0, 1.0, noise_gen_); }

void KineticLangevin::bounce() {
  if (!options_.bounded()) return;
  reflect_into_box(x_, v_, gradient_.anchor(), options_.rho_max(), bounce_scratch_);
}

std::string KineticLangevin::describe(const std::string& name) const {
  return fmt::format("{}(h={:g}, gamma={:g}, rho={:g}, rho_max={:g}, lambda={:g}, T={:g}, order={}, gradient={}{})",
                     name, options_.step_size(), options_.friction(), options_.rho(), options_.rho_max(),
                     options_.prior_precision(), options_.temperature(), to_string(options_.order()),
                     to_string(options_.estimator()),
                     options_.estimator() == GradientEstimator::kControlVariate
                         ? "/" + to_string(options_.anchor_gradients())
                         : std::string());
}

}  // namespace bnn::samplers
