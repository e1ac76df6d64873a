#include "samplers/registry.h"

#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "samplers/baoab.h"
#include "samplers/euler_maruyama.h"
#include "samplers/nogin.h"
#include "samplers/obabo.h"
#include "samplers/sgld.h"
#include "samplers/sgnht.h"
#include "samplers/ubu.h"

namespace bnn::samplers {
namespace {

using Factory = std::function<std::unique_ptr<Sampler>(GradientOracle&, torch::Tensor, const LangevinOptions&,
                                                       uint64_t)>;

template <typename S>
Factory factory() {
  return [](GradientOracle& oracle, torch::Tensor anchor, const LangevinOptions& options, uint64_t seed) {
    return std::make_unique<S>(oracle, std::move(anchor), options, seed);
  };
}

struct Entry {
  std::string name;
  BatchOrderKind order;
  Factory make;
  std::string summary;
  bool cyclical = false;    // reads cycle_length
  bool metropolis = false;  // reads mh_block
  bool overdamped = false;  // no velocity: ignores friction
  bool noise_corrected = false;  // reads noise_covariance
};

const std::vector<Entry>& entries() {
  using K = BatchOrderKind;
  static const std::vector<Entry> table = {
      {"sms_ubu", K::kSymmetric, factory<Ubu>(), "UBU, symmetric minibatch sweeps (SMS-UBU); bias O(h^2)"},
      {"sg_ubu", K::kWithReplacement, factory<Ubu>(), "UBU, minibatches drawn with replacement (SG-UBU); O(h)"},
      {"ubu_rr", K::kReshuffle, factory<Ubu>(), "UBU, reshuffled forward sweeps (SG-UBU-RR)"},
      {"sms_baoab", K::kSymmetric, factory<Baoab>(), "BAOAB, symmetric sweeps (SMS-BAOAB); O(h^2)"},
      {"sg_baoab", K::kWithReplacement, factory<Baoab>(), "BAOAB, with replacement (SG-BAOAB); O(h)"},
      {"baoab_rr", K::kReshuffle, factory<Baoab>(), "BAOAB, reshuffled forward sweeps (BAOAB-RR)"},
      {"sghmc", K::kReshuffle, factory<EulerMaruyama>(), "Euler-Maruyama, reshuffled epochs (SGHMC); O(h)"},
      {"sg_em", K::kWithReplacement, factory<EulerMaruyama>(), "Euler-Maruyama, with replacement (SG-EM); O(h)"},
      {"em_rr", K::kReshuffle, factory<EulerMaruyama>(), "Euler-Maruyama, reshuffled sweeps (EM-RR = sghmc)"},
      {"sms_em", K::kSymmetric, factory<EulerMaruyama>(), "Euler-Maruyama, symmetric sweeps (SMS-EM)"},
      {"csghmc", K::kReshuffle, factory<EulerMaruyama>(), "cyclical SGHMC, cosine step-size cycles", true},
      {"sgld", K::kReshuffle, factory<Sgld>(), "SGLD, overdamped Langevin", false, false, true},
      {"sgnht", K::kReshuffle, factory<Sgnht>(), "SGNHT, Nose-Hoover thermostat"},
      {"obabo", K::kReshuffle, factory<Obabo>(), "OBABO (GGMC), Metropolis-Hastings with mh_block > 0", false,
       true},
      {"nogin", K::kWithReplacement, factory<Nogin>(),
       "NOGIN, ABOBA with the gradient-noise covariance in the friction (needs per-example gradients)", false,
       false, false, true},
  };
  return table;
}

const Entry& entry(const std::string& name) {
  for (const auto& e : entries()) {
    if (e.name == name) return e;
  }
  TORCH_CHECK(false, "unknown sampler '", name, "'; valid: ", fmt::format("{}", fmt::join(sampler_names(), ", ")));
}

}  // namespace

const std::vector<std::string>& sampler_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& e : entries()) n.push_back(e.name);
    return n;
  }();
  return names;
}

const std::string& sampler_summary(const std::string& name) { return entry(name).summary; }

BatchOrderKind default_batch_order(const std::string& name) { return entry(name).order; }

const char* to_string(SamplerOption option) {
  switch (option) {
    case SamplerOption::kFriction: return "friction";
    case SamplerOption::kCycleLength: return "cycle_length";
    case SamplerOption::kMhBlock: return "mh_block";
    case SamplerOption::kNoiseCovariance: return "noise_covariance";
  }
  TORCH_CHECK(false, "unknown sampler option");
}

bool reads_option(const std::string& name, SamplerOption option) {
  const Entry& e = entry(name);
  switch (option) {
    case SamplerOption::kFriction: return !e.overdamped;
    case SamplerOption::kCycleLength: return e.cyclical;
    case SamplerOption::kMhBlock: return e.metropolis;
    case SamplerOption::kNoiseCovariance: return e.noise_corrected;
  }
  return false;
}

std::unique_ptr<Sampler> make_sampler(const std::string& name, GradientOracle& oracle, torch::Tensor anchor,
                                      const LangevinOptions& options, uint64_t seed) {
  const Entry& e = entry(name);
  options.validate();
  TORCH_CHECK(e.cyclical || options.cycle_length() == 0, "sampler '", name,
              "' has no step-size cycles; cycle_length applies to csghmc only");
  TORCH_CHECK(!e.cyclical || options.cycle_length() > 0, "sampler '", name,
              "' needs a positive cycle_length (steps per cosine cycle)");
  TORCH_CHECK(e.metropolis || options.mh_block() == 0, "sampler '", name,
              "' has no Metropolis-Hastings correction; mh_block applies to obabo only");
  TORCH_CHECK(e.noise_corrected || options.noise_covariance() == NoiseCovariance::kDiagonal, "sampler '", name,
              "' estimates no gradient-noise covariance; noise_covariance applies to nogin only");
  LangevinOptions resolved = options;
  if (!resolved.order()) resolved.order(e.order);
  return e.make(oracle, std::move(anchor), resolved, seed);
}

}  // namespace bnn::samplers
