#include "src/pipeline/sampling_phase.h"

#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/pipeline/progress.h"
#include "src/pipeline/run_directory.h"

namespace bnn::pipeline {

double sampling_epoch(samplers::Sampler& sampler, const data_loaders::Partition& partition,
                      const torch::TensorOptions& loss_options, const std::string& label,
                      const std::function<void(const torch::Tensor&)>& after_step) {
  const int64_t n = partition.num_batches();
  torch::Tensor loss_sum = torch::zeros({}, loss_options);
  Progress progress(label, n);
  for (int64_t i = 0; i < n; ++i) {
    const torch::Tensor step_loss = sampler.step();
    loss_sum += step_loss;
    after_step(step_loss);
    progress.update(i + 1);
  }
  return loss_sum.item<double>() / static_cast<double>(partition.num_examples());
}

int64_t thin_steps(const config::Config& config, int64_t num_batches) {
  return config.sampler.thin == 0 ? num_batches : config.sampler.thin;
}

int64_t thin_steps(const config::Config& config, const data_loaders::Partition& partition) {
  return thin_steps(config, partition.num_batches());
}

Retention retention_of(const config::Config& config, int64_t num_batches) {
  return Retention(config.sampler.burn_in * num_batches, thin_steps(config, num_batches));
}

Retention retention_of(const config::Config& config, const data_loaders::Partition& partition) {
  return retention_of(config, partition.num_batches());
}

SamplingPhase::SamplingPhase(const config::Config& config, int64_t member, const data_loaders::Partition& partition,
                             const data_loaders::Split& test, int64_t num_classes,
                             std::function<std::unique_ptr<samplers::Sampler>()> make_sampler, PhaseHooks& hooks)
    : cfg_(config), member_(member), partition_(partition), test_(test), num_classes_(num_classes),
      make_sampler_(std::move(make_sampler)), hooks_(hooks) {}

void SamplingPhase::run(MemberState& state, const torch::Tensor& parameters, int64_t first_epoch,
                        const FaultInjection& faults) {
  const auto& s = cfg_.sampler;
  const Retention retention = retention_of(cfg_, partition_);
  if (first_epoch == 0) {
    state.anchor = parameters.clone();
    state.sampler = make_sampler_();
    state.prob_sum = torch::zeros({test_.size(), num_classes_}, test_.labels.options().dtype(torch::kDouble));
    state.samples = 0;
  }
  samplers::Sampler& sampler = *state.sampler;
  spdlog::info("member {}: {}", member_, sampler.pretty_string());
  const torch::ScalarType sample_probs_dtype =
      cfg_.evaluation.sample_probs_dtype == "float16" ? torch::kHalf : torch::kFloat;
  for (int64_t e = first_epoch; e < s.epochs; ++e) {
    const auto start = Clock::now();
    torch::Tensor last_probs;
    const double loss =
        sampling_epoch(sampler, partition_, parameters.options(),
                       fmt::format("member {} sample {}/{}", member_, e + 1, s.epochs), [&](const torch::Tensor&) {
                         const int64_t done = sampler.steps_taken();
                         faults.after_sampler_step(done);  // Note [Fault injection]
                         if (!retention.retains(done)) return;
                         last_probs = hooks_.predict();
                         state.prob_sum += last_probs;
                         ++state.samples;
                         if (cfg_.evaluation.save_sample_probs) {  // Note [Stored sample probabilities]
                           hooks_.write_npy(sample_probs_path(std::filesystem::path(), done),
                                            last_probs.to(sample_probs_dtype));
                           hooks_.write_ood(sample_probs_path(std::filesystem::path(), done), sample_probs_dtype);
                         }
                         // Note [Stored samples]: the k-th, 2k-th, ... retained sample.
                         if (cfg_.evaluation.save_sample_weights &&
                             state.samples % cfg_.evaluation.sample_weights_every == 0) {
                           hooks_.store_sample(done);
                         }
                       });
    hooks_.check_finite("sample", e, loss);
    if (!last_probs.defined() || sampler.steps_taken() % retention.thin() != 0) last_probs = hooks_.predict();
    hooks_.log_epoch("sample", e, s.epochs, loss, hooks_.accuracy(last_probs), sampler.step_size(), start);
    if (const std::string d = sampler.diagnostics(); !d.empty()) spdlog::info("member {} sampler: {}", member_, d);
    hooks_.save_checkpoint({Phase::kSample, e + 1}, nullptr);
  }
  TORCH_CHECK(state.samples > 0, "no samples retained: burn_in ", s.burn_in, " epochs and thin ", retention.thin(),
              " steps leave none");
  const torch::Tensor mean = state.prob_sum / static_cast<double>(state.samples);
  // Each retained sample's rows sum to 1, so their mean's do: a mean that
  // does not (a running sum damaged on its way through a checkpoint, Note
  // [Checkpoint integrity] in src/io/zip_check.h, or probabilities that were
  // not finite) is not written as a result.
  const torch::Tensor deviation = mean.to(torch::kDouble).sum(1) - 1;
  const double worst = deviation.abs().max().item<double>();
  if (!std::isfinite(worst) || worst >= 1e-3 || mean.min().item<double>() < 0) {
    const double signed_worst = std::isfinite(worst) ? deviation[deviation.abs().argmax()].item<double>() : worst;
    TORCH_CHECK(false, "the mean of the retained samples' probabilities is not probabilities (a row sums to 1 ",
                fmt::format("{:+.3g}", signed_worst), ")",
                first_epoch > 0 ? fmt::format("; the running sum the member resumed from was damaged: delete the "
                                              "run's {} to train the member again",
                                              member_dir({}, member_).string())
                                : std::string());
  }
  hooks_.write_npy(kBayesProbsFile, mean.to(torch::kFloat));
}

}  // namespace bnn::pipeline
