// One ensemble member, end to end (docs/design.md §1, §4):
//   Adam (lr decaying linearly to 0) -> SWA (constant lr, average of every
//   iterate) = x*, or x* = the MAP point by L-BFGS (map.optimizer lbfgs)
//   -> sampler around x*; after burn-in, one sample every `thin`
//   steps: BatchNorm recalibration, test prediction, running average.
// Outputs go to <run_dir>/member_NNN/ (Note [Run directory] in
// run_directory.h), among
// them the flat parameters (models::FlatParameters order, float32) at
// initialisation, after Adam and at x*: init_, adam_ and swa_weights.npy; the
// status file is written last, so a member without one did not finish. A
// member checkpoints at every epoch end and resumes from its checkpoint when
// run again (Note [Member checkpoints] in member_checkpoint.h).
//
// `Member` orchestrates; the work is in units of their own:
//   optimiser_phases.h   Adam, SWA and L-BFGS and their schedules
//   sampling_phase.h     the sampling loop and which states are retained
//   member_checkpoint.h  the member's resumable state and checkpoint format
//   fault_injection.h    the crash-and-resume tests' kill switch
//   rhat.h               perturbed chains from a member's x* (`bnn rhat`)
//   src/config/sampler_options.h  config -> sampler options
#pragma once

#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/gradient_oracle.h"
#include "samplers/sampler.h"
#include "src/config/config.h"
#include "src/distributed/data_parallel_oracle.h"
#include "src/distributed/process_group.h"
#include "src/io/file_lock.h"
#include "src/pipeline/divergence.h"
#include "src/pipeline/fault_injection.h"
#include "src/pipeline/member_checkpoint.h"
#include "src/pipeline/model_oracle.h"
#include "src/pipeline/ood.h"
#include "src/pipeline/phase_hooks.h"
#include "src/pipeline/run_directory.h"
#include "src/pipeline/stacked_group.h"
#include "src/runtime/deadline.h"

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
  // Note [Out-of-distribution sets] (ood.h): predicted at every point
  // estimate and retained sample; none when null.
  const std::vector<OodSet>* ood = nullptr;
  // Note [Time limit] (src/runtime/deadline.h): the member stops at an epoch
  // end, its checkpoint written, once an epoch would not end in time; none
  // when null.
  runtime::Deadline* deadline = nullptr;
  // Note [Stacked members in a run] (stacked_group.h): the member's
  // gradients are evaluated in this group's `slot`, together with the other
  // members on its device; its own model otherwise when null.
  StackedGroup* stacked = nullptr;
  int64_t slot = 0;
  // Note [Member locks] (src/io/file_lock.h): the member's lock, checked
  // before each write; a member whose lock file was deleted or replaced
  // stops without writing (outcome.lock_lost). Unchecked when null.
  const io::FileLock* lock = nullptr;
};

struct MemberOutcome {
  int64_t index = 0;
  bool ok = false;
  std::string message;  // diagnostic when !ok
  bool diverged = false;  // finished, but Note [Divergence check] fired
  bool stopped = false;   // !ok: the deadline or a signal stopped it at an epoch end (Note [Time limit])
  bool lock_lost = false;  // !ok: its lock file went (Note [Member locks]); nothing more was written
};

// The model a member of `config` trains on `data`.
models::ModelSpec model_spec(const config::Config& config, const data_loaders::Dataset& data);

// The model's probabilities (N x K, float32) on the inputs of `split`, as it
// stands (no recalibration).
torch::Tensor predict_split_probabilities(models::Classifier& model, const data_loaders::Split& split);

// Note [BatchNorm]: recalibrates the model on the first `bn_batches` training
// batches, then returns its test-set probabilities (N x K, float32).
torch::Tensor predict_test_probabilities(models::Classifier& model, const data_loaders::Partition& partition,
                                         const data_loaders::Split& test, int64_t bn_batches);

// Runs member `index`, from its checkpoint if one exists, until it finishes
// or context.deadline or a stop signal stops it (outcome.stopped). Never throws for a
// failure of the member itself (non-finite loss or parameters, a numerical
// error): that is reported in the outcome and in the member's status.json, so
// other members can go on. I/O errors (full disk, unwritable directory) do
// throw; the last checkpoint written stays intact. With a process group only
// non-finite values fail the member; other errors throw (a rank that skipped
// ahead would mismatch the others' collectives), and so do communication
// errors (distributed::CommunicationError).
MemberOutcome run_member(const MemberContext& context, int64_t index);

// Note [Rank 0's failures] (src/distributed/process_group.h): runs `work`
// where this process is rank 0 of `group`, or alone (a null group). In a
// data-parallel run every rank calls it at the same point, and a failure of
// rank 0's stops every rank at once: rank 0 with its own error, the others
// with distributed::StoppedWithRankZero naming `when` ("before training").
void on_rank_zero(distributed::ProcessGroup* group, const std::string& when, const std::function<void()>& work);

// LibTorch's out-of-memory message (a paragraph, worded differently by each
// release) as one line naming the device, the memory asked for, what was
// free and the card's total, and what to change: "out of memory on cuda:0:
// asked for 2.00 GiB, 1.05 GiB free of 79.19 GiB; ...". Empty where `what`
// is not an out-of-memory message. A member's failure reports it so.
std::string out_of_memory_line(const std::string& what, const std::string& device);

// Note [Time limit], Note [Stop signals]: thrown at an epoch end, after the
// checkpoint, where the deadline or a stop signal stops the member; what()
// says where ("after sample epoch 3"), reason() why ("SIGTERM", "the time
// limit"). run_member() reports it as outcome.stopped.
class MemberStopped : public std::runtime_error {
 public:
  MemberStopped(std::string reason, const std::string& where)
      : std::runtime_error(where), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// A member that does not finish: a non-finite loss or parameters (the
// message says where).
class NonFiniteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One member: its model, data order, oracle and state, and the phases run in
// order. run_member() is the way to run one; the class is public for the
// perturbed chains of `bnn rhat` (src/pipeline/rhat.h), which train x* like
// a member and then sample from it their own way.
class Member : private PhaseHooks {
 public:
  Member(const MemberContext& context, int64_t index);

  // Adam and SWA (or L-BFGS), then sampling, from the checkpoint if one exists.
  void run();
  // Adam and SWA (or L-BFGS) only, from the start, leaving the parameters at
  // x*; with `resume`, from the checkpoint if one exists. Returns where
  // sampling starts.
  Position train_anchor(bool resume);

  // Removes the checkpoint once the member's status says done.
  void discard_checkpoint() const;

  int64_t index() const { return index_; }
  uint64_t seed() const { return seed_; }
  int64_t samples() const { return state_.samples; }
  // After run(): Note [Divergence check] (src/pipeline/divergence.h).
  std::optional<Divergence> divergence() const;
  // After run(): the sampler's warning about its samples (samplers/sampler.h), or empty.
  std::string sampler_warning() const { return state_.sampler ? state_.sampler->warning() : std::string(); }
  int64_t batches_per_epoch() const { return partition_.num_batches(); }
  int64_t thin_steps() const;
  // MemberState::arithmetic: what decided its rounding, oldest first.
  const std::vector<std::string>& arithmetic() const { return state_.arithmetic; }
  const config::Config& config() const { return cfg_; }
  const data_loaders::Partition& partition() const { return partition_; }
  models::FlatParameters& flat() { return *flat_; }
  // The configured sampler at `anchor`, where the parameters must be.
  std::unique_ptr<samplers::Sampler> make_sampler(const torch::Tensor& anchor, uint64_t seed);
  // PhaseHooks::check_finite, for callers that run their own loops.
  void check_epoch(const std::string& phase, int64_t epoch, double loss) { check_finite(phase, epoch, loss); }

 private:
  // Device, CPU threads, data-parallel ranks and design: what decides this
  // process's rounding for the member (MemberState::arithmetic).
  std::string arithmetic_now() const;
  // PhaseHooks
  void check_finite(const std::string& phase, int64_t epoch, double loss) override;
  void log_epoch(const std::string& phase, int64_t epoch, int64_t epochs, double loss, double accuracy, double rate,
                 Clock::time_point start) override;
  void save_checkpoint(Position at, torch::optim::Adam* adam) override;
  torch::Tensor predict() override;
  double accuracy(const torch::Tensor& probs) const override;
  void write_npy(const std::filesystem::path& name, const torch::Tensor& t) const override;
  void store_sample(int64_t step) override;
  void write_ood(const std::filesystem::path& name, torch::ScalarType dtype) override;

  // Whether this process writes the member's files: rank 0 only (Note
  // [Data-parallel member]), and only while the member's lock is still its
  // own (Note [Member locks]: throws io::LockLost otherwise).
  bool writes() const;
  // Runs `write` where writes() says this process writes. Note [Rank 0's
  // failures] (src/distributed/process_group.h): in a data-parallel run a
  // failure is kept, and nothing more written, until the ranks next agree
  // (agree_on_writes): at the member's start, at each epoch end, at its end.
  void write_files(const std::function<void()>& write) const;
  // With a process group, every rank throws where rank 0 failed a write.
  void agree_on_writes();
  // An output file at `path` (rank 0 only: Note [Data-parallel member]).
  void save_npy(const std::filesystem::path& path, const torch::Tensor& t) const;
  // Note [Data-parallel member]: throws unless every rank holds the same parameters.
  void check_ranks_agree(const std::string& where);
  // Note [Data-parallel member]: throws unless every rank sees the same checkpoint (or none).
  void check_ranks_see_the_checkpoint(bool resume);
  std::filesystem::path checkpoint_path() const { return dir_ / kCheckpointFile; }

  const MemberContext& ctx_;
  const config::Config& cfg_;
  int64_t index_;
  uint64_t seed_;
  std::filesystem::path dir_;
  data_loaders::Partition partition_;
  std::shared_ptr<models::Classifier> model_;
  std::unique_ptr<models::FlatParameters> flat_;
  std::unique_ptr<ModelOracle> model_oracle_;  // this rank's shard of each batch with a process group
  std::unique_ptr<distributed::DataParallelOracle> parallel_oracle_;
  std::unique_ptr<StackedOracle> stacked_oracle_;  // in ctx.stacked (Note [Stacked members in a run])
  samplers::GradientOracle* oracle_ = nullptr;  // the one that gives full-batch sums
  FaultInjection faults_;
  bool writer_;
  mutable std::exception_ptr failed_write_;  // Note [Rank 0's failures]: kept until agree_on_writes()
  mutable int failed_write_code_ = 0;        // its exit code (io::exit_code_of)
  MemberState state_;
  double last_epoch_seconds_ = 0.0;  // of the epoch log_epoch() last logged
};

}  // namespace bnn::pipeline
