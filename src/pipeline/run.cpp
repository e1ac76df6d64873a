#include "src/pipeline/run.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "data_loaders/dataset.h"
#include "data_loaders/registry.h"
#include "models/registry.h"
#include "src/config/sampler_options.h"
#include "src/io/atomic_file.h"
#include "src/io/file_lock.h"
#include "src/io/npy.h"
#include "src/io/zip_check.h"
#include "src/pipeline/evaluate.h"
#include "src/pipeline/member.h"
#include "src/pipeline/member_checkpoint.h"
#include "src/pipeline/ood.h"
#include "src/pipeline/preprocess.h"
#include "src/pipeline/sampling_phase.h"
#include "src/pipeline/stored_weights.h"
#include "src/runtime/device_streams.h"
#include "src/runtime/linkage.h"
#include "src/runtime/stop_signal.h"

namespace bnn::pipeline {

std::vector<int64_t> parse_member_list(const std::string& text, int64_t num_members) {
  return parse_index_list(text, num_members, IndexListNames{});
}

std::vector<int64_t> parse_index_list(const std::string& text, int64_t count, const IndexListNames& names) {
  std::vector<int64_t> out;
  const std::regex item("^\\s*(\\d{1,9})\\s*(?:-\\s*(\\d{1,9}))?\\s*$");
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::smatch m;
    if (!std::regex_match(part, m, item)) {
      throw config::ConfigError(
          fmt::format("{}: cannot parse '{}' (expected e.g. 3, 0-3 or 0,2,5-7)", names.option, text));
    }
    const int64_t lo = std::stoll(m[1]);
    const int64_t hi = m[2].matched ? std::stoll(m[2]) : lo;
    if (lo > hi) {
      throw config::ConfigError(fmt::format("{}: '{}' runs from {} down to {}; write ranges low-high, e.g. {}-{}",
                                            names.option, part, lo, hi, hi, lo));
    }
    if (hi >= count) {
      throw config::ConfigError(fmt::format("{}: '{}' selects {} outside 0-{} ({} = {})", names.option, text,
                                            names.things, count - 1, names.count, count));
    }
    for (int64_t i = lo; i <= hi; ++i) {
      if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

int64_t member_epochs(const config::Config& config) {
  return config.adam.epochs + config.swa.epochs + config.sampler.epochs + (config.map.optimizer == "lbfgs" ? 1 : 0);
}

int64_t parse_members_per_device(const std::string& text, std::string_view option) {
  if (text == "auto") return 0;
  const std::regex number("^\\s*(\\d+)\\s*$");
  std::smatch m;
  if (!std::regex_match(text, m, number) || m[1].length() > 6 || std::stoll(m[1]) < 1) {
    throw config::ConfigError(
        fmt::format("{}: '{}' is not a whole number from 1 to 999999, or auto", option, text));
  }
  return std::stoll(m[1]);
}

std::string_view member_design_name(MemberDesign design) {
  return design == MemberDesign::kStacked ? "stacked" : "streams";
}

MemberDesign parse_member_design(const std::string& text) {
  if (text == "streams") return MemberDesign::kStreams;
  if (text == "stacked") return MemberDesign::kStacked;
  throw config::ConfigError(fmt::format("--member-design: '{}' is not streams or stacked", text));
}

double parse_time_limit(const std::string& text) {
  // Hours, minutes, seconds, each optional, in that order; a bare number is seconds
  // unless it follows hours or minutes ("1h30" is refused).
  const std::string number = "(\\d{1,9}(?:\\.\\d*)?|\\.\\d+)";
  const std::regex duration("^\\s*(?:" + number + "\\s*h)?\\s*(?:" + number + "\\s*m)?\\s*(?:" + number +
                            "\\s*(s?))?\\s*$");
  std::smatch m;
  double seconds = 0;
  if (std::regex_match(text, m, duration) && !(m[3].matched && m[4].length() == 0 && (m[1].matched || m[2].matched))) {
    for (const auto& [group, scale] : {std::pair{1, 3600.0}, std::pair{2, 60.0}, std::pair{3, 1.0}}) {
      if (m[group].matched) seconds += std::stod(m[group]) * scale;
    }
  }
  if (std::regex_search(text, std::regex("(^|[^.\\d])\\d{10}"))) {
    throw config::ConfigError(fmt::format("--time-limit: '{}' is longer than bnn counts (at most 9 digits a unit, "
                                          "999999999 s: about 31 years)",
                                          text));
  }
  if (!(seconds > 0)) {
    throw config::ConfigError(fmt::format(
        "--time-limit: '{}' is not a positive duration: seconds, or hours, minutes and seconds with h, m and s "
        "(540, 9m, 1.5h, 11h45m)",
        text));
  }
  return seconds;
}

namespace {

// `members` as --members takes them, consecutive ones as ranges: 0-3,5,7-9.
std::string members_option(const std::vector<int64_t>& members) {
  std::string out;
  for (size_t i = 0; i < members.size();) {
    size_t j = i;
    while (j + 1 < members.size() && members[j + 1] == members[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j > i ? fmt::format("{}-{}", members[i], members[j])
                                             : std::to_string(members[i]));
    i = j + 1;
  }
  return out;
}
// Note [Why no CUDA] (src/runtime/linkage.h).
std::string why_no_cuda(const runtime::CudaLinkage& linkage) {
  return runtime::why_no_cuda_device(linkage, std::getenv("CUDA_VISIBLE_DEVICES"));
}
}  // namespace

torch::Device resolve_device(const std::string& name) {
  if (name == "auto") {
    if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
    // Quiet where CPU is all this LibTorch can do; a CUDA build that finds no GPU says why.
    const runtime::CudaLinkage linkage = runtime::cuda_linkage();
    if (!linkage.torch_cuda.empty()) spdlog::warn("device auto: the CPU, since {}", why_no_cuda(linkage));
    return torch::Device(torch::kCPU);
  }
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(name);
  } catch (const c10::Error&) {
    throw config::ConfigError(fmt::format("device '{}' is not valid: use auto, cpu, cuda or cuda:N", name));
  }
  if (device.is_cuda()) {
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (count == 0) {
      throw config::ConfigError(
          fmt::format("device '{}' requested but CUDA is not available: {}", name,
                      why_no_cuda(runtime::cuda_linkage())));
    }
    if (device.has_index() && device.index() >= count) {
      throw config::ConfigError(fmt::format("device '{}' requested but only {} CUDA device(s) exist", name, count));
    }
  }
  return device;
}

// Through the data set registry (data_loaders/registry.h). Image decoding
// uses run.threads (0 = all cores); augmentation and the image_folder split
// use run.seed.
data_loaders::Dataset load_dataset(const config::Config& config, torch::Device device) {
  const config::DataConfig& d = config.data;
  std::error_code ec;
  if (!std::filesystem::exists(d.dir, ec)) {
    throw config::ConfigError(fmt::format("config key 'data.dir': {} does not exist; give the folder holding the {} "
                                          "files (README.md, Datasets)",
                                          d.dir, d.dataset));
  }
  if (!std::filesystem::is_directory(d.dir, ec)) {
    throw config::ConfigError(fmt::format("config key 'data.dir': {} is a file; give the folder holding the {} files "
                                          "(README.md, Datasets)",
                                          d.dir, d.dataset));
  }
  data_loaders::LoadOptions o;
  o.dir = d.dir;
  o.train_limit = d.train_limit;
  o.test_limit = d.test_limit;
  o.side = d.image_size;
  o.standardize = d.standardize;
  o.skip_bad_images = d.skip_bad_images;
  o.augment_copies = {d.augment_copies.at(0), d.augment_copies.at(1)};
  o.split_ratio = d.split_ratio;
  o.channels = d.channels;
  o.seed = config.run.seed;
  o.threads = static_cast<int>(config.run.threads);
  data_loaders::Dataset data = data_loaders::load_dataset(d.dataset, o, device);
  // Before any run folder exists (a member would otherwise fail on it, after
  // the folder had recorded the batch size as its experiment's).
  if (data.train.size() > 0 && d.batch_size > data.train.size()) {
    throw config::ConfigError(fmt::format("config key 'data.batch_size': invalid value '{}': larger than the {} "
                                          "training examples of {} in {}",
                                          d.batch_size, data.train.size(), d.dataset, d.dir));
  }
  return data;
}


void check_batch_norm_batches(const config::Config& config, bool batch_norm, int64_t processes) {
  // A TorchScript module's BatchNorm2d takes one image (its statistics run
  // over the pixels too); bnn's own models normalise features, BatchNorm1d.
  if (!batch_norm || config.model.name == "torchscript") return;
  const int64_t b = config.data.batch_size;
  if (b / processes >= 2) return;  // each process's share: b / processes rows, or one more
  const std::string share =
      processes == 1 ? "" : fmt::format("with --distributed over {} processes a process's share of a batch is {} "
                                        "example(s), and ", processes, b / processes);
  throw config::ConfigError(fmt::format("config key 'data.batch_size': invalid value '{}': {}model {} has "
                                        "BatchNorm1d layers, whose training statistics need at least 2 examples; "
                                        "give data.batch_size {} or more{}",
                                        b, share, config.model.name, 2 * processes,
                                        config.model.name == "mlp" ? " (or model.batch_norm false)" : ""));
}

void check_retained_samples(const config::Config& config, int64_t num_batches) {
  const auto& s = config.sampler;
  const Retention retention = retention_of(config, num_batches);
  const int64_t thin = retention.thin();
  const int64_t after_burn_in = (s.epochs - s.burn_in) * num_batches;
  const int64_t retained = retention.count(s.epochs * num_batches);
  if (retained == 0) {
    throw config::ConfigError(fmt::format("config key 'sampler.thin': invalid value '{}': a sample every {} steps "
                                          "keeps none of the {} steps after burn-in (sampler.epochs {} - burn_in "
                                          "{}, {} batches an epoch); give at most {}",
                                          s.thin, thin, after_burn_in, s.epochs, s.burn_in, num_batches,
                                          after_burn_in));
  }
  // samplers/obabo.h: only a block's end is a state of the chain; inside a
  // block the position is a proposal the test may still reject. Samples are
  // kept, and each epoch's test accuracy is taken, where blocks end; so the
  // burn-in (whole epochs) ends at a block's end too.
  if (s.name == "obabo" && s.mh_block > 0 && (thin % s.mh_block != 0 || num_batches % s.mh_block != 0)) {
    throw config::ConfigError(fmt::format(
        "config key 'sampler.mh_block': invalid value '{}': obabo keeps a sample, and scores an epoch's end, only "
        "where a Metropolis-Hastings block ends (inside a block the position is a proposal the test may reject), so "
        "the batches of an epoch ({}) and the steps between samples ({}, sampler.thin{}) must be multiples of it; "
        "{} divides both",
        s.mh_block, num_batches, thin, s.thin == 0 ? " 0: an epoch" : "", std::gcd(thin, num_batches)));
  }
  const auto& e = config.evaluation;
  if (e.save_sample_weights && e.sample_weights_every > retained) {
    throw config::ConfigError(fmt::format("config key 'evaluation.sample_weights_every': invalid value '{}': a "
                                          "member keeps {} samples, so storing the weights of one in every {} "
                                          "stores none; give at most {} (or evaluation.save_sample_weights false)",
                                          e.sample_weights_every, retained, e.sample_weights_every, retained));
  }
}

namespace {

// Settings that change nothing, which older bnn accepted and recorded in
// their runs' bnn.json (refused, those runs could be neither resumed nor
// evaluated): said, not refused.
void warn_about_idle_settings(const config::Config& config) {
  const auto& s = config.sampler;
  if (s.gradient != "control_variate" && s.anchor_gradients != "auto") {
    spdlog::warn("sampler.anchor_gradients {} is not used: only the control variate (sampler.gradient "
                 "control_variate) has anchor gradients, and sampler.gradient is {}",
                 s.anchor_gradients, s.gradient);
  }
  if (s.name == "csghmc" && s.cycle_length == 1) {
    spdlog::warn("sampler.cycle_length 1: a cycle of one step runs every step at the full h, so this csghmc is "
                 "sghmc; give 2 or more steps, or 0 for 4 epochs");
  }
}

// The checks that need the data and the model (check_batch_norm_batches,
// check_retained_samples), with the way out for a run whose bnn.json already
// records the setting: a new run.
void check_sampling_plan(const config::Config& config, const data_loaders::Dataset& data, int64_t processes,
                         const std::filesystem::path& dir) {
  const bool batch_norm = check_model_builds(config, data);
  try {
    check_batch_norm_batches(config, batch_norm, processes);
    check_retained_samples(config, data_loaders::Partition::batches_in(data.train.size(), config.data.batch_size));
  } catch (const config::ConfigError& e) {
    if (!std::filesystem::exists(dir / kManifestFile)) throw;
    throw config::ConfigError(fmt::format("{}; {} records this setting as its experiment's, so start a new run "
                                          "(bnn run --config ... --out NEW_DIR) with it changed",
                                          e.what(), dir.string()));
  }
}

// Note [Sample storage]: what the stored samples of the members this command
// trains take on disk, from the same sizes the writes have (an .npy file is a
// 128-byte header of a short shape, then the values): the probabilities of
// the test split and of every OOD set per retained sample, the weights (and
// float BatchNorm statistics, float32) of every sample_weights_every-th. Said
// before training; where the folder's file system has less free, a warning
// (the run would stop with exit 74 when it fills).
void report_sample_storage(const config::Config& config, const data_loaders::Dataset& data,
                           const std::vector<OodSet>& ood, int64_t members, const std::filesystem::path& dir) {
  const auto& e = config.evaluation;
  if (members == 0 || (!e.save_sample_probs && !e.save_sample_weights)) return;
  constexpr double kHeader = 128;
  const int64_t num_batches = data_loaders::Partition::batches_in(data.train.size(), config.data.batch_size);
  const int64_t retained = retention_of(config, num_batches).count(config.sampler.epochs * num_batches);
  double per_member = 0;
  int64_t files = 0;
  if (e.save_sample_probs) {
    const double value = e.sample_probs_dtype == "float16" ? 2 : 4;
    double one = static_cast<double>(data.test.size() * data.num_classes) * value + kHeader;
    for (const OodSet& set : ood) one += static_cast<double>(set.images.size() * data.num_classes) * value + kHeader;
    per_member += one * static_cast<double>(retained);
    files += retained * static_cast<int64_t>(1 + ood.size());
  }
  if (e.save_sample_weights) {
    const auto model = models::make_model(model_spec(config, data), /*seed=*/0);
    int64_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += p.numel();
    const int64_t buffers = flat_buffers(*model).numel();
    const int64_t stored = retained / e.sample_weights_every;
    const double value = e.sample_weights_dtype == "float16" ? 2 : 4;
    const double one = static_cast<double>(parameters) * value + kHeader +
                       (buffers > 0 ? static_cast<double>(buffers) * 4 + kHeader : 0.0);
    per_member += one * static_cast<double>(stored);
    files += stored * (buffers > 0 ? 2 : 1);
  }
  const double total = per_member * static_cast<double>(members);
  constexpr double kMiB = 1024.0 * 1024.0;
  auto existing = std::filesystem::absolute(dir);
  while (!std::filesystem::exists(existing) && existing.has_parent_path() && existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  std::error_code ec;
  const auto space = std::filesystem::space(existing, ec);
  const std::string free_text = ec ? std::string("free space unknown")
                                   : fmt::format("{:.1f} MiB free there", static_cast<double>(space.available) / kMiB);
  spdlog::info("stored samples: {} file(s), {:.1f} MiB, per member; {:.1f} MiB for the {} member(s) to train into "
               "{} ({})",
               files, per_member / kMiB, total / kMiB, members, dir.string(), free_text);
  if (!ec && total > static_cast<double>(space.available)) {
    spdlog::warn("the stored samples of the {} member(s) to train need about {:.1f} MiB, more than the {:.1f} MiB "
                 "free for {}: the run will stop with exit 74 when the disk fills; raise sampler.thin or "
                 "evaluation.sample_weights_every, store float16 (evaluation.sample_probs_dtype, "
                 "sample_weights_dtype), turn off evaluation.save_sample_weights, or free space",
                 members, total / kMiB, static_cast<double>(space.available) / kMiB, dir.string());
  }
}

}  // namespace

std::vector<std::string> parse_device_list(const std::string& text) {
  std::vector<std::string> out;
  if (text == "all") {
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (count == 0) {
      throw config::ConfigError(
          fmt::format("--devices all: no CUDA device is visible: {}", why_no_cuda(runtime::cuda_linkage())));
    }
    for (int64_t i = 0; i < count; ++i) out.push_back(fmt::format("cuda:{}", i));
    return out;
  }
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) throw config::ConfigError(fmt::format("--devices: empty entry in '{}'", text));
    resolve_device(item);  // validates, with an error naming the entry
    out.push_back(item);
  }
  if (out.empty()) throw config::ConfigError("--devices: no device given");
  return out;
}

namespace {

// The members of `requested` that have not finished in `dir`, in order.
std::vector<int64_t> unfinished_members(const std::filesystem::path& dir, const std::vector<int64_t>& requested) {
  // A finished member is never run again into the same directory, so a rerun
  // (or a second process given overlapping --members) cannot destroy results.
  std::vector<int64_t> todo;
  for (int64_t index : requested) {
    if (member_finished(member_dir(dir, index))) {
      spdlog::info("member {} already finished in {}; skipping", index, dir.string());
    } else {
      todo.push_back(index);
    }
  }
  return todo;
}

// The ranks of a distributed run must run one experiment, the same members,
// both fresh or both resumed: else their collectives stop pairing up part-way
// (gloo aborts the process) or every rank trains rank 0's members whatever
// its own --members said. Compared before any work; every rank gets the same
// answer, and all stop with the same error, naming the keys that differ.
// A 64-bit hash's bits as an int64, for a tensor the ranks compare.
int64_t hash_bits(std::string_view bytes) {
  const uint64_t h = fnv1a(bytes);
  int64_t bits = 0;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

void check_ranks_were_given_one_run(distributed::ProcessGroup& group, const config::Config& config,
                                    const RunOptions& options) {
  const auto agree = [&](const std::string& text) {
    return group.identical_on_all_ranks(torch::tensor({hash_bits(text)}));
  };
  const auto settings = rank_agreement_settings(config);
  std::string all;
  for (const auto& [key, value] : settings) all += key + "=" + value + "\n";
  const std::string members = options.members.empty() ? std::string("all") : members_option(options.members);
  std::vector<std::string> differ;
  if (!agree(all)) {
    // Key by key, where every rank has the same keys (the same bnn).
    if (!group.identical_on_all_ranks(torch::tensor({static_cast<int64_t>(settings.size())}))) {
      differ.push_back("the config keys (the ranks run different builds of bnn)");
    } else {
      for (const auto& [key, value] : settings) {
        if (!agree(key + "=" + value)) differ.push_back(key);
      }
    }
  }
  if (!agree(members)) differ.push_back("--members");
  if (!agree(options.resume ? "resume" : "new")) differ.push_back("--resume");
  if (differ.empty()) return;
  throw config::ConfigError(fmt::format(
      "the {} ranks of this distributed run were not given the same run: {} differ; give every rank the same "
      "command (rank {} was given: --members {}, {})",
      group.world_size(), fmt::join(differ, ", "), group.rank(), members,
      options.resume ? "--resume " + options.run_dir.string() : "a new run"));
}

// Each rank reads the data itself, perhaps from its own copy: copies that
// differ would give the ranks' shards of one batch different examples, and
// nothing else would notice (the all-reduced gradients keep their parameters
// equal). The labels of both splits are compared.
void check_ranks_read_one_data_set(distributed::ProcessGroup& group, const config::Config& config,
                                   const data_loaders::Dataset& data) {
  const auto digest = [](const torch::Tensor& labels) {
    const torch::Tensor l = labels.to(torch::kCPU, torch::kLong).contiguous();
    const auto size = static_cast<size_t>(l.numel()) * sizeof(int64_t);
    return torch::tensor({hash_bits(std::string_view(static_cast<const char*>(l.data_ptr()), size)), l.numel()});
  };
  std::vector<std::string> differ;
  if (!group.identical_on_all_ranks(digest(data.train.labels))) differ.push_back("training");
  if (!group.identical_on_all_ranks(digest(data.test.labels))) differ.push_back("test");
  if (differ.empty()) return;
  throw config::ConfigError(fmt::format("the {} ranks of this distributed run read different data: the labels of "
                                        "the {} split{} differ (rank {} read data.dir {}); give every rank the same "
                                        "data",
                                        group.world_size(), fmt::join(differ, " and "), differ.size() > 1 ? "s" : "",
                                        group.rank(), config.data.dir));
}

// Rank 0's `todo` on every rank (the other ranks may not see the directory).
std::vector<int64_t> share_todo(distributed::ProcessGroup& group, const std::vector<int64_t>& todo,
                                int64_t num_members) {
  torch::Tensor selected = torch::zeros({num_members}, torch::kLong);
  if (group.rank() == 0) {
    for (int64_t index : todo) selected[index] = 1;
  }
  group.all_reduce_sum(selected);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < num_members; ++i) {
    if (selected[i].item<int64_t>() != 0) out.push_back(i);
  }
  return out;
}

// Note [Member locks]: the lock of member `index`, or nullopt (logged) if
// another process holds it or the member has finished meanwhile.
// Note [Run ownership]: the run folder went away under this process.
struct RunFolderGone : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::optional<io::FileLock> lock_member(const std::filesystem::path& dir, int64_t index) {
  const auto member = member_dir(dir, index);
  // Only the member's own folder is made: a run folder deleted meanwhile is
  // not made again (RunFolderGone).
  std::error_code ec;
  std::filesystem::create_directory(member, ec);
  if (ec == std::errc::no_such_file_or_directory) throw RunFolderGone("the folder is gone");
  if (ec) throw std::filesystem::filesystem_error("cannot create the member folder", member, ec);
  auto lock = io::FileLock::try_acquire(member / kLockFile);
  if (!lock) {
    spdlog::warn("member {}: another process is training it ({} is locked); skipping", index,
                 (member / kLockFile).string());
    return std::nullopt;
  }
  if (member_finished(member)) {
    spdlog::info("member {} already finished in {}; skipping", index, dir.string());
    return std::nullopt;
  }
  // Note [Atomic writes]: a writer killed between its temporary file and the
  // rename leaves the temporary behind. With the member's lock held nobody
  // else writes in its folder, so any found there now are such leftovers.
  if (const int64_t removed = io::remove_temporary_files(member); removed > 0) {
    spdlog::info("member {}: removed {} temporary file(s) left by an interrupted write", index, removed);
  }
  return lock;
}

// --throughput (Note [Members for a time limit] in throughput.h): K for the
// time the deadline leaves, at most `most`; none, with a warning, where the
// table has no row for it.
std::optional<int64_t> members_for_time_left(const RunOptions& options, torch::Device device, int64_t epochs,
                                             int64_t members_to_run, int64_t most, const AtOnceNames& names) {
  const std::string_view noun = names.noun;
  const double left = options.deadline->seconds() - options.deadline->elapsed();
  const std::string_view design = member_design_name(options.design);
  const std::string file = options.throughput->file.string();
  const auto choice = members_for_time(*options.throughput, design, epochs, members_to_run, left, most);
  if (!choice) {
    spdlog::warn("--throughput {}: no finished {} run of at most {} at once; choosing by memory instead", file,
                 design, std::min(most, members_to_run));
    return std::nullopt;
  }
  const std::string each = fmt::format(
      "each {} about {} s ({} epochs at {:.4g} member-epochs/s with {} at once, +{:.0f}%)", noun,
      choice->member_seconds < 10.0 ? fmt::format("{:.2g}", choice->member_seconds)
                                    : fmt::format("{:.0f}", choice->member_seconds),
      epochs, choice->member_epochs_per_s, choice->members_per_device,
      (kThroughputMargin - 1.0) * 100.0);
  if (choice->whole_members == 0) {
    spdlog::warn("{}: {} {}(s) at a time by --throughput {}: {}; no {} is expected to end in the {:.0f} s left",
                 device.str(), choice->members_per_device, noun, file, each, noun, left);
  } else {
    spdlog::info("{}: {} {}(s) at a time by --throughput {}: {}; {} whole {}(s) expected in the {:.0f} s left",
                 device.str(), choice->members_per_device, noun, file, each, choice->whole_members, noun, left);
  }
  return choice->members_per_device;
}

// Members trained at once on `device`, one of `device_entries` given, each
// of `epochs` epochs: options.members_per_device, or for 0 (auto) by
// --throughput where given, else as many as fit in its free memory
// (auto_members_per_device), on the CPU auto_members_per_cpu. Where the free
// memory is known, logs the choice or warns when the members asked for do
// not fit.
int64_t members_per_device(const config::Config& config, const data_loaders::Dataset& data, torch::Device device,
                           const RunOptions& options, int64_t members_to_run, int64_t device_entries,
                           int64_t epochs, const AtOnceNames& names = {}) {
  int64_t requested = options.members_per_device;
  // More at once than there are members to train would be workers with
  // nothing to do, and in a stacked group slots that every pass computes.
  if (requested > 1 && members_to_run >= 1 && requested > members_to_run) {
    spdlog::info("{} {}: {} {}(s) to train{}, so {} at a time", names.option, requested, members_to_run, names.noun,
                 device_entries > 1 ? " on each device" : "", members_to_run);
    requested = members_to_run;
  }
  const MemberDesign design = options.design;
  // `--devices cpu,cpu` has chosen its workers already, table or not.
  const bool chosen = device.is_cpu() && device_entries > 1;
  if (chosen && options.throughput) {
    spdlog::info("--throughput {}: not used, as the list of CPU workers (--devices) has chosen them",
                 options.throughput->file.string());
  }
  if (requested == 0 && options.throughput && options.deadline != nullptr && members_to_run > 0 && !chosen) {
    const MemberMemory member = estimate_member_memory(config, data, design);
    std::optional<int64_t> free_bytes;
    if (device.is_cpu()) {
      free_bytes = runtime::host_available_memory();
    } else if (const auto memory = runtime::device_memory(device)) {
      free_bytes = memory->free_bytes;
    }
    int64_t most = free_bytes ? std::min(members_to_run, members_that_fit(member, *free_bytes)) : members_to_run;
    // On the CPU no more members at once than threads, as auto keeps them
    // (one member a thread at least; --threads 1 trains them one by one).
    if (device.is_cpu()) most = std::min<int64_t>(most, std::max(1, torch::get_num_threads()));
    if (const auto k = members_for_time_left(options, device, epochs, members_to_run, most, names)) return *k;
  }
  if (device.is_cpu() && requested == 0) {
    const int64_t threads = torch::get_num_threads();
    if (chosen || threads <= 1 || members_to_run <= 1) return 1;
    const auto available = runtime::host_available_memory();
    const int64_t k =
        auto_members_per_cpu(estimate_member_memory(config, data, design), threads, available, members_to_run);
    spdlog::info("cpu: {} threads, {}: {} {}(s) at a time ({} 1 trains them one by one, with the same "
                 "results{})",
                 threads,
                 available ? fmt::format("{:.1f} GiB available", *available / kGiB) : "available memory unknown", k,
                 names.noun, names.option, design == MemberDesign::kStacked ? " to float rounding" : "");
    return k;
  }
  const auto memory = runtime::device_memory(device);
  if (!memory || members_to_run == 0 || requested == 1) return requested == 0 ? 1 : requested;
  const MemberMemory member = estimate_member_memory(config, data, design);
  if (requested == 0) {
    const int64_t k = auto_members_per_device(member, memory, members_to_run);
    spdlog::info("{}: {:.1f} GiB free; about {:.2f} GiB per member ({} parameters): {} member(s) at a time",
                 device.str(), memory->free_bytes / kGiB, member.total_bytes / kGiB, member.parameters, k);
    return k;
  }
  if (static_cast<double>(requested * member.total_bytes) > static_cast<double>(memory->free_bytes)) {
    spdlog::warn("--members-per-device {} on {}: about {:.2f} GiB per member, {:.1f} GiB asked for, {:.1f} GiB free; "
                 "members that run out of memory fail, the others go on",
                 requested, device.str(), member.total_bytes / kGiB, requested * member.total_bytes / kGiB,
                 memory->free_bytes / kGiB);
  }
  return requested;
}

}  // namespace

bool check_model_builds(const config::Config& config, const data_loaders::Dataset& data) {
  std::string why;
  try {
    const auto model = models::make_model(model_spec(config, data), /*seed=*/0);
    return model->has_batch_norm();
  } catch (const c10::Error& e) {
    why = e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    why = "out of memory";
  } catch (const std::invalid_argument& e) {  // a torchscript module that fails its checks, naming the file
    throw config::ConfigError(fmt::format("config key 'model.path': {}", e.what()));
  }
  why = why.substr(0, why.find('\n'));
  // LibTorch's allocator says "[enforce fail at alloc_cpu.cpp:NN] ... DefaultCPUAllocator: can't allocate ...".
  if (const auto at = why.find("DefaultCPUAllocator: "); at != std::string::npos) {
    why = why.substr(at + std::string("DefaultCPUAllocator: ").size());
    why = why.substr(0, why.find(". Error code"));
  }
  throw config::ConfigError(fmt::format("config keys 'model.name' {}, 'model.hidden' [{}]: the model cannot be built "
                                        "for {} inputs of shape [{}]: {}",
                                        config.model.name, fmt::join(config.model.hidden, ", "), data.name,
                                        fmt::join(data.input_shape, ", "), why));
}

namespace {

// Note [Stacked members in a run]: `slots` models of `config` on `device`
// as one group. Throws ConfigError naming the layer that cannot be stacked.
std::unique_ptr<StackedGroup> make_stacked_group(const config::Config& config, const data_loaders::Dataset& data,
                                                 torch::Device device, int64_t slots) {
  if (config.model.name == "torchscript") {  // its layers are mirrors of a scripted graph, not torch::nn layers
    throw config::ConfigError("--member-design stacked: model.name torchscript cannot be stacked (only bnn's own "
                              "models can); use --member-design streams");
  }
  std::vector<std::shared_ptr<models::Classifier>> templates;
  for (int64_t k = 0; k < slots; ++k) {
    templates.push_back(models::make_model(model_spec(config, data), /*seed=*/0));
    templates.back()->to(device);
  }
  try {
    return std::make_unique<StackedGroup>(templates);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(fmt::format("--member-design stacked: model {} cannot be stacked: {}",
                                          config.model.name, e.what()));
  }
}

// Note [TorchScript models] (models/torchscript.h): a run keeps the module it
// trains as <run>/model.pt; more members, a resume or another process must
// give a model.path with the same contents.
void check_model_file(const std::filesystem::path& dir, const config::Config& config) {
  if (config.model.name != "torchscript") return;
  const auto copy = dir / kModelFile;
  if (!std::filesystem::exists(copy)) return;
  if (io::read_file(copy) != io::read_file(config.model.path)) {
    throw config::ConfigError(fmt::format("config key 'model.path': {} is not the module run directory {} was started "
                                          "with ({} differs); give that module, or another --out",
                                          config.model.path, dir.string(), copy.string()));
  }
}

}  // namespace

MemberMemory estimate_member_memory(const config::Config& config, const data_loaders::Dataset& data,
                                    MemberDesign design) {
  MemberMemory m;
  const auto model = models::make_model(model_spec(config, data), /*seed=*/0);
  for (const auto& p : model->parameters()) m.parameters += p.numel();
  const double d = static_cast<double>(m.parameters);
  // x, gradient, v, x*, control-variate sum, two noise buffers; Adam's two
  // moments; the SWA running sum in double (docs/performance.md).
  m.state_bytes = static_cast<int64_t>(4.0 * d * (5 + 2 + 2) + 8.0 * d);
  const int64_t num_batches =
      std::max<int64_t>(1, data_loaders::Partition::batches_in(data.train.size(), config.data.batch_size));
  const auto options = config::langevin_options(config, num_batches, m.parameters);
  if (options.estimator() == samplers::GradientEstimator::kControlVariate &&
      options.anchor_gradients() == samplers::AnchorGradients::kStored) {
    m.state_bytes += static_cast<int64_t>(4.0 * d * static_cast<double>(num_batches));
  }
  if (design == MemberDesign::kStacked) m.state_bytes += static_cast<int64_t>(16.0 * d);
  m.total_bytes = m.state_bytes + kActivationAllowanceBytes;
  return m;
}

int64_t members_at_once(const config::Config& config, const data_loaders::Dataset& data, torch::Device device,
                        const RunOptions& options, int64_t members_to_run, int64_t epochs, const AtOnceNames& names) {
  return members_per_device(config, data, device, options, members_to_run, /*device_entries=*/1, epochs, names);
}

ThroughputTable throughput_option(const std::string& file, bool time_limit, int64_t at_once, std::string_view design,
                                  const AtOnceNames& names) {
  if (!time_limit) {
    throw config::ConfigError(
        fmt::format("--throughput needs --time-limit: it chooses the {}s at once for the time left", names.noun));
  }
  if (at_once != 0) {
    std::string chosen(names.option.substr(2));  // "--members-per-device" -> "members per device"
    std::replace(chosen.begin(), chosen.end(), '-', ' ');
    throw config::ConfigError(
        fmt::format("--throughput chooses the {}; drop {} {}", chosen, names.option, at_once));
  }
  ThroughputTable table = read_throughput_table(file);
  require_usable(table, design);
  return table;
}

int64_t members_that_fit(const MemberMemory& member, int64_t free_bytes) {
  return std::max<int64_t>(
      1, static_cast<int64_t>(0.9 * static_cast<double>(free_bytes) / static_cast<double>(member.total_bytes)));
}

int64_t auto_members_per_device(const MemberMemory& member, const std::optional<runtime::DeviceMemory>& device,
                                int64_t members_to_run) {
  if (!device) return 1;
  return std::max<int64_t>(1, std::min({members_that_fit(member, device->free_bytes), kMaxAutoMembersPerDevice,
                                        members_to_run}));
}

int64_t auto_members_per_cpu(const MemberMemory& member, int64_t threads, std::optional<int64_t> available,
                             int64_t members_to_run) {
  if (threads <= 1 || !available) return 1;
  return std::max<int64_t>(1, std::min({kMaxAutoMembersPerCpu, members_to_run, members_that_fit(member, *available)}));
}

int run(const config::Config& config, const RunOptions& options) {
  std::vector<torch::Device> devices;
  for (const auto& name : options.devices.empty() ? std::vector<std::string>{config.run.device} : options.devices) {
    devices.push_back(resolve_device(name));
  }
  distributed::ProcessGroup* group = options.group;
  if (group != nullptr) {
    if (devices.size() != 1) throw config::ConfigError("a distributed run uses one device per rank; drop --devices");
    if (config.sampler.name == "nogin") {
      throw config::ConfigError("sampler nogin needs per-example gradients, which a distributed run does not gather "
                                "across ranks; run it without --distributed");
    }
    if (options.members_per_device > 1) {
      throw config::ConfigError(
          "--members-per-device: a distributed run trains one member at a time on each rank; drop the option");
    }
    if (options.design == MemberDesign::kStacked) {
      throw config::ConfigError(
          "--member-design stacked: a distributed run trains one member at a time on each rank; drop the option");
    }
  }
  if (group != nullptr) check_ranks_were_given_one_run(*group, config, options);
  const auto& dir = options.run_dir;
  // Note [Run ownership]: checked now, claimed once the data and model are known to work.
  on_rank_zero(group, "before training", [&] { check_run_directory(dir, config, options.resume); });

  // One copy of the data per distinct device.
  std::map<std::string, data_loaders::Dataset> data;
  for (const auto& device : devices) {
    if (data.count(device.str())) continue;
    const auto load_start = std::chrono::steady_clock::now();
    const data_loaders::Dataset& d = data[device.str()] = load_dataset(config, device);
    spdlog::info("{}: {} training, {} test {} on {} ({:.1f}s)", d.name, d.train.size(), d.test.size(),
                 d.features ? "examples" : "images", device.str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  }
  if (group != nullptr) check_ranks_read_one_data_set(*group, config, data.begin()->second);
  // Note [Out-of-distribution sets]: one copy per device, checked before the directory is claimed.
  std::map<std::string, std::vector<OodSet>> ood;
  for (const auto& [device, d] : data) {
    ood[device] = load_ood_sets(config, d, d.test.images.device());
    for (const OodSet& set : ood[device]) {
      if (device == data.begin()->first) spdlog::info("OOD set {}: {} examples", set.name, set.images.size());
    }
  }
  check_sampling_plan(config, data.begin()->second, group != nullptr ? group->world_size() : 1, dir);
  warn_about_idle_settings(config);
  if (options.design == MemberDesign::kStacked) make_stacked_group(config, data.begin()->second, torch::kCPU, 1);
  std::vector<int64_t> members = options.members;
  if (members.empty()) {
    for (int64_t i = 0; i < config.run.members; ++i) members.push_back(i);
  }
  // What only rank 0 checks and writes (Note [Data-parallel member]) stops
  // every rank where it fails (on_rank_zero).
  std::vector<int64_t> todo;
  // Note [Member locks]. A data-parallel run's ranks must agree on the
  // members, so rank 0 locks all of its members before sharing the list and
  // holds the locks to the end; other runs lock each member as they start it.
  std::vector<io::FileLock> held;
  int64_t held_by_others = 0;  // of rank 0's members (Note [Member locks])
  on_rank_zero(group, "before training", [&] {
    todo = unfinished_members(dir, members);
    check_model_file(dir, config);
    check_same_test_labels(dir, data.begin()->second.test.labels);
    check_members_are_members(dir, members);
    report_sample_storage(config, data.begin()->second, ood.begin()->second, static_cast<int64_t>(todo.size()), dir);
    claim_run_directory(dir, config, options.resume);
    if (config.model.name == "torchscript" && !std::filesystem::exists(dir / kModelFile)) {
      io::write_file_atomically(dir / kModelFile, io::read_file(config.model.path));
    }
    io::write_npy(dir / kLabelsFile, data.begin()->second.test.labels);
    io::write_file_atomically(dir / kPreprocessFile,
                              to_json(preprocess_of(config, data.begin()->second)).dump(2) + "\n");
    // Note [Checkpoint integrity]: the checkpoints to resume from, before any
    // member starts: with several at once, one found damaged only when its
    // turn came would end the command after the others had trained, with no
    // metrics. A member another process trains (its lock taken: a probe,
    // released at once, as a CRC takes seconds a GB and the other process
    // would skip the member meanwhile) is its to check, and its checkpoint
    // may go as it finishes.
    for (const int64_t index : todo) {
      const auto member = member_dir(dir, index);
      const auto checkpoint = member / kCheckpointFile;
      std::error_code ec;
      if (!std::filesystem::exists(checkpoint, ec)) continue;
      if (!io::FileLock::try_acquire(member / kLockFile)) continue;
      std::string damage;
      try {
        damage = io::zip_file_damage(checkpoint);
      } catch (const std::exception&) {
        if (!std::filesystem::exists(checkpoint, ec)) continue;  // finished meanwhile
        throw;
      }
      if (!damage.empty() && !member_finished(member)) {
        throw std::runtime_error(damaged_checkpoint(checkpoint, damage) + " (no member was trained)");
      }
    }
    if (group == nullptr) return;
    std::vector<int64_t> locked;
    for (int64_t index : todo) {
      if (auto lock = lock_member(dir, index)) {
        held.push_back(std::move(*lock));
        locked.push_back(index);
      } else if (!member_finished(member_dir(dir, index))) {
        ++held_by_others;
      }
    }
    todo = std::move(locked);
  });
  if (group != nullptr) todo = share_todo(*group, todo, config.run.members);

  // Note [Members per device] (src/runtime/device_streams.h): K workers per
  // device entry, each on a CUDA stream of its own.
  const int64_t todo_per_device =
      (static_cast<int64_t>(todo.size()) + static_cast<int64_t>(devices.size()) - 1) /
      static_cast<int64_t>(devices.size());
  const int64_t per_device =
      group != nullptr ? 1
                       : members_per_device(config, data.begin()->second, devices.front(), options,
                                            todo_per_device, static_cast<int64_t>(devices.size()),
                                            member_epochs(config));
  // Note [Stacked members in a run]: a member's bits in a stacked pass are
  // the same whatever the slots beside it, from two slots up; a group of one
  // slot is its own model's arithmetic. So where one member at a time is
  // asked for (or is all that is left to resume), the stacked design's
  // group keeps two slots, one of them free, for its one worker: a stacked
  // run resumed with one member left ends with the bits it would have had
  // uninterrupted.
  int64_t slots = per_device;
  if (options.design == MemberDesign::kStacked && per_device == 1 && !todo.empty()) {
    const MemberMemory member = estimate_member_memory(config, data.begin()->second, options.design);
    const auto full = std::find_if(devices.begin(), devices.end(), [&](const torch::Device& device) {
      const auto memory = runtime::device_memory(device);
      return memory && members_that_fit(member, memory->free_bytes) < 2;
    });
    if (full != devices.end()) {
      spdlog::warn("--member-design stacked: the free memory of {} holds one member's slot, not the two a stacked "
                   "pass needs; one member at a time on its own model (its bits then differ from a stacked pass's)",
                   full->str());
    } else {
      slots = 2;
      spdlog::info("--member-design stacked: one member at a time, in a group of 2 slots, one of them free, so "
                   "that its arithmetic is a stacked pass's");
    }
  }
  std::vector<torch::Device> workers;
  for (const auto& device : devices) {
    for (int64_t k = 0; k < per_device; ++k) workers.push_back(device);
  }
  // Note [Stacked members in a run]: one group per device entry, its slots
  // the entry's workers (and a free one beside a worker alone); they share
  // the device's stream, the one the group's rounds run on.
  const bool stacked = options.design == MemberDesign::kStacked && slots > 1;
  std::vector<std::unique_ptr<StackedGroup>> groups;
  if (stacked) {
    for (const auto& device : devices) {
      groups.push_back(make_stacked_group(config, data.at(device.str()), device, slots));
    }
  }
  // The data set was put on the device by this thread's stream; the workers'
  // streams do not wait for it by themselves.
  for (const auto& device : devices) runtime::synchronize_device(device);
  // Workers take the next member from a shared counter; a member failure is
  // counted, an exception (I/O) stops that worker and is rethrown at the end.
  // Note [Time limit]: members stopped by the deadline, or not started, are `left`.
  const int64_t schedule = member_epochs(config);
  // Whether the deadline keeps the next member from starting.
  const auto out_of_time = [&] {
    return options.deadline != nullptr && !(options.whole_members ? options.deadline->allows_a_member(schedule)
                                                                  : options.deadline->allows_an_epoch());
  };
  std::atomic<size_t> next{0};
  std::atomic<int64_t> failed{0};
  std::atomic<int64_t> left{0};
  std::atomic<int64_t> held_elsewhere{held_by_others};  // Note [Member locks]: skipped
  std::atomic<int64_t> lost{0};            // Note [Member locks]: stopped, their lock files gone
  // Note [Run ownership]: why the folder stopped being this run's (deleted,
  // or taken by another experiment) while it ran; no member starts after.
  std::mutex folder_mutex;
  std::optional<std::string> folder_lost;
  std::atomic<int64_t> not_started{0};
  std::vector<std::exception_ptr> errors(workers.size());
  auto worker = [&](size_t w) {
    try {
      // A stacked group's workers keep the device's default stream, and so
      // does a worker alone, whose device is made current all the same (on
      // cuda:N, LibTorch would otherwise also open a context on GPU 0).
      const runtime::WorkerStream stream(workers[w], !stacked && workers.size() > 1);
      MemberContext context{config, data.at(workers[w].str()), workers[w], dir, group,
                            &ood.at(workers[w].str()), options.deadline};
      if (stacked) {
        context.stacked = groups[w / static_cast<size_t>(per_device)].get();
        context.slot = static_cast<int64_t>(w % static_cast<size_t>(per_device));
      }
      for (size_t i; (i = next++) < todo.size();) {
        // Note [Stop signals]: a data-parallel run's ranks agree, so that they stop together.
        bool stop = runtime::stop_signal() != 0 || out_of_time();
        if (group != nullptr) stop = group->any_rank(stop);
        if (stop) {
          ++left;
          continue;
        }
        // Note [Run ownership]: checked before the member's folder is made. A
        // data-parallel run's ranks follow rank 0's list, and do not check.
        // `why` (nullopt: look now) the folder is lost, if it is; then the member is not started.
        const auto lost_folder = [&](std::optional<std::string> why) {
          const std::lock_guard<std::mutex> guard(folder_mutex);
          if (!folder_lost) folder_lost = why ? why : run_directory_lost(dir, config);
          if (folder_lost) ++not_started;
          return folder_lost.has_value();
        };
        if (group == nullptr && lost_folder(std::nullopt)) continue;
        // Note [Member locks]: one process at a time trains a member. A
        // data-parallel run's ranks follow rank 0's list instead.
        std::optional<io::FileLock> lock;
        try {
          if (group == nullptr && !(lock = lock_member(dir, todo[i]))) {
            ++held_elsewhere;
            continue;
          }
        } catch (const RunFolderGone& gone) {
          lost_folder(gone.what());
          continue;
        }
        // --whole-members: a member trained from its start (no checkpoint to resume) times a whole
        // member, on the deadline's clock.
        const bool timed = options.deadline != nullptr && options.whole_members &&
                           !std::filesystem::exists(member_dir(dir, todo[i]) / kCheckpointFile);
        const double began = timed ? options.deadline->elapsed() : 0.0;
        // Each write of the member checks that its lock is still this process's; a
        // data-parallel run's ranks could not stop together, and do not check.
        MemberContext locked = context;
        locked.lock = lock ? &*lock : nullptr;
        const MemberOutcome outcome = run_member(locked, todo[i]);
        if (timed && outcome.ok) options.deadline->member_took(options.deadline->elapsed() - began);
        if (outcome.stopped) {
          ++left;
        } else if (outcome.lock_lost) {
          ++lost;
        } else if (!outcome.ok) {
          ++failed;
        }
      }
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  if (workers.size() == 1) {
    worker(0);
  } else {
    std::vector<std::string> names;
    for (const auto& device : devices) names.push_back(device.str());
    if (per_device == 1) {
      spdlog::info("{} workers on {}", workers.size(), fmt::join(names, ", "));
    } else {
      const bool streams = runtime::has_worker_streams() && workers.front().is_cuda();
      spdlog::info("{} workers on {}: {} members at a time per device{}", workers.size(), fmt::join(names, ", "),
                   per_device,
                   stacked   ? ", their gradients evaluated as one stacked model (--member-design stacked)"
                   : streams ? ", each on its own CUDA stream"
                             : "");
    }
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers.size(); ++w) threads.emplace_back(worker, w);
    for (auto& t : threads) t.join();
  }
  for (size_t d = 0; d < groups.size(); ++d) {
    const int64_t passes = groups[d]->rounds();
    if (passes == 0) continue;
    // `--devices cpu,cpu` makes two groups on one device: tell their lines apart.
    const bool named_twice = std::count(devices.begin(), devices.end(), devices[d]) > 1;
    spdlog::info("{}{}: {} stacked passes, {:.2f} members in each on average", devices[d].str(),
                 named_twice ? fmt::format(" (group {} of {})", d + 1, groups.size()) : std::string(), passes,
                 static_cast<double>(groups[d]->evaluations()) / static_cast<double>(passes));
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  // Note [Stop signals]: whether a signal came before the evaluation, agreed
  // as `left` and `failed` are.
  const int signo = runtime::stop_signal();
  const bool stop = group != nullptr ? group->any_rank(signo != 0) : signo != 0;
  // Rank 0 evaluates. Note [Rank 0's failures]: its exit code, or its
  // failure, is every rank's, once it has written the run's outputs.
  const auto finish = [&]() -> int {
    // A rank that was not signalled itself stopped with the others.
    const std::string signalled =
        signo != 0 ? fmt::format("stopped by {}", runtime::signal_name(signo)) : "stopped with the other ranks";
    if (!folder_lost && group == nullptr) folder_lost = run_directory_lost(dir, config);
    if (folder_lost) {
      spdlog::error("{} is no longer this run's folder: {}; {} member(s) not started there, and no metrics written "
                    "(the folder's files are left as they are)",
                    dir.string(), *folder_lost, not_started.load());
      return 3;
    }
    const std::string resume =
        fmt::format("bnn run --resume {}{}{}{}", dir.string(),
                    options.members.empty() ? "" : " --members " + members_option(options.members),
                    options.devices.empty() ? "" : fmt::format(" --devices {}", fmt::join(options.devices, ",")),
                    options.design == MemberDesign::kStacked ? " --member-design stacked" : "");
    if (left > 0) {
      const bool late = signo == 0 && options.deadline != nullptr && (group == nullptr || out_of_time());
      const std::string why = late ? fmt::format("time limit of {:g} s reached after {:.1f} s",
                                                 options.deadline->seconds(), options.deadline->elapsed())
                                   : signalled;
      const size_t finished = finished_members(dir).size();
      spdlog::warn("{}: {} member(s) left unfinished{}, {} finished in {}; continue with: {} (the metrics are written "
                   "when the last member finishes{})",
                   why, left.load(), failed > 0 ? fmt::format(", {} failed", failed.load()) : std::string(), finished,
                   dir.string(), resume,
                   finished > 0 ? fmt::format("; bnn evaluate {} scores the finished ones now", dir.string()) : "");
      return runtime::kExitTimeLimit;
    }
    if (finished_members(dir).empty()) {
      if (failed == 0 && held_elsewhere > 0) {  // nothing failed: the others write the metrics
        spdlog::info("no member of {} has finished yet: the {} member(s) left are being trained by other processes, "
                     "and the metrics are written when the last of them finishes",
                     dir.string(), held_elsewhere.load());
        return 0;
      }
      spdlog::error("no member of {} has finished: no metrics written", dir.string());
      return 3;
    }
    if (stop) {
      const bool failures = failed > 0 || lost > 0;
      spdlog::warn("{} before evaluating: {}; {} {} and writes the metrics", signalled,
                   failures ? fmt::format("{} member(s) failed and {} stopped when their lock files were deleted",
                                          failed.load(), lost.load())
                            : std::string("every member this command ran has finished"),
                   resume, failures ? "trains them again" : "goes on with any left");
      return failures ? 3 : runtime::kExitTimeLimit;
    }
    try {
      evaluate_run(dir);
    } catch (const EvaluationStopped& e) {
      spdlog::warn("{}: that one writes the metrics, or {}", e.what(), resume);
      return runtime::kExitTimeLimit;
    }
    fmt::print("{}", metrics_text(dir));
    if (lost > 0) {
      spdlog::error("{} member(s) stopped when their lock files were deleted under this process (Note [Member locks]); "
                    "metrics cover the members that finished, and bnn run --resume {} continues the others once no "
                    "other process trains them",
                    lost.load(), dir.string());
    }
    if (failed > 0) {
      spdlog::error("{} of {} members failed; metrics cover the members that finished", failed.load(), members.size());
    }
    if (failed > 0 || lost > 0) return 3;
    // Note [Divergence check]: as long as a diverged member is in the run,
    // by the thresholds in use.
    std::vector<std::string> diverged;
    for (const auto& member : finished_members(dir)) {
      if (check_member_divergence(member, config, data.begin()->second.num_classes)) {
        diverged.push_back(member.filename().string());
      }
    }
    if (!diverged.empty()) {
      spdlog::error("{} diverged (report.md says how): their samples are not of the posterior around a sound x*",
                    fmt::join(diverged, ", "));
      return 3;
    }
    return 0;
  };
  if (group == nullptr) return finish();
  int code = 0;
  on_rank_zero(group, "after training", [&] { code = finish(); });
  return static_cast<int>(group->from_rank_zero(code));
}

std::vector<evaluation::EnsembleRow> evaluate_run(const std::filesystem::path& run_dir) {
  EvaluateOptions options;
  options.quiet_about_missing = true;
  return evaluate_runs({run_dir}, run_dir, options);
}

}  // namespace bnn::pipeline
