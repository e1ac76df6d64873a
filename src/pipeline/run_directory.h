// The layout of a run directory: every file name bnn writes into one, and the
// questions asked of one (which members finished, what x* is called). Writers
// (`bnn run`, the members) and readers (`bnn evaluate`, `predict`, `hessian`)
// take their paths from here.
//
// Note [Run directory]:
//   <run>/bnn.json             the manifest, written first: what the folder is
//                              (a run, or an evaluation folder) and which
//                              experiment it holds (Note [Run ownership])
//   <run>/config.yaml          resolved config (all keys, auto values resolved)
//   <run>/labels.npy           test labels (int64)
//   <run>/preprocess.json      model and image preprocessing, for `bnn predict`
//                              (Note [Preprocessing] in src/pipeline/preprocess.h)
//   <run>/model.pt             model.name torchscript: a copy of model.path, the
//                              module every member, `predict` and `hessian` use
//                              (a run refuses a model.path with other contents)
//   <run>/member_NNN/          one member (NNN = its index, 3 digits or more):
//     init_weights.npy         flat parameters (models::FlatParameters order,
//                              float32) at initialisation
//     <p>_weights.npy,         the member's point estimates p (point_estimates():
//     <p>_probs.npy            adam and swa, x* = swa; with map.optimizer lbfgs
//                              map alone, x* = map): flat parameters and test
//                              probabilities (float32 N x K)
//     <x*>_buffers.npy         BatchNorm statistics at x* (Note [Stored samples])
//     bayes_probs.npy          mean test probabilities of the retained samples
//     samples/step_XXXXXXXX.npy   test probabilities of the sample (evaluation.sample_probs_dtype)
//                              retained after sampler step XXXXXXXX
//     samples/{weights,buffers}_XXXXXXXX.npy   with evaluation.save_sample_weights
//                              (Note [Stored samples] in src/pipeline/stored_weights.h)
//     ood/<name>/              evaluation.ood: <p>_probs.npy and samples/step_XXXXXXXX.npy
//                              of OOD set <name> (Note [Out-of-distribution sets] in ood.h)
//     trace.csv                phase,epoch,loss,test_accuracy,lr_or_h,seconds
//     checkpoint.pt            while unfinished (Note [Member checkpoints])
//     lock                     held by the process training the member (Note
//                              [Member locks] in src/io/file_lock.h)
//     status.json              written last: done or failed, with the seed,
//                              samples, batches_per_epoch and thin_steps, and
//                              how it was trained: device, stacked_slots (with
//                              --member-design stacked), data_parallel_ranks of
//                              the process that finished it, and every
//                              arithmetic it ran under (Note [Member checkpoints])
//     hessian.json             written by `bnn hessian`, never over an earlier one
//   <run>/metrics.json, metrics.csv, metrics.txt, metrics_ood.csv, uncertainty.json, report.md, report.html,
//   <run>/figures/             outputs of `bnn evaluate` (src/pipeline/evaluate.h)
// Members selected with --members may run as separate processes (or hosts
// sharing the directory); each run evaluates whatever members have finished.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <torch/torch.h>

#include "src/config/config.h"
#include "src/io/file_lock.h"

namespace bnn::pipeline {

inline constexpr const char* kManifestFile = "bnn.json";
inline constexpr const char* kConfigFile = "config.yaml";
inline constexpr const char* kLabelsFile = "labels.npy";
inline constexpr const char* kPreprocessFile = "preprocess.json";
inline constexpr const char* kModelFile = "model.pt";
inline constexpr const char* kTraceFile = "trace.csv";
inline constexpr const char* kStatusFile = "status.json";
inline constexpr const char* kCheckpointFile = "checkpoint.pt";
inline constexpr const char* kLockFile = "lock";
inline constexpr const char* kEvaluateLockFile = "evaluate.lock";  // Note [Evaluation lock]
inline constexpr const char* kRhatLockFile = "rhat.lock";          // held by the `bnn rhat` writing a folder
inline constexpr const char* kRhatChainsFile = "chains.json";  // member_NNN/'s saved repeat (rhat.h)
inline constexpr const char* kBayesProbsFile = "bayes_probs.npy";
inline constexpr const char* kSamplesDir = "samples";

std::filesystem::path member_dir(const std::filesystem::path& run_dir, int64_t index);
// The seed of member `index` of a run with `config` (every stream of the
// member derives from it: Note [RNG streams]).
uint64_t member_seed(const config::Config& config, int64_t index);

// The point estimates a member of `config` writes, in order, each as
// <name>_weights.npy and <name>_probs.npy: "adam" and "swa" (x* by SWA), or
// "map" alone when map.optimizer is lbfgs (x* by L-BFGS).
std::vector<std::string> point_estimates(const config::Config& config);
// The last of them: the name of x* ("swa" or "map").
std::string anchor_point(const config::Config& config);

// <member>/<point>_weights.npy, <point>_buffers.npy, <point>_probs.npy.
std::filesystem::path point_weights_path(const std::filesystem::path& member, const std::string& point);
std::filesystem::path point_buffers_path(const std::filesystem::path& member, const std::string& point);
std::filesystem::path point_probs_path(const std::filesystem::path& member, const std::string& point);
// <member>/samples/step_XXXXXXXX.npy: the test probabilities retained after `step`.
std::filesystem::path sample_probs_path(const std::filesystem::path& member, int64_t step);

// Whether members of configs `a` and `b` may share a run directory: they may
// use different devices, thread counts, checkpointing, sample weight storage
// and divergence thresholds (none of them changes a result); every other key
// must agree.
bool same_experiment(const config::Config& a, const config::Config& b);

// FNV-1a, 64 bits, of `bytes` (a manifest's "experiment", what the ranks of a
// distributed run compare).
uint64_t fnv1a(std::string_view bytes);

// `config`'s experiment keys, key -> value, that the ranks of a distributed
// run must agree on: all but the paths each host may keep its own copy at
// (data.dir, model.path, evaluation.ood's sets, which only rank 0 scores).
std::map<std::string, std::string> rank_agreement_settings(const config::Config& config);

// The experiment keys where `a` and `b` differ, as "key: A in the first, B in
// the second; ...".
std::string experiment_differences(const config::Config& a, const config::Config& b);

// Note [Run ownership]
// A folder bnn writes results into says what it is in bnn.json, written
// (atomically) before anything else: {"bnn": "run", "evaluation" or "rhat",
// "format": 1, "experiment": 16 hex digits, "settings": {key: value}} with
// every experiment key (same_experiment). Two experiments are the same when
// every key agrees; a key the manifest lacks (added by a later bnn) agrees
// when it has its default, so that old runs stay usable; "experiment" hashes
// the keys that differ from the defaults, a short name for logs. bnn refuses:
//  - `bnn run` into a non-empty folder without bnn.json (the user's own
//    files would be overwritten by metrics.json, report.md, ...), except a
//    run directory of an older bnn (config.yaml, same experiment), which is
//    adopted;
//  - `bnn run` into a run directory of another experiment, even when its
//    config.yaml is gone (the manifest's settings name the keys that
//    differ). `bnn run` loads the data set and builds the model before it
//    claims a new directory, so a run that fails there leaves nothing
//    behind to refuse the corrected config;
//  - `bnn evaluate --out` onto anything but a new or empty folder, the one
//    run it evaluates, or an evaluation folder of the same experiment;
//  - `bnn rhat --out` onto anything but a new or empty folder, an rhat
//    folder whose `bnn rhat` failed or was stopped (no summary.json) before
//    it saved a repeat (no member_NNN/chains.json), or an
//    rhat folder of the same experiment and the same --chains, --repeats,
//    --rho and --loss-every (kept in its settings as rhat.chains, ...); an
//    rhat folder of a bnn before manifests is read from its config.yaml and
//    summary.json. Also while another `bnn rhat` holds the folder's
//    rhat.lock (the folder is checked again under the lock). An rhat folder
//    holds config.yaml and member_NNN/ as a run does: `bnn rhat --out RUN`
//    once overwrote a run's config.yaml and trace.csv. `bnn rhat` loads the
//    data set before it claims a folder, as `bnn run` does;
//  - any command's --out that is a member_* folder of a run (an evaluation
//    or a run there would mix its files with the member's), and `bnn run`
//    of members whose member_NNN/ holds such a folder's bnn.json;
//  - `bnn run` into a folder with members whose labels.npy is not the test
//    labels of the data it loaded (check_same_test_labels).
// A run checks the folder again before each member it starts and before it
// evaluates (run_directory_lost): a folder deleted while it ran, or deleted
// and taken by another experiment, receives nothing more from it (exit 3).
// Commands started at the same moment on one new folder may all find it
// empty. The first bnn.json is therefore created exclusively
// (io::create_file_atomically, a link(2) of its temporary file): one
// command's manifest stands, and the others check themselves against it,
// so two `bnn run`s of one experiment share the folder while a `bnn run`
// and a `bnn rhat` (or runs of two experiments) do not.

// Whether `bnn run` with `config` may use `dir` (resume: `bnn run --resume`,
// for the wording of errors); throws ConfigError saying what to do instead.
void check_run_directory(const std::filesystem::path& dir, const config::Config& config, bool resume);

// Why the run directory `dir`, which this process claimed for `config`, is no
// longer that run's ("the folder is gone", "it holds another experiment now
// (...)"), or nullopt if it still is. A run checks it before each member and
// before evaluating: a folder deleted, or taken by another experiment, while
// it ran must not receive its next member (Note [Run ownership]).
std::optional<std::string> run_directory_lost(const std::filesystem::path& dir, const config::Config& config);

// Throws ConfigError if the member folder of one of `members` in `dir` holds
// another bnn folder (a bnn.json: an evaluation's, a run's, bnn rhat's).
void check_members_are_members(const std::filesystem::path& dir, const std::vector<int64_t>& members);

// Throws ConfigError if the run directory `dir`'s config.yaml, loaded as
// `config`, is not the experiment its bnn.json records (an edited
// config.yaml would score or continue the members under settings they were
// not trained with). Nothing to check in a folder without a run's manifest.
void require_recorded_experiment(const std::filesystem::path& dir, const config::Config& config);

// Throws ConfigError if the run directory `dir` has members and its
// labels.npy is not `labels`: the data at data.dir changed since they were
// trained (another copy of it on another node, a file replaced), and writing
// the new labels would score them against a test set they were not scored on.
void check_same_test_labels(const std::filesystem::path& dir, const torch::Tensor& labels);

// check_run_directory, then creates `dir` and writes bnn.json and config.yaml
// (config.yaml only where the folder was new or has none: the run's first
// command's, operational keys and all).
void claim_run_directory(const std::filesystem::path& dir, const config::Config& config, bool resume);

// Prepares `out` for the tables of `bnn evaluate` over `run_dirs` (whose
// experiment is `config`); throws ConfigError if `out` holds anything else.
void claim_evaluation_directory(const std::filesystem::path& out, const std::vector<std::filesystem::path>& run_dirs,
                                const config::Config& config);
// The text of `out`'s bnn.json naming `run_dirs`, or nullopt where `out` is
// the one run's own folder (its manifest is the run's). bnn evaluate writes
// it under its lock with the tables (Note [Staged writes]), so that it names
// the runs of the tables beside it.
std::optional<std::string> evaluation_manifest(const std::filesystem::path& out,
                                               const std::vector<std::filesystem::path>& run_dirs,
                                               const config::Config& config);

// Prepares `out` for `bnn rhat` of `config` with `options` (its own settings,
// "rhat.chains" -> "4", ...): throws ConfigError if `out` holds anything else
// or another `bnn rhat` is writing there; otherwise creates `out`, takes its
// rhat.lock and writes bnn.json. The lock is held until the result dies.
io::FileLock claim_rhat_directory(const std::filesystem::path& out, const config::Config& config,
                                  const std::map<std::string, std::string>& options);

// Note [Output files]: `bnn predict`, `bias` and `coupled-bias` write one
// file (--out FILE). They overwrite a file only if it is their own earlier
// output: a CSV whose first line begins with `csv_header`, or with a .json
// path and `json_keys` given, a JSON object holding each of those keys.
// Anything else (a run's metrics.csv, a user's notes, a folder) is refused
// with a ConfigError naming the file and `command`, before any work starts.
void check_output_file(const std::filesystem::path& path, const std::string& command, const std::string& csv_header,
                       const std::vector<std::string>& json_keys = {});

// Whether `dir` has a readable bnn.json of `kind` ("run", "evaluation", "rhat").
bool holds_manifest_of(const std::filesystem::path& dir, const std::string& kind);

// What `dir` holds when its manifest says it is not a run ("the R-hat chains
// of `bnn rhat`", "the tables of `bnn evaluate`"); nullopt for a run, or a
// folder without a readable manifest.
std::optional<std::string> other_than_run(const std::filesystem::path& dir);

// Whether the member directory's status.json says "done".
bool member_finished(const std::filesystem::path& member);

// Member directories of `run_dir` whose status.json says "done", sorted.
std::vector<std::filesystem::path> finished_members(const std::filesystem::path& run_dir);

}  // namespace bnn::pipeline
