#include "src/pipeline/optimiser_phases.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/pipeline/map_estimate.h"
#include "src/pipeline/progress.h"

namespace bnn::pipeline {
namespace {

void set_lr(torch::optim::Adam& adam, double lr) {
  for (auto& group : adam.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

}  // namespace

std::unique_ptr<torch::optim::Adam> make_adam(models::FlatParameters& flat, torch::nn::Module& module, bool flat_layout,
                                              double lr) {
  if (!flat_layout) return std::make_unique<torch::optim::Adam>(module.parameters(), torch::optim::AdamOptions(lr));
  flat.values().mutable_grad() = flat.grads();  // the modules' gradients are views of it
  return std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{flat.values()}, torch::optim::AdamOptions(lr));
}

OptimiserPhases::OptimiserPhases(const config::Config& config, int64_t member, samplers::GradientOracle& oracle,
                                 models::FlatParameters& flat, const data_loaders::Partition& partition,
                                 at::Generator& order, PhaseHooks& hooks)
    : cfg_(config), member_(member), oracle_(oracle), flat_(flat), partition_(partition), order_(order),
      hooks_(hooks) {}

double OptimiserPhases::epoch(torch::optim::Adam& adam, const std::string& label,
                              const std::function<void()>& after_step) {
  const int64_t n = partition_.num_batches();
  const double batch = static_cast<double>(partition_.batch_size());
  const double prior_scale = cfg_.prior.precision / static_cast<double>(partition_.num_examples());
  const torch::Tensor order = torch::randperm(n, order_, torch::TensorOptions().dtype(torch::kLong));
  torch::Tensor loss_sum = torch::zeros({}, flat_.values().options());
  Progress progress(label, n);
  for (int64_t i = 0; i < n; ++i) {
    loss_sum += oracle_.evaluate(order[i].item<int64_t>());
    {
      torch::NoGradGuard no_grad;
      flat_.grads().mul_(1.0 / batch).addcmul_(flat_.prior_mask(), flat_.values(), prior_scale);
    }
    adam.step();
    after_step();
    progress.update(i + 1);
  }
  return loss_sum.item<double>() / static_cast<double>(partition_.num_examples());
}

void OptimiserPhases::adam(torch::optim::Adam& adam, int64_t first_epoch) {
  const int64_t epochs = cfg_.adam.epochs;
  for (int64_t e = first_epoch; e < epochs; ++e) {
    const auto start = Clock::now();
    // Linear decay to 0 over T_train epochs (PolynomialLR, power 1, stepped per epoch).
    const double lr = cfg_.adam.lr * (1.0 - static_cast<double>(e) / static_cast<double>(epochs));
    set_lr(adam, lr);
    const double loss = epoch(adam, fmt::format("member {} adam {}/{}", member_, e + 1, epochs), [] {});
    hooks_.check_finite("adam", e, loss);
    hooks_.log_epoch("adam", e, epochs, loss, hooks_.accuracy(hooks_.predict()), lr, start);
    hooks_.save_checkpoint({Phase::kAdam, e + 1}, &adam);
  }
}

void OptimiserPhases::swa(torch::optim::Adam& adam, int64_t first_epoch, torch::Tensor& sum, int64_t& count) {
  const int64_t epochs = cfg_.swa.epochs;
  set_lr(adam, cfg_.swa.lr);
  if (first_epoch == 0) {
    sum = torch::zeros_like(flat_.values(), torch::TensorOptions().dtype(torch::kDouble));
    count = 0;
  }
  for (int64_t e = first_epoch; e < epochs; ++e) {
    const auto start = Clock::now();
    const double loss = epoch(adam, fmt::format("member {} swa {}/{}", member_, e + 1, epochs), [&] {
      torch::NoGradGuard no_grad;
      sum.add_(flat_.values());
      ++count;
    });
    hooks_.check_finite("swa", e, loss);
    hooks_.log_epoch("swa", e, epochs, loss, hooks_.accuracy(hooks_.predict()), cfg_.swa.lr, start);
    hooks_.save_checkpoint({Phase::kSwa, e + 1}, &adam);
  }
  torch::NoGradGuard no_grad;
  flat_.values().copy_(sum / static_cast<double>(count));
}

void OptimiserPhases::map(const std::vector<torch::Tensor>& parameters) {
  const auto start = Clock::now();
  spdlog::info("member {}: L-BFGS to the MAP point over {} examples (at most {} iterations, tolerance {})", member_,
               partition_.num_examples(), cfg_.map.iterations, cfg_.map.tolerance);
  const MapResult r = find_map(oracle_, parameters, partition_.num_examples(), cfg_.prior.precision, cfg_.map);
  hooks_.check_finite("map", 0, r.objective);
  if (!r.converged) {
    spdlog::warn("member {}: L-BFGS stopped after {} evaluations with max |grad| {:.3g} above map.tolerance {}; "
                 "raise map.iterations or the tolerance",
                 member_, r.evaluations, r.max_gradient, cfg_.map.tolerance);
  }
  spdlog::info("member {}: MAP after {} full-data evaluations: F = {:.6f}, mean loss {:.6f}, max |grad| {:.3g}",
               member_, r.evaluations, r.objective, r.mean_loss, r.max_gradient);
  hooks_.log_epoch("map", 0, 1, r.mean_loss, hooks_.accuracy(hooks_.predict()), 0.0, start);
}

}  // namespace bnn::pipeline
