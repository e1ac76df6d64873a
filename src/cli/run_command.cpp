#include "src/cli/run_command.h"

#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/distributed/process_group.h"
#include "src/pipeline/evaluate.h"
#include "src/pipeline/run.h"
#include "src/pipeline/run_directory.h"
#include "src/runtime/deadline.h"
#include "src/runtime/stop_signal.h"
#include "src/runtime/threads.h"

namespace bnn::cli {
namespace {

// `bnn run --distributed`: joins the process group of the torchrun
// environment on this rank's device. A CUDA device without an index ("cuda",
// or "auto" with a GPU) becomes cuda:LOCAL_RANK (modulo the visible GPUs), and
// config.run.device is set to it. Ranks other than 0 log warnings only.
std::unique_ptr<distributed::ProcessGroup> join_process_group(config::Config& config, int64_t timeout_seconds) {
  if (!distributed::available()) {
    throw config::ConfigError(
        "bnn run --distributed: this LibTorch was built without distributed support (torch.distributed's c10d with "
        "Gloo), or bnn was configured without it (cmake/c10d.cmake; on Debian install libgloo-dev and reconfigure)");
  }
  distributed::Rendezvous rendezvous;
  try {
    rendezvous = distributed::rendezvous_from_environment();
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(fmt::format("bnn run --distributed: {}", e.what()));
  }
  torch::Device device = pipeline::resolve_device(config.run.device);
  if (device.is_cuda() && (config.run.device == "auto" || config.run.device == "cuda")) {
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rendezvous.local_rank %
                                                                       torch::cuda::device_count()));
  }
  config.run.device = device.str();
  // Said before the wait: a rank whose command failed before it got here
  // (a config error, say) leaves the others waiting for it.
  spdlog::info("distributed: rank {} of {} joining at {}:{}; it waits up to {} s (--distributed-timeout) for the "
               "other ranks, each of which must be started with the same command",
               rendezvous.rank, rendezvous.world_size, rendezvous.master_addr, rendezvous.master_port,
               timeout_seconds);
  auto group = std::make_unique<distributed::ProcessGroup>(rendezvous, device, std::chrono::seconds(timeout_seconds));
  spdlog::info("distributed: rank {} of {} on {}, {} backend, rendezvous at {}:{}{}", group->rank(),
               group->world_size(), device.str(), group->backend(), rendezvous.master_addr, rendezvous.master_port,
               rendezvous.agent_store ? fmt::format(" (torchrun's store, {})", rendezvous.store_prefix) : "");
  if (group->rank() != 0) spdlog::set_level(spdlog::level::warn);
  return group;
}

}  // namespace

std::string config_help() {
  std::string out = "\nConfig keys (YAML sections, or --set section.key=value):\n";
  for (const auto& doc : config::field_docs()) {
    out += fmt::format("  {:<28} default {:<22} {}\n", doc.key, doc.default_value, doc.description);
  }
  return out;
}

int cmd_run(int argc, char** argv) {
  cxxopts::Options opts("bnn run", "Train an ensemble: Adam -> SWA -> posterior sampling, then evaluate.");
  opts.add_options()("c,config", "YAML config file", cxxopts::value<std::string>())(
      "set", "Override a config key: key=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "o,out", "Run directory (default runs/<config name>)", cxxopts::value<std::string>())(
      "resume",
      "Continue the unfinished members of RUN_DIR with its config.yaml (members resume from their "
      "checkpoints)",
      cxxopts::value<std::string>())("members", "Members to run: 3, 0-3, 0,2,5-7 (default all)",
                                     cxxopts::value<std::string>())(
      "device", "auto, cpu, cuda or cuda:N (overrides run.device)", cxxopts::value<std::string>())(
      "devices", "Spread members over devices, one worker each: all (every GPU) or a list, e.g. cuda:0,cuda:1",
      cxxopts::value<std::string>())("members-per-device",
                                     "Members trained at once on each device, each GPU member on its own CUDA stream: "
                                     "K, or auto (as many as fit in GPU memory, at most 8; on the CPU two with two "
                                     "threads or more, as memory allows)",
                                     cxxopts::value<std::string>()->default_value("auto"))(
      "member-design",
      "How the members trained at once on a device share it: streams (each its own model, and "
      "on a GPU its own CUDA stream; the same bits as one by one) or stacked (one stacked model "
      "evaluates all their gradients in one pass: grouped convolutions, batched products; the "
      "same arithmetic, not the same bits)",
      cxxopts::value<std::string>()->default_value("streams"))(
      "cudnn-benchmark",
      "Let cuDNN time its convolution algorithms and pick the fastest (GPU results then "
      "vary between runs in the last bits)")(
      "threads", "CPU threads (default: the CPUs this process may use; overrides run.threads)",
      cxxopts::value<int64_t>())(
      "time-limit",
      "Wall time for this command (540, 9m, 11h45m): no epoch starts that would end later, by the "
      "longest epoch so far; members keep their last checkpoint, the exit code is 75, and bnn run "
      "--resume continues them",
      cxxopts::value<std::string>())(
      "whole-members",
      "With --time-limit: start a member only where a whole member would end in time (as long as the "
      "longest this command trained, else its epochs at the longest epoch), not where one epoch would "
      "(for a machine that keeps nothing, where a member stopped part-way is lost)")(
      "throughput",
      "With --time-limit and --members-per-device auto: choose the members trained at once from a "
      "members_per_device.csv that bench/members_per_device.sh measured on this kind of device, for the most "
      "members that end whole in the time left",
      cxxopts::value<std::string>())(
      "distributed",
      "Data-parallel members over processes (torch.distributed); rendezvous from MASTER_ADDR, "
      "MASTER_PORT, RANK, WORLD_SIZE (and LOCAL_RANK for the CUDA device), as torchrun sets them")(
      "distributed-timeout",
      "With --distributed: seconds a rank waits for the others to join, and for each collective",
      cxxopts::value<int64_t>()->default_value("1800"))(
      "seed", "Run seed (overrides run.seed)", cxxopts::value<uint64_t>())("h,help", "Show this help");
  const auto parsed = parse_or_help(opts, argc, argv, config_help());
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (args.count("resume") && (args.count("config") || args.count("out"))) {
    throw config::ConfigError("bnn run --resume RUN_DIR takes the config and directory from RUN_DIR; "
                                   "drop --config and --out");
  }
  if (!args.count("config") && !args.count("resume")) {
    throw config::ConfigError("bnn run needs --config FILE or --resume RUN_DIR (see bnn run --help)");
  }
  std::filesystem::path config_file;
  pipeline::RunOptions run_options;
  if (args.count("resume")) {
    run_options.run_dir = args["resume"].as<std::string>();
    run_options.resume = true;
    config_file = run_options.run_dir / bnn::pipeline::kConfigFile;
    if (!std::filesystem::exists(config_file)) {
      // A run stopped while it started writes bnn.json before config.yaml.
      throw config::ConfigError(
          bnn::pipeline::holds_manifest_of(run_options.run_dir, "run")
              ? fmt::format("bnn run --resume: {} has a bnn.json but no config.yaml (a run stopped as it started?): "
                            "run its first command, bnn run --config ... --out {}, again, which writes it",
                            run_options.run_dir.string(), run_options.run_dir.string())
              : fmt::format("bnn run --resume: {} has no config.yaml; not a run directory",
                            run_options.run_dir.string()));
    }
    // An edited config.yaml is named as such, not as options that change the experiment.
    pipeline::require_recorded_experiment(run_options.run_dir, config::load_config(config_file, {}));
  } else {
    config_file = args["config"].as<std::string>();
    run_options.run_dir = args.count("out") ? std::filesystem::path(args["out"].as<std::string>())
                                            : std::filesystem::path("runs") / config_file.stem();
  }
  config::Config config = config::load_config(config_file, config_overrides(args));
  if (args.count("members")) {
    run_options.members = pipeline::parse_member_list(args["members"].as<std::string>(), config.run.members);
  }
  if (args.count("devices")) {
    if (args.count("device")) throw config::ConfigError("give either --device or --devices, not both");
    if (args.count("distributed")) {
      throw config::ConfigError("--distributed uses one device per process: give --device, not --devices");
    }
    run_options.devices = pipeline::parse_device_list(args["devices"].as<std::string>());
  }
  run_options.members_per_device =
      pipeline::parse_members_per_device(args["members-per-device"].as<std::string>());
  run_options.design = pipeline::parse_member_design(args["member-design"].as<std::string>());
  // Note [Time limit]: counted from here, before the data are loaded.
  std::optional<runtime::Deadline> deadline;
  if (args.count("time-limit")) {
    deadline.emplace(pipeline::parse_time_limit(args["time-limit"].as<std::string>()));
    run_options.deadline = &*deadline;
  }
  if (args.count("whole-members")) {
    if (!deadline) throw config::ConfigError("--whole-members needs --time-limit: without a limit every member is whole");
    run_options.whole_members = true;
  }
  if (args.count("throughput")) {
    run_options.throughput =
        pipeline::throughput_option(args["throughput"].as<std::string>(), deadline.has_value(),
                                    run_options.members_per_device, pipeline::member_design_name(run_options.design));
  }
  if (args.count("cudnn-benchmark")) at::globalContext().setBenchmarkCuDNN(true);
  const int threads = runtime::configure_threads(static_cast<int>(config.run.threads));
  std::unique_ptr<distributed::ProcessGroup> group;
  const int64_t timeout = args["distributed-timeout"].as<int64_t>();
  if (args.count("distributed-timeout") && !args.count("distributed")) {
    throw config::ConfigError("--distributed-timeout applies to --distributed only");
  }
  constexpr int64_t kWeek = 7 * 24 * 3600;
  if (timeout < 1 || timeout > kWeek) {
    throw config::ConfigError(
        fmt::format("--distributed-timeout {}: give a number of seconds from 1 to {} (a week)", timeout, kWeek));
  }
  if (args.count("distributed")) {
    group = join_process_group(config, timeout);
    run_options.group = group.get();
  }
  // Note [Stop signals]: from here on, once the ranks have joined (a rank
  // waiting for its peers still ends at a signal).
  runtime::stop_on_signals();
  spdlog::info("bnn run: config {}, run directory {}, {} threads", config_file.string(),
               run_options.run_dir.string(), threads);
  return pipeline::run(config, run_options);  // on every rank rank 0's code, once it has written the outputs
}

int cmd_evaluate(int argc, char** argv) {
  cxxopts::Options opts("bnn evaluate", "Merge the finished members of run directories into ensemble tables.");
  opts.add_options()("o,out", "Where to write metrics, uncertainty.json, report.md, report.html and figures/ "
                     "(default: the run directory, if only one; give another folder for other --burn-in, --thin "
                     "or --members, which a later bnn run there would replace)", cxxopts::value<std::string>())(
      "burn-in", "Burn-in in epochs (>= the run's sampler.burn_in): recompute the Bayesian ensemble from the stored "
      "samples", cxxopts::value<int64_t>())(
      "thin", "Keep every K-th stored sample after burn-in: recompute the Bayesian ensemble",
      cxxopts::value<int64_t>())(
      "members", "Members to evaluate: 3, 0-3, 0,2,5-7 (default every finished member)", cxxopts::value<std::string>())(
      "no-figures", "Do not draw figures (they need gnuplot)")(
      "reference-probs", "N x K .npy of a gold-standard posterior's test probabilities (e.g. long-run HMC): adds "
      "top-1 agreement and total variation against it to every row", cxxopts::value<std::string>())(
      "dirs", "Run directories", cxxopts::value<std::vector<std::string>>())("h,help", "Show this help");
  opts.parse_positional({"dirs"});
  opts.positional_help("RUN_DIR [RUN_DIR...]");
  const auto parsed = parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("dirs")) throw config::ConfigError("bnn evaluate needs at least one RUN_DIR");
  std::vector<std::filesystem::path> dirs;
  for (const auto& d : args["dirs"].as<std::vector<std::string>>()) dirs.emplace_back(d);
  if (dirs.size() > 1 && !args.count("out")) {
    throw config::ConfigError("bnn evaluate with several run directories needs --out DIR for the merged tables");
  }
  const std::filesystem::path out = args.count("out") ? std::filesystem::path(args["out"].as<std::string>()) : dirs[0];
  pipeline::EvaluateOptions options;
  if (args.count("burn-in")) options.burn_in = args["burn-in"].as<int64_t>();
  if (args.count("thin")) options.thin = args["thin"].as<int64_t>();
  if (args.count("members")) {
    const auto config = config::load_config(dirs[0] / pipeline::kConfigFile, {});
    options.members = pipeline::parse_member_list(args["members"].as<std::string>(), config.run.members);
  }
  options.figures = args.count("no-figures") == 0;
  if (args.count("reference-probs")) options.reference_probs = args["reference-probs"].as<std::string>();
  runtime::configure_threads(0);
  pipeline::evaluate_runs(dirs, out, options);
  fmt::print("{}", pipeline::metrics_text(out));
  fmt::print("report: {}\n", (out / "report.md").string());
  return 0;
}

}  // namespace bnn::cli
