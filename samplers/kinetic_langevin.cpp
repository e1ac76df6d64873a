#include "samplers/kinetic_langevin.h"

#include <fmt/format.h>

#include "samplers/bounce.h"
#include "samplers/random.h"

namespace bnn::samplers {

namespace {
constexpr uint64_t kNoiseStream = 1;
constexpr uint64_t kOrderStream = 2;
constexpr uint64_t kVelocityStream = 3;
}  // namespace

KineticLangevin::KineticLangevin(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : oracle_(oracle),
      options_(std::move(options)),
      gradient_(oracle, anchor, options_),
      x_(oracle.parameters()),
      order_(options_.order().value_or(BatchOrderKind::kSymmetric), oracle.num_batches(),
             derive_seed(seed, kOrderStream)),
      seed_(seed),
      noise_seed_(derive_seed(seed, kNoiseStream)) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(x_.dim() == 1 && x_.is_contiguous(), "sampler parameters must be a flat contiguous vector");
  v_ = torch::empty_like(x_);
  ChunkedNormal(v_, derive_seed(seed, kVelocityStream)).fill(v_);
  order_.on_new_cycle([this](int64_t cycle) {
    if (oracle_.begin_cycle(cycle)) gradient_.resum_anchor();
  });
}

void KineticLangevin::allocate_noise(torch::IntArrayRef shape) {
  noise_ = torch::empty(shape, x_.options());
  noise_source_ = std::make_unique<ChunkedNormal>(noise_, noise_seed_);
}

void KineticLangevin::draw_noise() {
  if (noise_hook_) {
    noise_hook_(noise_);
  } else {
    noise_source_->fill(noise_);
  }
}

void KineticLangevin::enable_fused_steps() {
  if (!noise_source_) return;
  // With BNN_FUSED_STEPS=0 the passes are still set up, so that
  // set_fused_steps(true) can turn them on.
  const FusedChoice choice = fused_choice_ == FusedChoice::kOff ? FusedChoice::kAuto : fused_choice_;
  fused_ = make_fused_passes(choice, *noise_source_, noise_, x_, v_, gradient_.anchor(), oracle_.gradient(),
                             gradient_.force(), options_.rho_max());
}

detail::PassSpan KineticLangevin::fused_span() {
  detail::PassSpan span{};
  span.x = x_.data_ptr<float>();
  span.v = v_.data_ptr<float>();
  span.anchor = gradient_.anchor().data_ptr<float>();
  span.w = box_width(options_.rho_max());
  return span;
}

void KineticLangevin::bounce() {
  if (!options_.bounded()) return;
  reflect_into_box(x_, v_, gradient_.anchor(), options_.rho_max(), bounce_scratch_);
}

void KineticLangevin::save_state(torch::serialize::OutputArchive& archive) const {
  archive.write("sampler.x", x_);
  archive.write("sampler.v", v_);
  if (noise_source_) noise_source_->save(archive, "sampler.noise");
  order_.save(archive, "sampler.order");
  save_extra(archive);
}

void KineticLangevin::load_state(torch::serialize::InputArchive& archive) {
  read_into(archive, "sampler.x", x_);
  read_into(archive, "sampler.v", v_);
  if (noise_source_) noise_source_->load(archive, "sampler.noise");
  order_.load(archive, "sampler.order");
  if (order_.cycle() >= 0 && oracle_.begin_cycle(order_.cycle())) gradient_.resum_anchor();
  load_extra(archive);
}

std::vector<std::pair<std::string, double>> KineticLangevin::option_values() const {
  const auto& o = options_;
  return {{"step_size", o.step_size()},
          {"friction", o.friction()},
          {"rho", o.rho()},
          {"rho_max", o.rho_max()},
          {"prior_precision", o.prior_precision()},
          {"temperature", o.temperature()},
          {"order", static_cast<double>(order_.kind())},
          {"estimator", static_cast<double>(o.estimator())},
          {"anchor_gradients", static_cast<double>(o.anchor_gradients())},
          {"cycle_length", static_cast<double>(o.cycle_length())},
          {"mh_block", static_cast<double>(o.mh_block())},
          {"noise_covariance", static_cast<double>(o.noise_covariance())}};
}

std::string KineticLangevin::describe(const std::string& name, const std::string& extra) const {
  return fmt::format("{}(h={:g}, gamma={:g}, rho={:g}, rho_max={:g}, lambda={:g}, T={:g}, order={}, gradient={}{}{})",
                     name, options_.step_size(), options_.friction(), options_.rho(), options_.rho_max(),
                     options_.prior_precision(), options_.temperature(), to_string(order_.kind()),
                     to_string(options_.estimator()),
                     options_.estimator() == GradientEstimator::kControlVariate
                         ? fmt::format("/{}", to_string(options_.anchor_gradients()))
                         : std::string(),
                     extra.empty() ? std::string() : fmt::format(", {}", extra));
}

}  // namespace bnn::samplers
