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
#include "src/distributed/process_group.h"

namespace bnn::pipeline {

struct MemberContext {
  const config::Config& config;
  const data_loaders::Dataset& data;
  torch::Device device;
  std::filesystem::path run_dir;
  // Note [Data-parallel member]: with a process group, every rank runs the
  // same member from the same seeds, each rank's oracle evaluates its shard
  // of every minibatch and the gradients are all-reduced
  // (src/distributed/data_parallel_oracle.h); every rank predicts the whole
  // test set itself and only rank 0 writes files. The parameters are checked
  // to agree across ranks when the member starts and at every epoch end.
  distributed::ProcessGroup* group = nullptr;
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
// throw; the last checkpoint written stays intact. With a process group only
// non-finite values fail the member; other errors throw (a rank that skipped
// ahead would mismatch the others' collectives), and so do communication
// errors (distributed::CommunicationError).
MemberOutcome run_member(const MemberContext& context, int64_t index);

// Note [Perturbed chains] (the R-hat experiment of the SMS-UBU paper, Fig. 3;
// src/pipeline/rhat.h): member `index` trains its x* exactly as run_member()
// does (same seeds, same Adam and SWA outputs in its directory, so x* equals
// that member's x* in `bnn run` with the same config), then, instead of its
// sampling phase, runs `chains` chains of the configured sampler, one after
// the other. Chain c is the configured sampler built at x* (control-variate
// anchor and bounce box stay at x*, as in the paper) with its own seed, whose
// position is then moved to x* + rho z, z ~ N(0, I) drawn from a seed of its
// own; the first bounce folds any coordinate outside the box back into it.
// Both seeds are streams of derive_seed(member seed, 4) and c (Note [RNG
// streams]), so a chain depends on the member seed and c only. Chains record
// the loss the sampler computes at every step (no test predictions are made),
// per epoch and per `loss_every` steps. Checkpoints are neither read nor
// written. Deterministic given the seed, device and thread count.
struct ChainOptions {
  int64_t chains = 4;
  double rho = 0;          // standard deviation of the start's perturbation of x*
  int64_t loss_every = 0;  // also record the mean loss per this many steps (0: off)
};

struct ChainLosses {
  // Per sampling epoch: summed training cross-entropy / number of examples (as trace.csv).
  std::vector<double> epoch_loss;
  // Per window of loss_every steps (steps w k + 1 .. (w + 1) k, counted
  // across epochs): summed cross-entropy / examples in those batches.
  std::vector<double> window_loss;
  int64_t steps_per_epoch = 0;  // batches per epoch
};

// Throws for any failure, a non-finite loss included (the message names the chain).
std::vector<ChainLosses> run_member_chains(const MemberContext& context, int64_t index, const ChainOptions& options);

}  // namespace bnn::pipeline
