// One ensemble member, end to end (DESIGN.md §1, §4):
//   Adam (lr decaying linearly to 0) -> SWA (constant lr, average of every
//   iterate) = x* -> sampler around x*; after burn-in, one sample every `thin`
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

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "models/registry.h"
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

// The model a member of `config` trains on `data`.
models::ModelSpec model_spec(const config::Config& config, const data_loaders::Dataset& data);

// Runs member `index`, from its checkpoint if one exists. Never throws for a
// failure of the member itself (non-finite loss or parameters, a numerical
// error): that is reported in the outcome and in the member's status.json, so
// other members can go on. I/O errors (full disk, unwritable directory) do
// throw; the last checkpoint written stays intact. With a process group only
// non-finite values fail the member; other errors throw (a rank that skipped
// ahead would mismatch the others' collectives), and so do communication
// errors (distributed::CommunicationError).
MemberOutcome run_member(const MemberContext& context, int64_t index);

}  // namespace bnn::pipeline
