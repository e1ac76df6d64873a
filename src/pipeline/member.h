// One ensemble member, end to end (DESIGN.md §1, §4):
//   Adam (lr decaying linearly to 0) -> SWA (constant lr, average of every
//   iterate) = x*, or x* = the MAP point by L-BFGS (map.optimizer lbfgs)
//   -> sampler around x*; after burn-in, one sample every `thin`
//   steps: BatchNorm recalibration, test prediction, running average.
// Outputs go to <run_dir>/member_NNN/ (Note [Run directory] in run.h), among
// them the flat parameters (models::FlatParameters order, float32) at
// initialisation, after Adam and at x*: init_, adam_ and swa_weights.npy; the
// status file is written last, so a member without one did not finish. A
// member checkpoints at every epoch end and resumes from its checkpoint when
// run again (Note [Member checkpoints] in member.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "models/registry.h"
#include "samplers/langevin_options.h"
#include "src/config/config.h"

namespace bnn::pipeline {

struct MemberContext {
  const config::Config& config;
  const data_loaders::Dataset& data;
  torch::Device device;
  std::filesystem::path run_dir;
};

struct MemberOutcome {
  int64_t index = 0;
  bool ok = false;
  std::string message;  // diagnostic when !ok
};

std::filesystem::path member_dir(const std::filesystem::path& run_dir, int64_t index);

// The point estimates a member of `config` writes, in order, each as
// <name>_weights.npy and <name>_probs.npy: "adam" and "swa" (x* by SWA), or
// "map" alone when map.optimizer is lbfgs (x* by L-BFGS).
std::vector<std::string> point_estimates(const config::Config& config);

// The model a member of `config` trains on `data`.
models::ModelSpec model_spec(const config::Config& config, const data_loaders::Dataset& data);

// The sampler options of `config` for a model of `num_parameters` parameters
// trained on `num_batches` batches (auto values resolved: csghmc's cycle
// length, whether the control-variate anchor gradients are stored).
samplers::LangevinOptions langevin_options(const config::Config& config, int64_t num_batches,
                                           int64_t num_parameters);

// Note [BatchNorm]: recalibrates the model on the first `bn_batches` training
// batches, then returns its test-set probabilities (N x K, float32).
torch::Tensor predict_test_probabilities(models::Classifier& model, const data_loaders::Partition& partition,
                                         const data_loaders::Split& test, int64_t bn_batches);

// Runs member `index`, from its checkpoint if one exists. Never throws for a
// failure of the member itself (non-finite loss or parameters, a numerical
// error): that is reported in the outcome and in the member's status.json, so
// other members can go on. I/O errors (full disk, unwritable directory) do
// throw; the last checkpoint written stays intact.
MemberOutcome run_member(const MemberContext& context, int64_t index);

}  // namespace bnn::pipeline
