// `bnn run`: members of one configuration into one run directory, then the
// ensemble table over every finished member found there.
//
// The run directory's layout: Note [Run directory] in
// src/pipeline/run_directory.h.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "src/config/config.h"
#include "src/distributed/process_group.h"
#include "src/evaluation/ensemble.h"
#include "src/pipeline/run_directory.h"
#include "src/pipeline/throughput.h"
#include "src/runtime/deadline.h"
#include "src/runtime/device_streams.h"

namespace bnn::pipeline {

// How the members trained at once on a device share it.
enum class MemberDesign {
  kStreams,  // each its own model, on its own CUDA stream (Note [Members per device])
  kStacked,  // their gradients evaluated as one stacked model (Note [Stacked members in a run])
};

struct RunOptions {
  std::filesystem::path run_dir;
  std::vector<int64_t> members;  // empty = all of 0..M-1
  // One worker per entry, each taking the next unfinished member: "cuda:0",
  // "cuda:1", ... (or "cpu" entries). Empty = one worker on run.device.
  std::vector<std::string> devices;
  // A data-parallel run (docs/distributed.md): every rank of `group` runs the
  // same members one after the other, each member data-parallel over the
  // ranks (Note [Data-parallel member] in member.h). Rank 0 chooses the
  // members to run and alone writes files. Needs a single device.
  distributed::ProcessGroup* group = nullptr;
  // Members trained at once on each device (Note [Members per device] in
  // src/runtime/device_streams.h); 0 = auto: on a CUDA device as many as
  // fit in 90% of its free memory by estimate_member_memory, at most
  // kMaxAutoMembersPerDevice; on the CPU auto_members_per_cpu.
  int64_t members_per_device = 1;
  MemberDesign design = MemberDesign::kStreams;
  // `bnn run --resume`: the directory must hold this experiment already
  // (only the wording of the error differs).
  bool resume = false;
  // Note [Time limit] (src/runtime/deadline.h): members stop at an epoch end
  // once an epoch would not end in time; none = no limit.
  runtime::Deadline* deadline = nullptr;
  // With a deadline: start a member only where a whole member would end in
  // time (Deadline::allows_a_member, with member_epochs), not where one
  // epoch would.
  bool whole_members = false;
  // With a deadline and members_per_device auto: K from this measured table
  // for the most members that end whole in the time left (Note [Members for
  // a time limit] in src/pipeline/throughput.h), at most what memory holds.
  std::optional<ThroughputTable> throughput;
};

// The epochs of a member's whole schedule: Adam, SWA and sampling, and one
// for an L-BFGS maximum a posteriori phase (which ends in one checkpoint).
int64_t member_epochs(const config::Config& config);

// Most members `auto` puts on one GPU at a time (docs/performance.md).
inline constexpr int64_t kMaxAutoMembersPerDevice = 8;
// What a member may take on its device beyond its state vectors: the
// network's activations for one batch, cuDNN's workspace, allocator slack.
inline constexpr int64_t kActivationAllowanceBytes = int64_t{2} << 30;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A member's device memory as bnn estimates it for --members-per-device.
struct MemberMemory {
  int64_t parameters = 0;
  int64_t state_bytes = 0;  // parameter-sized vectors and stored anchor gradients
  int64_t total_bytes = 0;  // state_bytes + kActivationAllowanceBytes
};
// With the stacked design each member also has its slot of the group's
// buffers: parameters, gradient and position table (16 bytes a parameter).
MemberMemory estimate_member_memory(const config::Config& config, const data_loaders::Dataset& data,
                                    MemberDesign design = MemberDesign::kStreams);

// Members per GPU for `auto`: as many as fit in 90% of `device`'s free
// memory, at least 1, at most kMaxAutoMembersPerDevice and members_to_run;
// 1 where the free memory is unknown.
int64_t auto_members_per_device(const MemberMemory& member, const std::optional<runtime::DeviceMemory>& device,
                                int64_t members_to_run);

// Members of `member`'s size that fit in 90% of `free_bytes`, at least 1.
int64_t members_that_fit(const MemberMemory& member, int64_t free_bytes);

// Members on the CPU for `auto`: two at a time where LibTorch has two
// threads or more (`threads`) and both fit in 90% of the host's `available`
// memory, else one (also where the memory is unknown). Each worker runs its
// loops on all `threads` threads, so two members oversubscribe the CPUs
// twice over: measured on two cores, where a member's small operations leave
// threads idle that the other member's fill, the demo ran 1.9x as fast
// (docs/performance.md, "The designs side by side"); more at a time was not
// measured. Members computed together are bit-identical to members computed
// one by one on the CPU.
inline constexpr int64_t kMaxAutoMembersPerCpu = 2;
int64_t auto_members_per_cpu(const MemberMemory& member, int64_t threads, std::optional<int64_t> available,
                             int64_t members_to_run);

// "all" -> every visible CUDA device (an error without one); otherwise a
// comma-separated list of devices ("cuda:0,cuda:2", "cpu,cpu"). Throws
// ConfigError naming the bad entry.
std::vector<std::string> parse_device_list(const std::string& text);

// "auto" -> 0, "K" -> K >= 1. Throws ConfigError naming the text.
int64_t parse_members_per_device(const std::string& text, std::string_view option = "--members-per-device");

// Members trained at once on one `device` as `bnn run` chooses them for a
// device entry from options.members_per_device (0 = auto), .throughput and
// .deadline, each member of `epochs` epochs (bnn rhat's repeats at once).
// What the log calls the things trained at once, and the option that sets them.
struct AtOnceNames {
  std::string_view option = "--members-per-device";
  std::string_view noun = "member";
};
int64_t members_at_once(const config::Config& config, const data_loaders::Dataset& data, torch::Device device,
                        const RunOptions& options, int64_t members_to_run, int64_t epochs,
                        const AtOnceNames& names = {});

// The table of a command's `--throughput FILE`, where the command has a
// time limit and leaves the number at once (`at_once`, names.option) to
// auto, with a finished run of `design` to choose from. Throws ConfigError
// naming what is missing.
ThroughputTable throughput_option(const std::string& file, bool time_limit, int64_t at_once, std::string_view design,
                                  const AtOnceNames& names = {});

// "streams" or "stacked". Throws ConfigError naming the text.
MemberDesign parse_member_design(const std::string& text);
// What parse_member_design reads: "streams" or "stacked".
std::string_view member_design_name(MemberDesign design);

// "540", "540s", "9m", "1.5h", "11h45m" -> seconds (> 0). Throws ConfigError naming the text.
double parse_time_limit(const std::string& text);

// "3", "0-3", "0,2,5-7" -> indices, in the order given, each once ("0,0-1"
// -> 0, 1). Throws ConfigError naming the text.
std::vector<int64_t> parse_member_list(const std::string& text, int64_t num_members);

// What a list of indices selects, for its errors: the option, the things
// listed and the setting that counts them.
struct IndexListNames {
  std::string_view option = "--members";
  std::string_view things = "members";
  std::string_view count = "run.members";
};
// parse_member_list with other names in its errors (bnn rhat's --only of
// its --repeats, say).
std::vector<int64_t> parse_index_list(const std::string& text, int64_t count, const IndexListNames& names);

// "auto" -> cuda if available else cpu. Throws ConfigError for an
// unavailable device.
torch::Device resolve_device(const std::string& name);

// The data set of `config` (data.*) on `device`.
data_loaders::Dataset load_dataset(const config::Config& config, torch::Device device);

// Builds the model of `config` for `data` once, so that one that cannot be
// built (model.hidden too wide to allocate, say) fails before any work,
// naming the keys, rather than as every member's failure. Returns whether it
// has BatchNorm layers. Throws ConfigError.
bool check_model_builds(const config::Config& config, const data_loaders::Dataset& data);

// Throws ConfigError, naming data.batch_size, where a batch, or with
// --distributed over `processes` a process's share of one, would hold 1
// example for a bnn model with BatchNorm (`batch_norm`): its BatchNorm1d
// needs 2 in training. Checked before a run folder exists, as the next.
void check_batch_norm_batches(const config::Config& config, bool batch_norm, int64_t processes);

// Throws ConfigError naming the key where sampling with `num_batches`
// batches an epoch would keep no sample (sampler.thin beyond the steps after
// burn-in), would keep obabo's proposals inside a Metropolis-Hastings block
// (sampler.mh_block not dividing the steps between samples and the
// burn-in's), or would store no sample's weights
// (evaluation.sample_weights_every beyond the samples kept).
void check_retained_samples(const config::Config& config, int64_t num_batches);

// Runs the selected members (on several devices at once with
// options.devices; the dataset is loaded once per distinct device). Returns
// the process exit code: 0 if every selected member finished, 3 if some
// failed (their diagnostics are logged; metrics are still written),
// runtime::kExitTimeLimit if options.deadline or a stop signal left members
// unfinished, or a signal came before the evaluation (no metrics written:
// Note [Time limit], Note [Stop signals] in src/runtime/stop_signal.h).
int run(const config::Config& config, const RunOptions& options);

// `bnn evaluate` of `run_dir` into itself with default options (evaluate.h).
std::vector<evaluation::EnsembleRow> evaluate_run(const std::filesystem::path& run_dir);

}  // namespace bnn::pipeline
