#include "src/config/sampler_options.h"

#include "samplers/batch_order.h"

namespace bnn::config {

samplers::LangevinOptions langevin_options(const Config& config, int64_t num_batches, int64_t num_parameters) {
  const auto& s = config.sampler;
  samplers::LangevinOptions o(s.step_size);
  o.friction(*s.friction).rho(s.rho).rho_max(*s.rho_max).prior_precision(config.prior.precision);
  o.temperature(s.temperature);
  if (s.order != "auto") o.order(samplers::parse_batch_order(s.order));
  if (s.name == "csghmc") o.cycle_length(s.cycle_length > 0 ? s.cycle_length : 4 * num_batches);
  o.mh_block(s.mh_block);
  o.noise_covariance(samplers::parse_noise_covariance(s.nogin_covariance));
  o.estimator(samplers::parse_gradient_estimator(s.gradient));
  if (s.repartition) {
    // Note [Redrawn batches]: stored g*_b would be of last cycle's batches.
    o.anchor_gradients(samplers::AnchorGradients::kRecomputed);
  } else if (s.anchor_gradients == "auto") {
    const double bytes = static_cast<double>(num_batches) * num_parameters * 4.0;
    o.anchor_gradients(bytes <= config.sampler.anchor_memory_mb * 1024.0 * 1024.0
                           ? samplers::AnchorGradients::kStored
                           : samplers::AnchorGradients::kRecomputed);
  } else {
    o.anchor_gradients(samplers::parse_anchor_gradients(s.anchor_gradients));
  }
  return o;
}

}  // namespace bnn::config
