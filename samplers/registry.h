// Samplers created by name, as configs name them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "samplers/gradient_oracle.h"
#include "samplers/langevin_options.h"
#include "samplers/sampler.h"

namespace bnn::samplers {

// Valid sampler names, in the order help text lists them.
const std::vector<std::string>& sampler_names();

// The default batch order of a sampler: "sms" for sms_ubu, "rr" for sghmc.
BatchOrderKind default_batch_order(const std::string& name);

// Creates sampler `name` over `oracle`, anchored at `anchor` (x*). Unknown
// names throw, listing the valid names.
std::unique_ptr<Sampler> make_sampler(const std::string& name, GradientOracle& oracle, torch::Tensor anchor,
                                      const LangevinOptions& options, uint64_t seed);

}  // namespace bnn::samplers
