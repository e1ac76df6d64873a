// From a run's config to the options of its sampler: the one place where the
// config's sampler, prior and gradient keys become samplers::LangevinOptions
// (samplers/langevin_options.h), for `bnn run`, `bnn rhat` and the
// experiments alike.
#pragma once

#include <cstdint>

#include "samplers/langevin_options.h"
#include "src/config/config.h"

namespace bnn::config {

// The sampler options of `config` for a model of `num_parameters` parameters
// trained on `num_batches` batches (auto values resolved: csghmc's cycle
// length, whether the control-variate anchor gradients are stored, which
// they are when the N_m d floats fit in sampler.anchor_memory_mb).
samplers::LangevinOptions langevin_options(const Config& config, int64_t num_batches, int64_t num_parameters);

}  // namespace bnn::config
