#include "samplers/obabo.h"

#include <cmath>

#include <fmt/format.h>

#include "samplers/random.h"

namespace bnn::samplers {

namespace {
constexpr uint64_t kUniformStream = 4;  // kinetic_langevin.cpp uses 1-3
}

Obabo::Obabo(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  const double gh = options_.friction() * options_.step_size();
  decay_ = std::exp(-gh / 2);
  noise_scale_ = std::sqrt(-std::expm1(-gh));  // sqrt(1 - a^2)
  allocate_noise({2, x_.numel()});
  const auto counter = x_.options().dtype(torch::kLong);
  accepted_ = torch::zeros({}, counter);
  blocks_ = torch::zeros({}, counter);
  if (options_.mh_block() > 0) {
    uniform_gen_ = make_generator(x_.device(), derive_seed(seed, kUniformStream));
    x0_ = torch::empty_like(x_);
    v0_ = torch::empty_like(x_);
    f0_ = torch::empty_like(x_);
    const auto scalar = x_.options().dtype(torch::kDouble);
    u0_ = torch::zeros({}, scalar);
    d0_ = torch::zeros({}, scalar);
    kinetic_change_ = torch::zeros({}, scalar);
  }
}

std::string Obabo::pretty_string() const {
  return describe("Obabo", options_.mh_block() > 0 ? fmt::format("mh_block={}", options_.mh_block())
                                                   : std::string("unadjusted"));
}

int64_t Obabo::accepted_blocks() const { return accepted_.item<int64_t>(); }
int64_t Obabo::completed_blocks() const { return blocks_.item<int64_t>(); }

std::string Obabo::diagnostics() const {
  if (options_.mh_block() == 0) return {};
  const int64_t n = completed_blocks(), a = accepted_blocks();
  if (n == 0) return fmt::format("accept=n/a (no block of {} steps has ended yet)", options_.mh_block());
  return fmt::format("accept={:.3f} ({}/{} blocks)", static_cast<double>(a) / static_cast<double>(n), a, n);
}

std::string Obabo::warning() const {
  if (options_.mh_block() == 0) return {};
  const int64_t n = completed_blocks(), a = accepted_blocks();
  if (n == 0 || static_cast<double>(a) >= kLowAcceptance * static_cast<double>(n)) return {};
  return fmt::format("the Metropolis-Hastings test accepted {} of {} blocks of {} steps: the chain hardly left x*, "
                     "so its samples are nearly x* itself; lower sampler.step_size or sampler.mh_block",
                     a, n, options_.mh_block());
}

void Obabo::half_o(const torch::Tensor& xi) { v_.mul_(decay_).add_(xi, noise_scale_); }

void Obabo::begin_block() {
  if (!have_u0_) {
    torch::Tensor data;
    u0_.copy_(gradient_.potential(&data));
    d0_.copy_(data);
    d0_known_ = true;
    have_u0_ = true;
  }
  x0_.copy_(x_);
  v0_.copy_(v_);
  f0_.copy_(gradient_.force());
  kinetic_change_.zero_();
}

void Obabo::end_block() {
  torch::Tensor d1;
  const torch::Tensor u1 = gradient_.potential(&d1);
  const torch::Tensor log_ratio = -(u1 - u0_) - kinetic_change_;
  const torch::Tensor u = torch::rand({}, uniform_gen_, u1.options());
  const torch::Tensor accept = torch::log(u) < log_ratio;
  x_.copy_(torch::where(accept, x_, x0_));
  v_.copy_(torch::where(accept, v_, -v0_));
  gradient_.force().copy_(torch::where(accept, gradient_.force(), f0_));
  u0_.copy_(torch::where(accept, u1, u0_));
  d0_.copy_(torch::where(accept, d1, d0_));
  accepted_.add_(accept.to(torch::kLong));
  blocks_.add_(1);
}

void Obabo::recover_state_loss() {
  // Between blocks the state is x itself; inside one it is x0.
  const bool between = steps_taken() % options_.mh_block() == 0;
  torch::Tensor data;
  if (between) {
    gradient_.potential(&data);
  } else {
    const torch::Tensor here = x_.clone();
    x_.copy_(x0_);
    gradient_.potential(&data);
    x_.copy_(here);
  }
  d0_.copy_(data);
  d0_known_ = true;
}

torch::Tensor Obabo::do_step() {
  const double h = options_.step_size();
  const int64_t block = options_.mh_block();
  if (!primed_) {
    gradient_.evaluate(order_.next());
    primed_ = true;
  }
  if (block > 0 && have_u0_ && !d0_known_) recover_state_loss();
  if (block > 0 && steps_taken() % block == 0) begin_block();
  draw_noise();
  half_o(noise_[0]);
  if (block > 0) kinetic_change_.sub_(0.5 * torch::dot(v_, v_).to(torch::kDouble));
  v_.add_(gradient_.force(), -h / 2);
  x_.add_(v_, h);
  bounce();
  torch::Tensor loss;
  const torch::Tensor& force = gradient_.evaluate(order_.next(), &loss);
  v_.add_(force, -h / 2);
  if (block > 0) kinetic_change_.add_(0.5 * torch::dot(v_, v_).to(torch::kDouble));
  half_o(noise_[1]);
  if (block == 0) return loss;
  if ((steps_taken() + 1) % block == 0) end_block();
  return (d0_ / static_cast<double>(oracle_.num_batches())).to(loss.scalar_type());
}

void Obabo::save_extra(torch::serialize::OutputArchive& archive) const {
  archive.write("obabo.primed", torch::tensor(primed_ ? 1 : 0, torch::kLong));
  if (primed_) archive.write("obabo.force", gradient_.force());
  archive.write("obabo.accepted", accepted_);
  archive.write("obabo.blocks", blocks_);
  if (options_.mh_block() == 0) return;
  archive.write("obabo.have_u0", torch::tensor(have_u0_ ? 1 : 0, torch::kLong));
  archive.write("obabo.u0", u0_);
  archive.write("obabo.d0", d0_);
  archive.write("obabo.kinetic_change", kinetic_change_);
  archive.write("obabo.x0", x0_);
  archive.write("obabo.v0", v0_);
  archive.write("obabo.f0", f0_);
  write_generator(archive, "obabo.uniform", uniform_gen_);
}

void Obabo::load_extra(torch::serialize::InputArchive& archive) {
  primed_ = read_tensor(archive, "obabo.primed").item<int64_t>() != 0;
  if (primed_) read_into(archive, "obabo.force", gradient_.force());
  read_into(archive, "obabo.accepted", accepted_);
  read_into(archive, "obabo.blocks", blocks_);
  if (options_.mh_block() == 0) return;
  have_u0_ = read_tensor(archive, "obabo.have_u0").item<int64_t>() != 0;
  read_into(archive, "obabo.u0", u0_);
  // Older checkpoints hold no d0; it is worked out again at the next step.
  torch::Tensor d0;
  d0_known_ = archive.try_read("obabo.d0", d0);
  if (d0_known_) d0_.copy_(d0);
  read_into(archive, "obabo.kinetic_change", kinetic_change_);
  read_into(archive, "obabo.x0", x0_);
  read_into(archive, "obabo.v0", v0_);
  read_into(archive, "obabo.f0", f0_);
  read_generator(archive, "obabo.uniform", uniform_gen_);
}

}  // namespace bnn::samplers
