#include "samplers/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "samplers/sghmc.h"
#include "samplers/sms_ubu.h"

namespace bnn::samplers {

const std::vector<std::string>& sampler_names() {
  static const std::vector<std::string> names = {"sms_ubu", "sghmc"};
  return names;
}

namespace {
void check_name(const std::string& name) {
  for (const auto& n : sampler_names()) {
    if (n == name) return;
  }
  TORCH_CHECK(false, "unknown sampler '", name, "'; valid: ", fmt::format("{}", fmt::join(sampler_names(), ", ")));
}
}  // namespace

BatchOrderKind default_batch_order(const std::string& name) {
  check_name(name);
  return name == "sms_ubu" ? BatchOrderKind::kSymmetric : BatchOrderKind::kReshuffle;
}

std::unique_ptr<Sampler> make_sampler(const std::string& name, GradientOracle& oracle, torch::Tensor anchor,
                                      const LangevinOptions& options, uint64_t seed) {
  check_name(name);
  if (name == "sms_ubu") return std::make_unique<SmsUbu>(oracle, std::move(anchor), options, seed);
  return std::make_unique<Sghmc>(oracle, std::move(anchor), options, seed);
}

}  // namespace bnn::samplers
