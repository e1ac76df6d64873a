// The phases that find a member's x*, and their schedules: Adam with the
// learning rate decaying linearly to 0, then SWA (constant rate, x* = the
// equal-weight average of every iterate); or, with map.optimizer lbfgs, x* =
// the MAP point by full-batch L-BFGS (src/pipeline/map_estimate.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "models/flat_parameters.h"
#include "samplers/gradient_oracle.h"
#include "src/config/config.h"
#include "src/pipeline/phase_hooks.h"

namespace bnn::pipeline {

// Note [Flat Adam]
// ~~~~~~~~~~~~~~~~
// LibTorch's Adam makes about eight elementwise operations per parameter
// tensor and step: some 160 kernel launches per step for fmnist_cnn's 20
// tensors, as many as its forward and backward pass, which on a GPU (where
// a small network's step is bound by launches) made an Adam epoch slower
// than a sampling epoch. bnn's parameters already live in one flat vector
// (models/flat_parameters.h), the module's tensors being views of it, and
// so do their gradients: the member's Adam is LibTorch's Adam over that one
// vector, whose gradient is set to the flat gradient. Adam is elementwise,
// so the iterates are the per-tensor Adam's bit for bit
// (FlatAdam.SameBitsAsAdamOverTheModulesTensors). Checkpoints mark the
// layout ("adam.flat"); one written before, with the per-tensor state,
// resumes with a per-tensor Adam, which continues the same iterates.
std::unique_ptr<torch::optim::Adam> make_adam(models::FlatParameters& flat, torch::nn::Module& module, bool flat_layout,
                                              double lr);

class OptimiserPhases {
 public:
  // `order` draws each epoch's batch order; `member` names the member in logs.
  OptimiserPhases(const config::Config& config, int64_t member, samplers::GradientOracle& oracle,
                  models::FlatParameters& flat, const data_loaders::Partition& partition, at::Generator& order,
                  PhaseHooks& hooks);

  // Adam epochs first_epoch .. adam.epochs - 1, at lr (1 - e / epochs) adam.lr.
  void adam(torch::optim::Adam& adam, int64_t first_epoch);
  // SWA epochs first_epoch .. swa.epochs - 1 at swa.lr, adding every iterate
  // to `sum` (double) and `count` (both reset when first_epoch is 0); leaves
  // the parameters at sum / count.
  void swa(torch::optim::Adam& adam, int64_t first_epoch, torch::Tensor& sum, int64_t& count);
  // L-BFGS from the current parameters to the MAP point.
  void map(const std::vector<torch::Tensor>& parameters);

 private:
  // One epoch over the fixed batches in a fresh random order, with the loss
  // mean CE + (lambda/2)||x_w||^2 / N_D (docs/design.md §4); after_step()
  // after each update. Returns the mean training CE.
  double epoch(torch::optim::Adam& adam, const std::string& label, const std::function<void()>& after_step);

  const config::Config& cfg_;
  int64_t member_;
  samplers::GradientOracle& oracle_;
  models::FlatParameters& flat_;
  const data_loaders::Partition& partition_;
  at::Generator& order_;
  PhaseHooks& hooks_;
};

}  // namespace bnn::pipeline
