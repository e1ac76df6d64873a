#include "src/pipeline/run_directory.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "data_loaders/npy.h"
#include "samplers/random.h"
#include "src/io/atomic_file.h"

namespace bnn::pipeline {

std::filesystem::path member_dir(const std::filesystem::path& run_dir, int64_t index) {
  return run_dir / fmt::format("member_{:03d}", index);
}

uint64_t member_seed(const config::Config& config, int64_t index) {
  return samplers::derive_seed(config.run.seed, static_cast<uint64_t>(index));
}

std::vector<std::string> point_estimates(const config::Config& config) {
  if (config.map.optimizer == "lbfgs") return {"map"};
  return {"adam", "swa"};
}

std::string anchor_point(const config::Config& config) { return point_estimates(config).back(); }

std::filesystem::path point_weights_path(const std::filesystem::path& member, const std::string& point) {
  return member / (point + "_weights.npy");
}

std::filesystem::path point_buffers_path(const std::filesystem::path& member, const std::string& point) {
  return member / (point + "_buffers.npy");
}

std::filesystem::path point_probs_path(const std::filesystem::path& member, const std::string& point) {
  return member / (point + "_probs.npy");
}

std::filesystem::path sample_probs_path(const std::filesystem::path& member, int64_t step) {
  return member / kSamplesDir / fmt::format("step_{:08d}.npy", step);
}

namespace {

using config::ConfigError;
using Settings = std::map<std::string, std::string>;

// Keys that change how a run is carried out, not what it computes.
bool operational_key(const std::string& key) {
  static const std::set<std::string> keys = {
      "run.device", "run.threads", "run.checkpoint", "evaluation.save_sample_weights",
      "evaluation.sample_weights_every", "evaluation.sample_weights_dtype", "evaluation.sample_probs_dtype",
      "sampler.max_loss_increase",
      "sampler.max_accuracy_drop"};
  return keys.count(key) > 0;
}

Settings experiment_keys(const config::Config& config) {
  Settings out;
  for (auto& [key, value] : config::flat_values(config)) {
    if (!operational_key(key)) out.emplace(std::move(key), std::move(value));
  }
  return out;
}

const Settings& resolved_defaults() {
  static const Settings defaults = [] {
    config::Config d = config::default_config();
    config::validate_and_resolve(d);
    return experiment_keys(d);
  }();
  return defaults;
}

// The experiment keys whose values differ from the resolved defaults.
Settings non_default_settings(const config::Config& config) {
  Settings out;
  for (auto& [key, value] : experiment_keys(config)) {
    const auto it = resolved_defaults().find(key);
    if (it == resolved_defaults().end() || it->second != value) out.emplace(key, value);
  }
  return out;
}

// FNV-1a of the settings' lines, as 16 hex digits.
std::string identity_of(const Settings& settings) {
  std::string lines;
  for (const auto& [key, value] : settings) lines += key + "=" + value + "\n";
  return fmt::format("{:016x}", fnv1a(lines));
}

struct Manifest {
  std::string kind;  // run | evaluation | rhat
  std::string experiment;
  Settings settings;
};

// The manifest of a `kind` folder of `config`'s experiment; `extra` settings
// (rhat.chains, ...) are part of both its identity and its settings.
nlohmann::json manifest_json(const std::string& kind, const config::Config& config, const Settings& extra = {}) {
  Settings settings = experiment_keys(config), named = non_default_settings(config);
  settings.insert(extra.begin(), extra.end());
  named.insert(extra.begin(), extra.end());
  return {{"bnn", kind}, {"format", 1}, {"experiment", identity_of(named)}, {"settings", settings}};
}

// The keys where the experiment a manifest records (`stored`, every
// experiment key of the bnn that wrote it) and `config` differ, as
// "key: A there, B now". A key the manifest lacks (added by a later bnn)
// differs only if `config` gives it another value than its default; a key
// only the manifest has (since removed) is ignored.
// A data.dir that a bnn before absolute data.dir recorded relative is the same
// folder where it names it from this command's working directory.
bool same_setting(const std::string& key, const std::string& there, const std::string& now) {
  if (there == now) return true;
  return key == "data.dir" && std::filesystem::path(there).is_relative() && config::absolute_dir(there) == now;
}

// A setting as a message shows it: a number in its shortest exact form
// (0.0002, where the manifest keeps 0.00020000000000000001), anything else
// as it is.
std::string shown(const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789.eE+-") != std::string::npos) return value;
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(value, &used);
  } catch (const std::exception&) {
    return value;
  }
  return used == value.size() ? fmt::format("{}", d) : value;
}

// What a difference calls its two sides: the stored settings and `config`'s.
struct Sides {
  const char* stored = "there";
  const char* config = "now";
};

std::string differences_from(const Settings& stored, const config::Config& config, Sides sides = {}) {
  std::vector<std::string> lines;
  for (const auto& [key, value] : experiment_keys(config)) {
    const auto it = stored.find(key);
    if (it != stored.end()) {
      if (!same_setting(key, it->second, value)) {
        lines.push_back(
            fmt::format("{}: {} {}, {} {}", key, shown(it->second), sides.stored, shown(value), sides.config));
      }
    } else if (const auto d = resolved_defaults().find(key); d != resolved_defaults().end() && d->second != value) {
      lines.push_back(
          fmt::format("{}: the default {} {}, {} {}", key, shown(d->second), sides.stored, shown(value), sides.config));
    }
  }
  return fmt::format("{}", fmt::join(lines, "; "));
}

std::optional<Manifest> read_manifest(const std::filesystem::path& dir) {
  const auto path = dir / kManifestFile;
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(io::read_file(path));
    Manifest m{j.at("bnn").get<std::string>(), j.at("experiment").get<std::string>(),
               j.at("settings").get<Settings>()};
    if (m.kind != "run" && m.kind != "evaluation" && m.kind != "rhat") {
      throw std::invalid_argument("unknown kind " + m.kind);
    }
    return m;
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("{} is not a bnn manifest (JSON with \"bnn\": run, evaluation or rhat, "
                                  "\"experiment\" and \"settings\"); it says what the folder holds, so bnn will "
                                  "not write there: restore it or use another folder",
                                  path.string()));
  }
}

// The output folder `dir` and its parents, or an error naming it (not the
// library's "filesystem error: cannot create directories: ... [dir]").
void create_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec && io::storage_failure(ec.value())) throw io::WriteError(dir, ec.value());  // a full disk is not bad input
  if (ec) throw ConfigError(fmt::format("cannot create the folder {}: {}", dir.string(), ec.message()));
}

void write_manifest(const std::filesystem::path& dir, const nlohmann::json& manifest) {
  create_folder(dir);
  io::write_file_atomically(dir / kManifestFile, manifest.dump(2) + "\n");
}

// Writes `manifest` into `dir` after a check found the folder fit for it:
// over the manifest the check read (`checked_one`), or, where the check
// found none, only if still none is there (Note [Run ownership]: commands
// that found the folder empty at the same moment). Returns false, writing
// nothing, if another command's manifest appeared meanwhile: the caller
// checks again against it.
bool publish_manifest(const std::filesystem::path& dir, const nlohmann::json& manifest, bool checked_one) {
  if (checked_one) {
    write_manifest(dir, manifest);
    return true;
  }
  create_folder(dir);
  return io::create_file_atomically(dir / kManifestFile, manifest.dump(2) + "\n");
}

bool has_manifest(const std::filesystem::path& dir) { return std::filesystem::exists(dir / kManifestFile); }

// Empty, or holding only the temporary files of an atomic write in flight
// (Note [Atomic writes]): a second `bnn run` started with the first sees the
// first's bnn.json.tmp.* before its rename, and must not take the folder for a
// user's (Note [Member locks]). Likewise a file named `also_empty`: the lock
// a second `bnn rhat` finds before the first has written its manifest.
bool empty_folder(const std::filesystem::path& dir, const std::string& also_empty = "") {
  if (!std::filesystem::exists(dir)) return true;
  if (!std::filesystem::is_directory(dir)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!io::is_temporary_name(name) && name != also_empty) return false;
  }
  return true;
}

// What a folder of another kind holds, for refusals.
std::string contents_of(const std::string& kind) {
  if (kind == "run") return "the members of a bnn run";
  if (kind == "evaluation") return "the tables of `bnn evaluate`";
  return "the R-hat chains of `bnn rhat`";
}

// A folder named member_* directly inside a bnn run's folder is one of its
// members' (or will be): a run's, an evaluation's or bnn rhat's output there
// would be mixed with the member's files. Refused for every command's --out.
void refuse_member_folder(const std::filesystem::path& out) {
  // Through symbolic links: a link to RUN/member_001 is that folder.
  std::error_code ec;
  auto path = std::filesystem::weakly_canonical(std::filesystem::absolute(out), ec);
  if (ec) path = std::filesystem::absolute(out).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  if (path.filename().string().rfind("member_", 0) != 0) return;
  const auto parent = path.parent_path();
  std::optional<Manifest> manifest;
  try {
    manifest = read_manifest(parent);
  } catch (const ConfigError&) {
    return;  // not a folder this check can vouch for; its own checks refuse its damaged bnn.json
  }
  // A run (or bnn rhat's chains, kept in member folders too); a run of a bnn before manifests has config.yaml.
  const bool members_there =
      manifest ? manifest->kind == "run" || manifest->kind == "rhat" : std::filesystem::exists(parent / kConfigFile);
  if (!members_there) return;
  throw ConfigError(fmt::format("--out {} is a member folder of {}: its files would be mixed with that member's; "
                                "give --out a folder outside it",
                                out.string(),
                                manifest && manifest->kind == "rhat" ? "the bnn rhat folder " + parent.string()
                                                                      : "the bnn run " + parent.string()));
}

bool has_members(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("member_", 0) == 0) return true;
  }
  return false;
}

}  // namespace

void check_same_test_labels(const std::filesystem::path& dir, const torch::Tensor& labels) {
  const auto path = dir / kLabelsFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || !has_members(dir)) return;
  torch::Tensor theirs;
  try {
    theirs = data_loaders::read_npy(path);
  } catch (const std::exception& e) {
    throw ConfigError(fmt::format("{} (the test labels this run's members were scored with) cannot be read: {}; "
                                  "restore it, or give --out a new folder",
                                  path.string(), e.what()));
  }
  const torch::Tensor ours = labels.to(torch::kCPU, torch::kLong);
  std::string difference;
  if (theirs.dim() != 1 || theirs.size(0) != ours.size(0)) {
    difference = fmt::format("it holds {} labels, the data now {}", theirs.numel(), ours.size(0));
  } else if (const torch::Tensor differ = theirs.to(torch::kLong).ne(ours).nonzero(); differ.size(0) > 0) {
    const int64_t row = differ[0][0].item<int64_t>();
    difference = fmt::format("{} of {} differ, the first at row {}: {} there, {} now", differ.size(0), ours.size(0),
                             row, theirs[row].item<int64_t>(), ours[row].item<int64_t>());
  }
  if (difference.empty()) return;
  throw ConfigError(fmt::format("{}: the test split of data.dir is not the one this run's members were scored on ({}); "
                                "the data changed since, or this node reads another copy of it: point data.dir at "
                                "the same data, or give --out a new folder",
                                path.string(), difference));
}

bool holds_manifest_of(const std::filesystem::path& dir, const std::string& kind) {
  try {
    const auto manifest = read_manifest(dir);
    return manifest && manifest->kind == kind;
  } catch (const ConfigError&) {
    return false;
  }
}

std::optional<std::string> other_than_run(const std::filesystem::path& dir) {
  std::optional<Manifest> manifest;
  try {
    manifest = read_manifest(dir);
  } catch (const std::exception&) {
    return std::nullopt;  // the caller's own checks name a damaged one
  }
  if (!manifest || manifest->kind == "run") return std::nullopt;
  return contents_of(manifest->kind);
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::map<std::string, std::string> rank_agreement_settings(const config::Config& config) {
  Settings settings = experiment_keys(config);
  for (const char* key : {"data.dir", "model.path", "evaluation.ood"}) settings.erase(key);
  return settings;
}

bool same_experiment(const config::Config& a, const config::Config& b) {
  return experiment_keys(a) == experiment_keys(b);
}

std::string experiment_differences(const config::Config& a, const config::Config& b) {
  return differences_from(experiment_keys(a), b, {"in the first", "in the second"});
}

std::optional<std::string> run_directory_lost(const std::filesystem::path& dir, const config::Config& config) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return "the folder is gone";
  std::optional<Manifest> manifest;
  try {
    manifest = read_manifest(dir);
  } catch (const ConfigError&) {
    return fmt::format("its {} is no longer a bnn manifest", kManifestFile);
  }
  if (!manifest) return fmt::format("its {} is gone", kManifestFile);
  if (manifest->kind != "run") return fmt::format("it holds {} now", contents_of(manifest->kind));
  if (const std::string d = differences_from(manifest->settings, config); !d.empty()) {
    return fmt::format("it holds another experiment now ({})", d);
  }
  return std::nullopt;
}

void check_members_are_members(const std::filesystem::path& dir, const std::vector<int64_t>& members) {
  for (const int64_t index : members) {
    const auto member = member_dir(dir, index);
    std::optional<Manifest> manifest;
    try {
      manifest = read_manifest(member);
    } catch (const ConfigError&) {
      manifest = Manifest{"unknown", "", {}};
    }
    if (!manifest) continue;
    throw ConfigError(fmt::format("{} holds {} (its {}), not member {} of this run: bnn would mix the member's files "
                                  "with them; move that folder out of the run",
                                  member.string(),
                                  manifest->kind == "unknown" ? std::string("another bnn folder")
                                                              : contents_of(manifest->kind),
                                  kManifestFile, index));
  }
}

void check_run_directory(const std::filesystem::path& dir, const config::Config& config, bool resume) {
  refuse_member_folder(dir);
  if (std::filesystem::exists(dir) && !std::filesystem::is_directory(dir)) {
    throw ConfigError(fmt::format("run directory {} is a file; give --out a folder", dir.string()));
  }
  if (empty_folder(dir)) return;
  const auto manifest = read_manifest(dir);
  const auto config_path = dir / kConfigFile;
  if (manifest && manifest->kind != "run") {
    throw ConfigError(fmt::format("{}{} holds {}, not a run; {}", resume ? "bnn run --resume " : "", dir.string(),
                                  contents_of(manifest->kind),
                                  resume ? "give the run directory to resume" : "give --out a new folder"));
  }
  if (!manifest && !std::filesystem::exists(config_path)) {
    throw ConfigError(fmt::format("{} is not empty and is not a bnn run directory (no {}): bnn would overwrite files "
                                  "there (metrics.json, report.md, ...); give --out a new or empty folder",
                                  dir.string(), kManifestFile));
  }
  // The experiment the directory holds: its manifest's settings, or for a run
  // of a bnn before manifests its config.yaml.
  const Settings theirs =
      manifest ? manifest->settings : experiment_keys(config::load_config(config_path, {}));
  const std::string differences = differences_from(theirs, config);
  if (differences.empty()) return;
  if (resume) {
    throw ConfigError(fmt::format("bnn run --resume {}: the options given change the experiment ({}); resume "
                                  "without them (--set, --seed, --device, --threads), or start a new run from its "
                                  "config: bnn run --config {} --set ... --out NEW_DIR",
                                  dir.string(), differences, config_path.string()));
  }
  throw ConfigError(fmt::format("{} holds {} of another experiment ({}); give --out a new folder{}", dir.string(),
                                has_members(dir) ? "members" : "the configuration", differences,
                                has_members(dir) ? ", or continue that run as it is with bnn run --resume " +
                                                       dir.string()
                                                 : ", or delete it (no member has started there)"));
}

void require_recorded_experiment(const std::filesystem::path& dir, const config::Config& config) {
  std::optional<Manifest> manifest;
  try {
    manifest = read_manifest(dir);
  } catch (const ConfigError&) {
    throw ConfigError(fmt::format("{} is not a bnn manifest (JSON with \"bnn\", \"experiment\" and \"settings\"), so "
                                  "the experiment this run's members were trained with cannot be checked against its "
                                  "config.yaml; restore it",
                                  (dir / kManifestFile).string()));
  }
  if (!manifest || manifest->kind != "run") return;  // a run of a bnn before manifests, or not a run
  const std::string differences =
      differences_from(manifest->settings, config, {"in bnn.json", "in config.yaml"});
  if (differences.empty()) return;
  throw ConfigError(fmt::format("{} no longer says the experiment this run's members were trained with, which {} "
                                "records ({}): was it edited? Restore those keys to bnn.json's values, or start a "
                                "new run with the changed config",
                                (dir / kConfigFile).string(), (dir / kManifestFile).string(), differences));
}

void claim_run_directory(const std::filesystem::path& dir, const config::Config& config, bool resume) {
  const bool had_manifest = has_manifest(dir);  // before the check: the manifest it may read
  check_run_directory(dir, config, resume);
  if (!publish_manifest(dir, manifest_json("run", config), had_manifest)) check_run_directory(dir, config, resume);
  // The run's config.yaml is its first command's: a process that joins it, or
  // resumes it, with its own operational keys (--threads, run.checkpoint ...)
  // leaves it as it is, for the next bnn run --resume.
  if (!had_manifest || !std::filesystem::exists(dir / kConfigFile)) {
    io::write_file_atomically(dir / kConfigFile, config::to_yaml(config));
  }
}

void claim_evaluation_directory(const std::filesystem::path& out, const std::vector<std::filesystem::path>& run_dirs,
                                const config::Config& config) {
  // A run's own tables; the merged tables of several runs go elsewhere.
  std::error_code ec;
  if (run_dirs.size() == 1 && std::filesystem::equivalent(out, run_dirs.front(), ec)) {
    read_manifest(out);  // a damaged bnn.json is refused here as by bnn run
    return;
  }
  nlohmann::json manifest = manifest_json("evaluation", config);
  std::vector<std::string> runs;
  for (const auto& d : run_dirs) runs.push_back(std::filesystem::absolute(d).lexically_normal().string());
  manifest["runs"] = runs;
  if (std::filesystem::exists(out) && !std::filesystem::is_directory(out)) {
    throw ConfigError(fmt::format("--out {} is a file; give a folder", out.string()));
  }
  refuse_member_folder(out);
  if (empty_folder(out)) {
    if (!publish_manifest(out, manifest, false)) claim_evaluation_directory(out, run_dirs, config);  // the new one's
    return;
  }
  const auto existing = read_manifest(out);
  if ((existing && existing->kind == "run") || (!existing && std::filesystem::exists(out / kConfigFile))) {
    throw ConfigError(fmt::format("--out {} is another bnn run directory: its metrics.json, report.md, ... describe "
                                  "its own members and would be overwritten; give --out a new folder",
                                  out.string()));
  }
  if (!existing) {
    throw ConfigError(fmt::format("--out {} is not empty and is not a bnn evaluation folder (no {}); give --out a "
                                  "new or empty folder",
                                  out.string(), kManifestFile));
  }
  if (existing->kind != "evaluation") {
    throw ConfigError(fmt::format("--out {} holds {}; give --out a new folder", out.string(),
                                  contents_of(existing->kind)));
  }
  if (!differences_from(existing->settings, config).empty()) {
    throw ConfigError(fmt::format("--out {} holds the evaluation of another experiment; give --out a new folder",
                                  out.string()));
  }
  // Its "runs" are rewritten with the tables they describe, under the
  // evaluation's lock (evaluation_manifest).
}

std::optional<std::string> evaluation_manifest(const std::filesystem::path& out,
                                               const std::vector<std::filesystem::path>& run_dirs,
                                               const config::Config& config) {
  std::error_code ec;
  if (run_dirs.size() == 1 && std::filesystem::equivalent(out, run_dirs.front(), ec)) return std::nullopt;
  nlohmann::json manifest = manifest_json("evaluation", config);
  std::vector<std::string> runs;
  for (const auto& d : run_dirs) runs.push_back(std::filesystem::absolute(d).lexically_normal().string());
  manifest["runs"] = runs;
  return manifest.dump(2) + "\n";
}

bool member_finished(const std::filesystem::path& member) {
  const auto path = member / kStatusFile;
  if (!std::filesystem::exists(path)) return false;
  nlohmann::json status;
  try {
    status = nlohmann::json::parse(io::read_file(path));
    return status.at("status").get<std::string>() == "done";
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(fmt::format("{} is not a bnn status file (not JSON with a \"status\" string); delete it to "
                                  "train {} again",
                                  path.string(), member.filename().string()));
  }
}

namespace {

// The member_NNN/ folders of `dir`, in order.
std::vector<std::filesystem::path> member_folders(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("member_", 0) == 0) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace

std::vector<std::filesystem::path> finished_members(const std::filesystem::path& run_dir) {
  std::vector<std::filesystem::path> dirs = member_folders(run_dir);
  dirs.erase(std::remove_if(dirs.begin(), dirs.end(), [](const auto& d) { return !member_finished(d); }), dirs.end());
  return dirs;
}

namespace {

constexpr const char* kRhatSummaryFile = "summary.json";  // written last by `bnn rhat` (rhat.h)

// The settings of an rhat folder written by a bnn before rhat manifests
// (config.yaml, chains.csv and summary.json, no bnn.json), as its manifest
// would hold them; nullopt if `out` does not look like one.
std::optional<Settings> older_rhat_settings(const std::filesystem::path& out) {
  if (!std::filesystem::exists(out / kConfigFile) || !std::filesystem::exists(out / kRhatSummaryFile) ||
      !std::filesystem::exists(out / "chains.csv")) {
    return std::nullopt;
  }
  try {
    Settings settings = experiment_keys(config::load_config(out / kConfigFile, {}));
    const auto summary = nlohmann::json::parse(io::read_file(out / kRhatSummaryFile));
    settings["rhat.chains"] = std::to_string(summary.at("chains").get<int64_t>());
    settings["rhat.repeats"] = std::to_string(summary.at("repeats").get<int64_t>());
    settings["rhat.rho"] = fmt::format("{}", summary.at("rho").get<double>());
    settings["rhat.loss_every"] = std::to_string(summary.at("loss_every").get<int64_t>());
    return settings;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Whether a member_NNN/ of `out` holds a repeat's saved chains.
bool has_saved_repeats(const std::filesystem::path& out) {
  const auto members = member_folders(out);
  return std::any_of(members.begin(), members.end(),
                     [](const auto& d) { return std::filesystem::exists(d / kRhatChainsFile); });
}

// Why `bnn rhat` of `config` with `options` may not write into `out`, or ""
// if it may (Note [Run ownership]).
std::string rhat_refusal(const std::filesystem::path& out, const config::Config& config, const Settings& options) {
  if (empty_folder(out, kRhatLockFile)) return "";
  const auto existing = read_manifest(out);
  Settings theirs;
  if (existing) {
    if (existing->kind != "rhat") {
      return fmt::format("--out {} holds {}; bnn rhat would write its own config.yaml and member_NNN/ there: give "
                         "--out a new folder",
                         out.string(), contents_of(existing->kind));
    }
    theirs = existing->settings;
  } else if (auto older = older_rhat_settings(out)) {
    theirs = std::move(*older);
  } else {
    return fmt::format("--out {} is not empty and is not a bnn rhat folder (no {}): bnn rhat would overwrite files "
                       "there (config.yaml, chains.csv, member_000/, ...); give --out a new or empty folder",
                       out.string(), kManifestFile);
  }
  // A folder whose bnn rhat failed or was stopped holds no result to keep,
  // unless it saved repeats (Note [Repeats that persist]).
  const bool saved = has_saved_repeats(out);
  if (!std::filesystem::exists(out / kRhatSummaryFile) && !saved) return "";
  const std::string discard =
      saved ? " (or remove its member_NNN/chains.json and summary.json to discard its saved repeats)" : "";
  if (const std::string d = differences_from(theirs, config); !d.empty()) {
    return fmt::format("--out {} holds the R-hat chains of another experiment ({}); give --out a new folder{}",
                       out.string(), d, discard);
  }
  std::vector<std::string> differences;
  for (const auto& [key, value] : options) {
    const auto it = theirs.find(key);
    const std::string there = it == theirs.end() ? "none" : it->second;
    if (there != value) differences.push_back(fmt::format("{}: {} there, {} now", key, shown(there), shown(value)));
  }
  if (differences.empty()) return "";
  return fmt::format("--out {} holds R-hat chains of this experiment with other options ({}); give --out a new "
                     "folder to keep both{}",
                     out.string(), fmt::join(differences, "; "), discard);
}

}  // namespace

io::FileLock claim_rhat_directory(const std::filesystem::path& out, const config::Config& config,
                                  const std::map<std::string, std::string>& options) {
  if (std::filesystem::exists(out) && !std::filesystem::is_directory(out)) {
    throw ConfigError(fmt::format("--out {} is a file; give a folder", out.string()));
  }
  refuse_member_folder(out);
  if (const std::string why = rhat_refusal(out, config, options); !why.empty()) throw ConfigError(why);
  create_folder(out);
  auto lock = io::FileLock::try_acquire(out / kRhatLockFile);
  if (!lock) {
    throw ConfigError(fmt::format("--out {}: another bnn rhat is writing there ({} is locked); wait for it to "
                                  "finish, or give another --out",
                                  out.string(), (out / kRhatLockFile).string()));
  }
  // Again under the lock: another bnn rhat may have claimed the folder, and
  // finished, between the first look and the lock.
  const bool had_manifest = has_manifest(out);
  if (const std::string why = rhat_refusal(out, config, options); !why.empty()) throw ConfigError(why);
  const nlohmann::json manifest = manifest_json("rhat", config, options);
  if (!publish_manifest(out, manifest, had_manifest)) {  // a `bnn run`'s, say
    if (const std::string why = rhat_refusal(out, config, options); !why.empty()) throw ConfigError(why);
    write_manifest(out, manifest);
  }
  return std::move(*lock);
}

void check_output_file(const std::filesystem::path& path, const std::string& command, const std::string& csv_header,
                       const std::vector<std::string>& json_keys) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    // Found now, not when the result is written after the work.
    const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
    if (!std::filesystem::is_directory(folder)) {
      throw ConfigError(fmt::format("{} --out {}: the folder {} does not exist", command, path.string(),
                                    folder.string()));
    }
    return;
  }
  if (std::filesystem::is_directory(status)) {
    throw ConfigError(fmt::format("{} --out {} is a folder; give a file name", command, path.string()));
  }
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) == 0 && !ec) {
    return;  // an empty file (mktemp's, say) holds nothing to keep
  }
  bool ours = false;
  try {
    if (!json_keys.empty() && path.extension() == ".json") {
      const auto j = nlohmann::json::parse(io::read_file(path));
      ours = j.is_object() && std::all_of(json_keys.begin(), json_keys.end(),
                                          [&](const std::string& key) { return j.contains(key); });
    } else {
      const std::string text = io::read_file(path);
      ours = text.compare(0, csv_header.size(), csv_header) == 0;
    }
  } catch (const std::exception&) {
    ours = false;  // unreadable or not JSON: not ours either
  }
  if (!ours) {
    throw ConfigError(fmt::format("{} --out {}: the file exists and is not an earlier output of {}, so it is not "
                                  "overwritten; give another file name, or move it away first",
                                  command, path.string(), command));
  }
}

}  // namespace bnn::pipeline
