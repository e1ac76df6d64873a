#include "src/pipeline/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "data_loaders/npy.h"
#include "src/config/config.h"
#include "src/evaluation/diagnostics.h"
#include "src/evaluation/figures.h"
#include "src/evaluation/html.h"
#include "src/evaluation/ood.h"
#include "src/evaluation/report.h"
#include "src/evaluation/uncertainty.h"
#include "src/io/atomic_file.h"
#include "src/io/file_lock.h"
#include "src/io/npy.h"
#include "src/pipeline/divergence.h"
#include "src/pipeline/ood.h"
#include "src/pipeline/preprocess.h"
#include "src/pipeline/run_directory.h"
#include "src/runtime/stop_signal.h"

namespace bnn::pipeline {
namespace {

using config::ConfigError;

// The ensemble methods of a run: its point estimates (member.h), then "bayes".
std::vector<std::string> methods_of(const config::Config& config) {
  std::vector<std::string> methods = point_estimates(config);
  methods.push_back("bayes");
  return methods;
}

void require_file(const std::filesystem::path& path, const std::string& what) {
  const std::filesystem::path dir = path.parent_path();
  if (!std::filesystem::exists(dir)) throw ConfigError(fmt::format("{} does not exist", dir.string()));
  if (!std::filesystem::is_directory(dir)) {
    throw ConfigError(fmt::format("{} is a file, not a bnn run directory", dir.string()));
  }
  if (const auto other = other_than_run(dir)) {
    throw ConfigError(fmt::format("{} holds {}, not a run; bnn evaluate scores run directories", dir.string(), *other));
  }
  if (!std::filesystem::exists(path)) {
    // bnn run writes bnn.json first, then config.yaml (Note [Run ownership]).
    const bool starting = std::filesystem::exists(path.parent_path() / kManifestFile);
    throw ConfigError(fmt::format("{} is not a bnn run directory: {} missing{}", path.parent_path().string(), what,
                                  starting ? " (its bnn.json is there: a run that is starting, or a damaged one; "
                                             "try again in a moment)"
                                           : ""));
  }
}

// The stored samples of a member, (step, file) sorted by step.
std::vector<std::pair<int64_t, std::filesystem::path>> stored_samples(const std::filesystem::path& member) {
  std::vector<std::pair<int64_t, std::filesystem::path>> out;
  const auto dir = member / kSamplesDir;
  if (!std::filesystem::exists(dir)) return out;
  const std::regex name("^step_(\\d+)\\.npy$");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(file, m, name)) out.emplace_back(std::stoll(m[1]), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// trace.csv (its text `text`), checked line by line: evaluation takes losses from it.
evaluation::LossTrace read_trace(const std::filesystem::path& member, const std::string& text) {
  const auto path = member / kTraceFile;
  evaluation::LossTrace trace;
  trace.member = member.filename().string();
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  if (line != "phase,epoch,loss,test_accuracy,lr_or_h,seconds") {
    throw ConfigError(fmt::format("{}: line 1 is not the header phase,epoch,loss,test_accuracy,lr_or_h,seconds",
                                  path.string()));
  }
  for (int64_t number = 2; std::getline(in, line); ++number) {
    std::vector<std::string> fields;
    std::istringstream row(line);
    for (std::string f; std::getline(row, f, ',');) fields.push_back(f);
    double loss = 0;
    const bool known_phase = !fields.empty() && (fields[0] == "adam" || fields[0] == "swa" || fields[0] == "map" ||
                                                 fields[0] == "sample");
    size_t used = 0;
    bool number_ok = fields.size() == 6;
    if (number_ok) {
      try {
        loss = std::stod(fields[2], &used);
        number_ok = used == fields[2].size();
      } catch (const std::exception&) {
        number_ok = false;
      }
    }
    if (!known_phase || !number_ok) {
      throw ConfigError(fmt::format("{}: line {} is not a trace row (phase,epoch,loss,test_accuracy,lr_or_h,seconds "
                                    "with phase adam, swa, map or sample): '{}'",
                                    path.string(), number, line));
    }
    trace.phase.push_back(fields[0]);
    trace.loss.push_back(loss);
  }
  return trace;
}

// Test probabilities from `file`: rows x classes (classes < 0: any, set from
// the file), finite, in [0, 1], rows summing to 1 (to 1e-2, float16 files
// included).
// `of_test` false: probabilities of an OOD set, whose row count is not in
// labels.npy (rows < 0: any).
torch::Tensor read_probabilities(const std::filesystem::path& file, int64_t rows, int64_t& classes,
                                 bool of_test = true) {
  std::error_code ec;
  if (!of_test && !std::filesystem::exists(file, ec)) {
    throw ConfigError(fmt::format("{} missing: the member did not predict this OOD set (made before evaluation.ood "
                                  "named it?)",
                                  file.string()));
  }
  const torch::Tensor p = data_loaders::read_npy(file);
  if (p.dim() != 2 || (rows >= 0 && p.size(0) != rows) || (classes >= 0 && p.size(1) != classes)) {
    throw ConfigError(fmt::format("{}: probabilities of shape [{}], expected [{}, {}] ({})", file.string(),
                                  fmt::join(p.sizes(), ", "), rows >= 0 ? std::to_string(rows) : "examples",
                                  classes >= 0 ? std::to_string(classes) : "classes",
                                  of_test ? fmt::format("{} test labels in {}", rows, kLabelsFile)
                                          : "as the member's other predictions of this OOD set"));
  }
  if (!p.is_floating_point()) throw ConfigError(fmt::format("{}: probabilities must be floats", file.string()));
  const torch::Tensor d = p.to(torch::kDouble);
  if (!torch::isfinite(d).all().item<bool>()) {
    throw ConfigError(fmt::format("{}: NaN or infinite probabilities", file.string()));
  }
  const torch::Tensor outside = torch::logical_or(d < 0, d > 1).nonzero();
  if (outside.size(0) > 0) {
    const int64_t row = outside[0][0].item<int64_t>(), column = outside[0][1].item<int64_t>();
    throw ConfigError(fmt::format("{}: not probabilities: row {} holds {} for class {} (entries lie in [0, 1])",
                                  file.string(), row, d[row][column].item<double>(), column));
  }
  const torch::Tensor off = (d.sum(1) - 1).abs();
  if (const int64_t row = off.argmax().item<int64_t>(); off[row].item<double>() > 1e-2) {
    throw ConfigError(fmt::format("{}: not probabilities: row {} sums to 1 {:+.3g} (rows sum to 1, to 1e-2)",
                                  file.string(), row, d[row].sum().item<double>() - 1));
  }
  classes = p.size(1);
  return p;
}

// What evaluation used of one member.
struct MemberData {
  std::filesystem::path dir;
  std::map<std::string, torch::Tensor> point;  // point estimate -> its test probabilities
  torch::Tensor bayes;
  evaluation::MixtureAccumulator bayes_draws;  // its selected samples (empty if none stored)
  // Note [Out-of-distribution sets], per set: the point estimates' probabilities and the selected samples.
  std::map<std::string, std::map<std::string, torch::Tensor>> ood_point;
  std::map<std::string, evaluation::MixtureAccumulator> ood_bayes;
  int64_t samples = 0;
  int64_t float16_samples = 0;  // of bayes_draws (Note [Stored sample probabilities])
  evaluation::LossTrace trace;
  std::string diverged;  // status.json's reason, if the chain diverged
  std::string sampler_warning;  // status.json's (samplers/sampler.h), if any
  std::vector<std::string> arithmetic;  // status.json's (Note [Member checkpoints]); empty from an older bnn
};

struct Selection {
  std::vector<std::string> members;
  std::optional<int64_t> burn_in;
  int64_t thin = 1;
  bool recompute = false;       // Bayesian ensembles from stored samples
  bool draws_are_samples = true;  // Bayesian uncertainty over samples (else over members)
};

MemberData load_member(const std::filesystem::path& dir, const config::Config& config, const Selection& selection,
                       const torch::Tensor& labels, int64_t& classes) {
  const int64_t rows = labels.size(0);
  MemberData m;
  m.dir = dir;
  for (const std::string& method : point_estimates(config)) {
    m.point[method] = read_probabilities(point_probs_path(dir, method), rows, classes);
  }
  const std::string trace_text = io::read_file(dir / kTraceFile);
  m.trace = read_trace(dir, trace_text);
  const auto stored = stored_samples(dir);
  const auto status = nlohmann::json::parse(io::read_file(dir / kStatusFile));  // member_finished() checked it
  // status.json's counts, or -1 where it has none (an older bnn).
  const auto count = [&](const char* key) -> int64_t {
    if (!status.contains(key)) return -1;
    if (!status[key].is_number_integer() || status[key].get<int64_t>() < 0) {
      throw ConfigError(fmt::format("{}: \"{}\" is not a count", (dir / kStatusFile).string(), key));
    }
    return status[key].get<int64_t>();
  };
  // Note [Divergence check], from the trace and x*'s probabilities already read.
  const auto header_end = trace_text.find('\n');
  if (const auto d = check_divergence(header_end == std::string::npos ? "" : trace_text.substr(header_end + 1),
                                      anchor_point(config), config, classes,
                                      accuracy_of(m.point.at(anchor_point(config)), labels))) {
    m.diverged = d->reason;
  }
  if (status.contains("sampler_warning") && status["sampler_warning"].is_string()) {
    m.sampler_warning = status["sampler_warning"].get<std::string>();
  }
  if (status.contains("arithmetic") && status["arithmetic"].is_array()) {
    for (const auto& a : status["arithmetic"]) {
      if (a.is_string()) m.arithmetic.push_back(a.get<std::string>());
    }
  }
  // A missing sample file would silently turn the Bayesian uncertainty into one over members.
  const int64_t listed = count("samples");
  if (config.evaluation.save_sample_probs && listed >= 0 && listed != static_cast<int64_t>(stored.size())) {
    throw ConfigError(fmt::format("{} holds {} of the {} sample predictions {} lists (deleted?); restore them, or "
                                  "leave the member out with --members",
                                  (dir / kSamplesDir).string(), stored.size(), listed, (dir / kStatusFile).string()));
  }
  if (selection.recompute && stored.empty()) {
    throw ConfigError(fmt::format("{} has no stored samples (evaluation.save_sample_probs was false?): --burn-in "
                                  "and --thin need them",
                                  dir.string()));
  }
  int64_t burn_in_steps = 0;
  if (selection.burn_in) {
    if (count("batches_per_epoch") < 0) {
      throw ConfigError(fmt::format("{}/status.json does not record batches_per_epoch (written by an older bnn): "
                                    "--burn-in cannot be applied",
                                    dir.string()));
    }
    burn_in_steps = *selection.burn_in * count("batches_per_epoch");
  }
  std::vector<int64_t> steps;
  for (const auto& [step, file] : stored) steps.push_back(step);
  const auto keep = select_sample_steps(steps, burn_in_steps, selection.thin);
  if (selection.recompute && keep.empty()) {
    throw ConfigError(fmt::format("--burn-in {} and --thin {} keep none of the {} stored samples of {}",
                                  selection.burn_in.value_or(config.sampler.burn_in), selection.thin, stored.size(),
                                  dir.string()));
  }
  size_t next = 0;
  for (const auto& [step, file] : stored) {
    if (next == keep.size() || step != keep[next]) continue;
    const torch::Tensor p = read_probabilities(file, rows, classes);
    if (p.scalar_type() == torch::kHalf) ++m.float16_samples;
    m.bayes_draws.add(p);
    ++next;
  }
  for (const config::OodSetConfig& set : config.evaluation.ood) {
    const auto ood_dir = ood_member_dir(dir, set.name);
    int64_t n = -1;  // this set's examples, from the first file
    const auto read = [&](const std::filesystem::path& file) {
      torch::Tensor p = read_probabilities(file, n, classes, /*of_test=*/false);
      n = p.size(0);
      return p;
    };
    for (const std::string& method : point_estimates(config)) {
      m.ood_point[set.name][method] = read(point_probs_path(ood_dir, method));
    }
    for (const int64_t step : keep) m.ood_bayes[set.name].add(read(sample_probs_path(ood_dir, step)));
    if (keep.empty()) {
      throw ConfigError(fmt::format("{} has no stored samples: the Bayesian ensemble's OOD scores need them",
                                    dir.string()));
    }
  }
  m.samples = static_cast<int64_t>(keep.size());
  m.bayes = selection.recompute ? m.bayes_draws.mean().to(torch::kFloat)
                                : read_probabilities(dir / kBayesProbsFile, rows, classes);
  return m;
}

// --reference-probs: N x K probabilities over the run's test set (N test
// examples, K classes), each row a distribution; errors name the file.
torch::Tensor read_reference_probs(const std::filesystem::path& path, int64_t n, int64_t k) {
  torch::Tensor q;
  if (std::filesystem::is_directory(path)) {
    throw ConfigError(fmt::format("--reference-probs {} is a folder; give an .npy file", path.string()));
  }
  try {
    q = data_loaders::read_npy(path);
  } catch (const std::exception& e) {
    throw ConfigError(fmt::format("--reference-probs {}", e.what()));
  }
  const auto fail = [&](const std::string& why) {
    return ConfigError(fmt::format("--reference-probs {}: {}", path.string(), why));
  };
  if (!q.is_floating_point() || q.dim() != 2) {
    throw fail(fmt::format("holds {} values of shape ({}); give float32 or float64 probabilities of shape ({}, {}) "
                           "(test examples, classes)",
                           c10::toString(q.scalar_type()), fmt::join(q.sizes(), ", "), n, k));
  }
  if (q.size(0) != n || q.size(1) != k) {
    throw fail(fmt::format("shape ({}), but the run's test set has {} examples of {} classes",
                           fmt::join(q.sizes(), ", "), n, k));
  }
  q = q.to(torch::kDouble).contiguous();
  const double* p = q.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t c = 0; c < k; ++c) {
      const double v = p[i * k + c];
      if (!std::isfinite(v) || v < 0 || v > 1) {
        throw fail(fmt::format("row {} holds {} for class {}; probabilities are finite and in [0, 1]", i, v, c));
      }
      sum += v;
    }
    if (std::abs(sum - 1) > 1e-3) {
      throw fail(fmt::format("row {} sums to {:.6g}, not 1: give probabilities (softmax of the logits)", i, sum));
    }
  }
  return q;
}

}  // namespace

std::vector<int64_t> select_sample_steps(const std::vector<int64_t>& stored, int64_t burn_in_steps, int64_t thin) {
  TORCH_CHECK(thin >= 1, "thin must be at least 1, got ", thin);
  TORCH_CHECK(std::is_sorted(stored.begin(), stored.end()), "stored sample steps must be sorted");
  std::vector<int64_t> out;
  int64_t after = 0;
  for (const int64_t step : stored) {
    if (step <= burn_in_steps) continue;
    if (++after % thin == 0) out.push_back(step);
  }
  return out;
}

namespace {

// Checks that every directory holds the experiment of `config` on the test
// set `labels`: only such runs can be merged. Returns each one's config.
std::vector<config::Config> require_one_experiment(const std::vector<std::filesystem::path>& run_dirs,
                                                   const config::Config& config, const torch::Tensor& labels) {
  const auto& first = run_dirs.front();
  std::vector<config::Config> configs;
  for (const auto& dir : run_dirs) {
    require_file(dir / kConfigFile, kConfigFile);
    require_file(dir / kLabelsFile, kLabelsFile);
    configs.push_back(dir == first ? config : config::load_config(dir / kConfigFile, {}));
    require_recorded_experiment(dir, configs.back());
    if (!same_experiment(configs.back(), config)) {
      throw ConfigError(fmt::format("{} and {} hold different configurations ({}); only members of one "
                                    "experiment can be merged",
                                    first.string(), dir.string(), experiment_differences(config, configs.back())));
    }
    if (!data_loaders::read_npy(dir / kLabelsFile).equal(labels)) {
      throw ConfigError(fmt::format("{} and {} were evaluated on different test sets", first.string(), dir.string()));
    }
  }
  return configs;
}

// A member folder copied in from elsewhere would be scored as one of the
// run's: its name must be one of the run's member indices, and status.json
// must be that member's, with the seed the run gives it. (A member of another
// experiment with the run's seeds is not caught here.)
void require_own_member(const std::filesystem::path& dir, const config::Config& run) {
  const std::string name = dir.filename().string();
  const std::string move = "; move it out of the run directory";
  int64_t index = -1;
  if (std::smatch m; std::regex_match(name, m, std::regex("member_([0-9]{1,9})"))) index = std::stoll(m[1].str());
  if (index < 0 || member_dir("", index).string() != name) {
    throw ConfigError(fmt::format("{}: not a member folder name of bnn (member_000, member_001, ...){}",
                                  dir.string(), move));
  }
  if (index >= run.run.members) {
    throw ConfigError(fmt::format("{}: the run trains members 0-{} (run.members = {}), so this folder is none of "
                                  "them{}",
                                  dir.string(), run.run.members - 1, run.run.members, move));
  }
  const auto status = nlohmann::json::parse(io::read_file(dir / kStatusFile));  // member_finished() checked it
  if (status.contains("member") && status["member"] != index) {
    throw ConfigError(fmt::format("{}: status.json is member {}'s, not member {}'s (a copy of another member's "
                                  "folder?){}",
                                  dir.string(), status["member"].dump(), index, move));
  }
  if (status.contains("seed") && status["seed"] != member_seed(run, index)) {
    throw ConfigError(fmt::format("{}: status.json's seed {} is not the seed of member {} in this run ({}, from "
                                  "run.seed {}): a member of another run?{}",
                                  dir.string(), status["seed"].dump(), index, member_seed(run, index), run.run.seed,
                                  move));
  }
}

// The finished members of every directory (`configs` holds each one's
// config), ordered by member index so that merging partial runs gives exactly
// the table of the full run.
std::map<std::string, std::filesystem::path> finished_in(const std::vector<std::filesystem::path>& run_dirs,
                                                         const std::vector<config::Config>& configs) {
  std::map<std::string, std::filesystem::path> found;
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    const auto& dir = run_dirs[i];
    for (const auto& d : finished_members(dir)) {
      require_own_member(d, configs[i]);
      const auto [it, inserted] = found.emplace(d.filename().string(), d);
      if (!inserted) {
        throw ConfigError(fmt::format("{} is finished in both {} and {}; merge each member once",
                                      d.filename().string(), it->second.parent_path().string(), dir.string()));
      }
    }
  }
  return found;
}

// Note [Evaluation lock]: the processes of one run (a Slurm array, an Indexed
// Job, `bnn run`s started together) each evaluate the run when their members
// finish, and a user may run `bnn evaluate` meanwhile. Each writes its
// outputs while holding an exclusive flock on <out>/evaluate.lock (waiting for
// it), so the files of one folder always come from one evaluation; and under
// the lock it evaluates again if more members finished since it looked. The
// last writer has then seen every member finished before it took the lock: a
// slower evaluation of fewer members never overwrites a later one of more.
// (The limits of flock on shared filesystems are those of Note [Member locks].)
// A process killed part-way through its evaluation (a pre-empted job) holds
// no lock any more, and the files it has written stand beside the earlier
// evaluation's. So everything is computed and the figures drawn, each to a
// temporary file checked whole (Note [Figures] in src/evaluation/figures.h),
// before the tables and reports (and an evaluation folder's bnn.json) are
// written, last, each to a temporary file; then all, figures included, are
// renamed (Note [Staged writes] in src/io/atomic_file.h). A write that fails
// (a full disk) leaves the earlier set whole (the figures' data and script in
// figures/ may be the new ones); a kill leaves it whole but for the
// milliseconds of the renames; the next evaluation rewrites them all.
// Under the lock: the temporary files of an evaluation killed between a write
// and its rename (Note [Atomic writes]), which only evaluations write: in
// figures/ and of the tables and reports. A run's own files (bnn.json,
// config.yaml, ...) may be in flight from another process and are left.
void remove_stale_evaluation_files(const std::filesystem::path& out_dir) {
  static const std::set<std::string> kOutputs = {"metrics.json",    "metrics.csv", "metrics.txt",
                                                 "metrics_ood.csv", "uncertainty.json", "report.md",
                                                 "report.html"};
  int64_t removed = 0;
  std::error_code ec;
  const auto figures = out_dir / "figures";
  if (std::filesystem::is_directory(figures, ec)) removed += io::remove_temporary_files(figures);
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (io::is_temporary_name(name) && kOutputs.count(name.substr(0, name.find(".tmp."))) > 0 &&
        std::filesystem::remove(entry.path(), ec)) {
      ++removed;
    }
  }
  if (removed > 0) spdlog::info("removed {} file(s) left by an evaluation stopped part-way", removed);
}

// Waits for the lock in steps of 0.1 s, so that a stop signal ends the wait
// (Note [Stop signals]: the other process writes the metrics).
io::FileLock lock_evaluation(const std::filesystem::path& out_dir) {
  const auto path = out_dir / kEvaluateLockFile;
  if (auto lock = io::FileLock::try_acquire(path)) return std::move(*lock);
  spdlog::info("waiting for another bnn that is writing its evaluation into {} ({} is locked)", out_dir.string(),
               path.string());
  for (;;) {
    if (const int signo = runtime::stop_signal(); signo != 0) {
      throw EvaluationStopped(fmt::format("stopped by {} while waiting for another bnn's evaluation of {}",
                                          runtime::signal_name(signo), out_dir.string()));
    }
    if (auto lock = io::FileLock::try_acquire(path)) return std::move(*lock);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

std::string metrics_text(const std::filesystem::path& out_dir) { return io::read_file(out_dir / "metrics.txt"); }

std::vector<evaluation::EnsembleRow> evaluate_runs(const std::vector<std::filesystem::path>& run_dirs,
                                                   const std::filesystem::path& out_dir,
                                                   const EvaluateOptions& options) {
  TORCH_CHECK(!run_dirs.empty(), "evaluate needs at least one run directory");
  const auto& first = run_dirs.front();
  require_file(first / kConfigFile, kConfigFile);
  require_file(first / kLabelsFile, kLabelsFile);
  const config::Config config = config::load_config(first / kConfigFile, {});
  const torch::Tensor labels = data_loaders::read_npy(first / kLabelsFile);
  const std::vector<config::Config> configs = require_one_experiment(run_dirs, config, labels);
  const std::map<std::string, std::filesystem::path> found = finished_in(run_dirs, configs);
  TORCH_CHECK(!found.empty(), "no finished members in ", first.string(), ": nothing to evaluate");

  Selection selection;
  if (options.burn_in) {
    if (*options.burn_in < config.sampler.burn_in || *options.burn_in >= config.sampler.epochs) {
      throw ConfigError(fmt::format("--burn-in {} must be at least the run's sampler.burn_in {} (earlier samples "
                                    "were not stored) and less than sampler.epochs {}",
                                    *options.burn_in, config.sampler.burn_in, config.sampler.epochs));
    }
    selection.burn_in = options.burn_in;
  }
  if (options.thin) {
    if (*options.thin < 1) throw ConfigError(fmt::format("--thin {} must be at least 1", *options.thin));
    selection.thin = *options.thin;
  }
  selection.recompute = options.burn_in.has_value() || options.thin.has_value();
  std::map<std::string, std::filesystem::path> chosen;
  if (options.members.empty()) {
    chosen = found;
    // Tables of fewer members than the run trains replace those of all of
    // them (in place): say which are left out.
    std::vector<std::string> missing;
    for (int64_t i = 0; i < config.run.members; ++i) {
      if (found.count(member_dir("", i).string()) == 0) missing.push_back(member_dir("", i).string());
    }
    if (!missing.empty()) {
      const size_t shown = std::min<size_t>(missing.size(), 8);
      const std::string listed =
          fmt::format("{}", fmt::join(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(shown), ", "));
      spdlog::log(options.quiet_about_missing ? spdlog::level::info : spdlog::level::warn,
                  "evaluating {} of the run's {} members (run.members): {} {} not finished{}", found.size(),
                  config.run.members, listed, missing.size() == 1 ? "is" : "are",
                  missing.size() > shown ? fmt::format(" (and {} more)", missing.size() - shown) : std::string());
    }
  } else {
    for (const int64_t index : options.members) {
      const std::string name = member_dir("", index).string();
      const auto it = found.find(name);
      if (it == found.end()) {
        const bool held = std::any_of(run_dirs.begin(), run_dirs.end(), [&](const std::filesystem::path& d) {
          return std::filesystem::is_directory(d / name);
        });
        throw ConfigError(fmt::format("--members selects {}, which {} of the run directories", name,
                                      held ? "is not finished in any" : "is in none"));
      }
      chosen.insert(*it);
    }
  }

  std::vector<MemberData> members;
  int64_t classes = -1;
  for (const auto& [name, dir] : chosen) {
    selection.members.push_back(name);
    members.push_back(load_member(dir, config, selection, labels, classes));
  }
  if (labels.dim() != 1 || labels.is_floating_point() || labels.min().item<int64_t>() < 0 ||
      labels.max().item<int64_t>() >= classes) {
    throw ConfigError(fmt::format("{}: not the test labels of {} classes (integers in 0-{}, one per test example)",
                                  (first / kLabelsFile).string(), classes, classes - 1));
  }
  selection.draws_are_samples = std::all_of(members.begin(), members.end(),
                                            [](const MemberData& m) { return m.samples > 0; });
  const torch::Tensor reference = options.reference_probs.empty()
                                      ? torch::Tensor()
                                      : read_reference_probs(options.reference_probs, labels.size(0), classes);
  std::vector<std::string> class_names;  // the data set's, for the report; none = class indices
  try {
    const std::vector<std::string> names = read_preprocess(first).class_names;
    if (static_cast<int64_t>(names.size()) == classes) class_names = names;
  } catch (const std::exception& e) {  // a run of a bnn older than preprocess.json
    spdlog::info("class names not shown: {}", e.what());
  }

  const std::vector<std::string> points = point_estimates(config);
  std::map<std::string, std::vector<torch::Tensor>> probs;  // method -> per member
  std::map<std::string, evaluation::MixtureAccumulator> mix;
  int64_t bayes_draws = 0;
  for (const MemberData& m : members) {
    for (const std::string& method : points) {
      probs[method].push_back(m.point.at(method));
      mix[method].add(m.point.at(method));
    }
    probs["bayes"].push_back(m.bayes);
    evaluation::MixtureAccumulator& mix_bayes = mix["bayes"];
    // Members weigh equally, whatever their sample counts (as in bayes_probs.npy).
    if (selection.draws_are_samples) {
      mix_bayes.add(m.bayes_draws);
      bayes_draws += m.samples;
    } else {
      mix_bayes.add(m.bayes);
      ++bayes_draws;
    }
  }
  std::vector<evaluation::EnsembleRow> rows;
  for (const std::string& method : methods_of(config)) {
    auto part = evaluation::ensemble_table(method, probs.at(method), labels, reference);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  // Note [Out-of-distribution sets]: detection by every method at every size.
  std::vector<evaluation::OodRow> ood_rows;
  std::vector<std::pair<std::string, int64_t>> ood_sets;
  std::vector<evaluation::OodFigure> ood_figures;
  for (const config::OodSetConfig& set : config.evaluation.ood) {
    ood_sets.emplace_back(set.name, members.front().ood_point.at(set.name).begin()->second.size(0));
    evaluation::OodFigure figure{set.name, {}, {}, {}};
    for (const std::string& method : methods_of(config)) {
      std::vector<evaluation::MemberMixtures> mixtures(members.size());
      evaluation::MixtureAccumulator full_ood;  // the test side is mix.at(method)
      for (size_t i = 0; i < members.size(); ++i) {
        const MemberData& m = members[i];
        evaluation::MemberMixtures& x = mixtures[i];
        if (method == "bayes") {
          x.test.add(m.bayes_draws);
          x.ood.add(m.ood_bayes.at(set.name));
          x.draws = m.samples;
        } else {
          x.test.add(m.point.at(method));
          x.ood.add(m.ood_point.at(set.name).at(method));
        }
        full_ood.add(x.ood);
      }
      const auto part = evaluation::ood_table(set.name, method, mixtures);
      ood_rows.insert(ood_rows.end(), part.begin(), part.end());
      figure.methods.push_back(method);
      figure.test_entropy.push_back(evaluation::row_entropy(mix.at(method).mean()));
      figure.ood_entropy.push_back(evaluation::row_entropy(full_ood.mean()));
    }
    ood_figures.push_back(std::move(figure));
  }

  claim_evaluation_directory(out_dir, run_dirs, config);  // Note [Run ownership]
  std::optional<io::FileLock> lock = lock_evaluation(out_dir);
  if (finished_in(run_dirs, configs) != found) {  // Note [Evaluation lock]
    lock.reset();
    spdlog::info("more members of {} finished during this evaluation; evaluating again", first.string());
    return evaluate_runs(run_dirs, out_dir, options);
  }
  remove_stale_evaluation_files(out_dir);
  nlohmann::json metrics = evaluation::to_json(rows);
  // The members in the order the groups take them (group g of size es: positions
  // [g es, (g + 1) es)), so that two runs' groups can be paired only where they
  // hold the same members (scripts/compare_metrics.py --paired).
  metrics["members"] = selection.members;
  if (!ood_rows.empty()) metrics["ood"] = evaluation::to_json(ood_rows);

  const auto count = static_cast<int64_t>(members.size());
  std::map<std::string, evaluation::UncertaintySummary> summaries;
  for (const std::string& method : points) {
    summaries[method] = evaluation::summarize_uncertainty(mix.at(method), count, labels);
  }
  summaries["bayes"] = evaluation::summarize_uncertainty(mix.at("bayes"), bayes_draws, labels);
  nlohmann::json uncertainty = {
      {"selection",
       {{"members", selection.members},
        {"burn_in_epochs", selection.burn_in.value_or(config.sampler.burn_in)},
        {"thin", selection.thin},
        {"bayes_probabilities", selection.recompute ? "stored samples" : "bayes_probs.npy"},
        {"bayes_draws", selection.draws_are_samples ? "samples" : "members"},
        {"reference_probs", options.reference_probs.string()}}},
      {"class_names", class_names},
      {"methods", nlohmann::json::object()}};
  for (const std::string& method : methods_of(config)) {
    uncertainty["methods"][method] = evaluation::to_json(summaries.at(method));
  }
  std::vector<evaluation::LossTrace> traces;
  for (const MemberData& m : members) traces.push_back(m.trace);
  const evaluation::MembersRhat members_rhat =
      evaluation::rhat_across_members(traces, selection.burn_in.value_or(config.sampler.burn_in));
  const std::vector<evaluation::RhatAtEpoch>& rhat_curve = members_rhat.curve;
  // Note [Staged writes]: the figures, tables and reports replace the earlier
  // ones together, once all are written.
  io::StagedFiles files;
  evaluation::FigureOutcome figures;
  if (options.figures) {
    evaluation::FigureInputs inputs;
    inputs.rows = rows;
    inputs.labels = labels;
    for (const std::string& method : methods_of(config)) {
      inputs.ensemble_probs.emplace_back(method, mix.at(method).mean());
    }
    inputs.traces = traces;
    if (!rhat_curve.empty()) {
      inputs.rhat_curves = {{"members", rhat_curve}};
      inputs.rhat_title = fmt::format("R-hat of the sampling loss across {} members (different x*)", members.size());
    }
    inputs.ood = ood_figures;
    figures = evaluation::draw_figures(inputs, out_dir / "figures", &files);
    if (!figures.error.empty()) spdlog::warn("figures not drawn: {}", figures.error);
  }
  evaluation::ReportInputs report;
  for (const auto& d : run_dirs) report.run_dirs.push_back(d.string());
  report.model = config.model.name;
  report.dataset = config.data.dataset;
  report.sampler = config.sampler.name;
  report.step_size = config.sampler.step_size;
  report.sampling_epochs = config.sampler.epochs;
  report.point_estimates = point_estimates(config);
  report.methods = methods_of(config);
  report.members = selection.members;
  report.traces = traces;
  for (const MemberData& m : members) {
    report.samples += m.samples;
    if (selection.recompute) report.float16_samples += m.float16_samples;
    for (const std::string& a : std::set<std::string>(m.arithmetic.begin(), m.arithmetic.end())) {
      const auto seen = std::find_if(report.arithmetic.begin(), report.arithmetic.end(),
                                     [&](const auto& entry) { return entry.first == a; });
      if (seen == report.arithmetic.end()) {
        report.arithmetic.emplace_back(a, 1);
      } else {
        ++seen->second;
      }
    }
    if (m.arithmetic.size() > 1) ++report.arithmetic_changed;
    if (!m.diverged.empty()) {
      report.warnings.push_back(fmt::format("{} diverged: {}", m.dir.filename().string(), m.diverged));
      spdlog::warn("{} diverged: {}", m.dir.string(), m.diverged);
    }
    if (!m.sampler_warning.empty()) {
      report.warnings.push_back(fmt::format("{}: {}", m.dir.filename().string(), m.sampler_warning));
      spdlog::warn("{}: {}", m.dir.string(), m.sampler_warning);
    }
  }
  report.test_examples = members.front().bayes.size(0);
  report.recomputed = selection.recompute;
  if (report.float16_samples > 0) {
    spdlog::warn("{} of the {} samples read are float16 (evaluation.sample_probs_dtype float16, or a bnn older "
                 "than that option): a probability below 3e-8 reads as 0, which can raise the recomputed NLL",
                 report.float16_samples, report.samples);
  }
  report.burn_in = selection.burn_in.value_or(config.sampler.burn_in);
  report.run_burn_in = config.sampler.burn_in;
  report.thin = selection.thin;
  report.draws_are_samples = selection.draws_are_samples;
  report.rows = rows;
  report.summaries = summaries;
  report.rhat_curve = rhat_curve;
  report.rhat_not_computed = members_rhat.why_not;
  report.figures = figures;
  report.figures_requested = options.figures;
  report.reference_probs = options.reference_probs.string();
  report.class_names = class_names;
  report.ood_sets = ood_sets;
  report.ood_rows = ood_rows;
  const std::string markdown = evaluation::render_report(report);
  const auto embedded = [&out_dir, &files](const std::string& src) {
    const auto path = out_dir / src;
    const auto file = files.staged_as(path).value_or(path);  // this evaluation's figure, not yet renamed
    std::error_code ec;
    if (path.extension() != ".png" || !std::filesystem::is_regular_file(file, ec)) return src;
    return evaluation::data_uri(io::read_file(file), "image/png");
  };
  const std::string html = evaluation::markdown_to_html(
      markdown, fmt::format("bnn report: {} on {}, {}", config.model.name, config.data.dataset, config.sampler.name),
      embedded);
  // Note [Evaluation lock]: the tables and reports last, one after another,
  // once everything is computed and the figures drawn; not at all where the
  // lock file was deleted meanwhile, since another evaluation may hold a new one.
  try {
    lock->check_still_held();
  } catch (const io::LockLost& e) {
    throw std::runtime_error(fmt::format("{}; another bnn may be evaluating into {} now, so this evaluation wrote no "
                                         "tables or reports (never delete the lock files of a folder in use; run bnn "
                                         "evaluate again once no other does)",
                                         e.what(), out_dir.string()));
  }
  // Note [Staged writes]: every table and report written before any is
  // replaced (the figures were staged first), so a write that fails (a full
  // disk) leaves the earlier set whole.
  if (const auto manifest = evaluation_manifest(out_dir, run_dirs, config)) {
    files.stage(out_dir / "bnn.json", *manifest);
  }
  files.stage(out_dir / "metrics.json", metrics.dump(2) + "\n");
  files.stage(out_dir / "metrics.csv", evaluation::to_csv(rows));
  files.stage(out_dir / "metrics.txt",
              evaluation::to_table(rows) + (ood_rows.empty() ? "" : "\n" + evaluation::ood_text_table(ood_rows)));
  if (!ood_rows.empty()) files.stage(out_dir / "metrics_ood.csv", evaluation::ood_csv(ood_rows));
  files.stage(out_dir / "uncertainty.json", uncertainty.dump(2) + "\n");
  files.stage(out_dir / "report.md", markdown);
  files.stage(out_dir / "report.html", html);
  files.commit();
  return rows;
}

}  // namespace bnn::pipeline
