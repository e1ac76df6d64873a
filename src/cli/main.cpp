// The bnn command line: run, evaluate, hessian, models, version.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include <cxxopts.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "models/registry.h"
#include "src/cli/bias_command.h"
#include "src/cli/options.h"
#include "src/cli/predict_command.h"
#include "src/cli/rhat_command.h"
#include "src/config/config.h"
#include "src/distributed/process_group.h"
#include "src/pipeline/evaluate.h"
#include "src/pipeline/hessian_points.h"
#include "src/pipeline/run.h"
#include "src/runtime/linkage.h"
#include "src/runtime/threads.h"

namespace {

constexpr const char* kUsage = R"(bnn — Bayesian neural network ensembles (Adam -> SWA -> SMS-UBU / SGHMC)

Usage:
  bnn run --config FILE [--set key=value]... [--out DIR] [--members 0-3]
          [--device auto|cpu|cuda|cuda:N | --devices all|cuda:0,cuda:1] [--members-per-device K|auto]
          [--cudnn-benchmark] [--threads N] [--seed S]
  bnn run --resume RUN_DIR [--members 0-3] [--device ...] [--threads N]
  bnn run ... --distributed
                  one data-parallel chain over processes (torch.distributed: Gloo on
                  CPU, NCCL on CUDA); rendezvous from MASTER_ADDR, MASTER_PORT, RANK,
                  WORLD_SIZE as torchrun sets them (docs/distributed.md)
  bnn evaluate RUN_DIR [RUN_DIR...] [--out DIR] [--burn-in N] [--thin K]
               [--members LIST] [--no-figures]
  bnn predict --run RUN_DIR --images PATH [PATH...] [--out FILE.csv|FILE.json]
              [--members LIST] [--method swa|bayes|both]
                  class probabilities and uncertainties of new images
  bnn hessian --checkpoint RUN_DIR/member_NNN [--examples N] [--iterations K]
  bnn rhat --config FILE [--set key=value]... [--chains C] [--repeats R] [--rho RHO]
           [--loss-every K] [--out DIR] [--device ...] [--threads N]
                  R-hat of chains from perturbations of x* (paper Fig. 3)
  bnn bias [--samplers a,b] [--h 0.25,0.125] [--chains N] [--out bias.csv]
                  Wasserstein bias of the integrators on a 1-D Gaussian (paper 3.4)
  bnn coupled-bias --config FILE [--samplers a,b] [--h0 H] [--levels L] [--epochs E] [--out F]
                  bias on a real posterior by chains coupled at h and h/2 (appendix D.1)
  bnn samplers    list the samplers
  bnn models      list the models with input shape, classes and parameter count
  bnn version     LibTorch version, CUDA availability, threads, std::filesystem's library
  bnn COMMAND --help
)";

int cmd_version() {
  fmt::print("bnn {}\n", BNN_VERSION_STRING);
  fmt::print("LibTorch {}.{}.{}\n", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  fmt::print("CUDA available: {} ({} devices)\n", torch::cuda::is_available() ? "yes" : "no",
             torch::cuda::device_count());
  fmt::print("threads: {} (default: all {} cores)\n", bnn::runtime::configure_threads(0), std::thread::hardware_concurrency());
  fmt::print("std::filesystem from: {}\n", bnn::runtime::filesystem_library());
  return 0;
}

int cmd_models() {
  fmt::print("{:<18} {:<10} {:>7} {:>12}  {}\n", "name", "input", "classes", "parameters", "description");
  for (const auto& name : bnn::models::model_names()) {
    const bnn::models::ModelSpec spec = bnn::models::default_spec(name);
    auto model = bnn::models::make_model(spec, /*seed=*/0);
    fmt::print("{:<18} {:<10} {:>7} {:>12}  {}\n", name, fmt::format("{}", fmt::join(spec.input_shape, "x")),
               spec.num_classes, bnn::models::count_parameters(*model), model->pretty_string());
  }
  return 0;
}

std::string config_help() {
  std::string out = "\nConfig keys (YAML sections, or --set section.key=value):\n";
  for (const auto& doc : bnn::config::field_docs()) {
    out += fmt::format("  {:<28} default {:<22} {}\n", doc.key, doc.default_value, doc.description);
  }
  return out;
}

// `bnn run --distributed`: joins the process group of the torchrun
// environment on this rank's device. A CUDA device without an index ("cuda",
// or "auto" with a GPU) becomes cuda:LOCAL_RANK (modulo the visible GPUs), and
// config.run.device is set to it. Ranks other than 0 log warnings only.
std::unique_ptr<bnn::distributed::ProcessGroup> join_process_group(bnn::config::Config& config) {
  if (!bnn::distributed::available()) {
    throw bnn::config::ConfigError(
        "bnn run --distributed: this LibTorch was built without distributed support (torch.distributed's c10d with "
        "Gloo), or bnn was configured without it (cmake/c10d.cmake; on Debian install libgloo-dev and reconfigure)");
  }
  bnn::distributed::Rendezvous rendezvous;
  try {
    rendezvous = bnn::distributed::rendezvous_from_environment();
  } catch (const std::invalid_argument& e) {
    throw bnn::config::ConfigError(fmt::format("bnn run --distributed: {}", e.what()));
  }
  torch::Device device = bnn::pipeline::resolve_device(config.run.device);
  if (device.is_cuda() && (config.run.device == "auto" || config.run.device == "cuda")) {
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rendezvous.local_rank %
                                                                       torch::cuda::device_count()));
  }
  config.run.device = device.str();
  auto group = std::make_unique<bnn::distributed::ProcessGroup>(rendezvous, device);
  spdlog::info("distributed: rank {} of {} on {}, {} backend, rendezvous at {}:{}", group->rank(),
               group->world_size(), device.str(), group->backend(), rendezvous.master_addr, rendezvous.master_port);
  if (group->rank() != 0) spdlog::set_level(spdlog::level::warn);
  return group;
}

int cmd_run(int argc, char** argv) {
  cxxopts::Options opts("bnn run", "Train an ensemble: Adam -> SWA -> posterior sampling, then evaluate.");
  opts.add_options()("c,config", "YAML config file", cxxopts::value<std::string>())(
      "set", "Override a config key: key=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "o,out", "Run directory (default runs/<config name>)", cxxopts::value<std::string>())(
      "resume", "Continue the unfinished members of RUN_DIR with its config.yaml (members resume from their "
                "checkpoints)", cxxopts::value<std::string>())(
      "members", "Members to run: 3, 0-3, 0,2,5-7 (default all)", cxxopts::value<std::string>())(
      "device", "auto, cpu, cuda or cuda:N (overrides run.device)", cxxopts::value<std::string>())(
      "devices", "Spread members over devices, one worker each: all (every GPU) or a list, e.g. cuda:0,cuda:1",
      cxxopts::value<std::string>())(
      "members-per-device", "Members trained at once on each device, each GPU member on its own CUDA stream: "
                            "K, or auto (as many as fit in GPU memory, at most 8; 1 on the CPU)",
      cxxopts::value<std::string>()->default_value("auto"))(
      "cudnn-benchmark", "Let cuDNN time its convolution algorithms and pick the fastest (GPU results then "
                         "vary between runs in the last bits)")(
      "threads", "CPU threads (default all cores; overrides run.threads)", cxxopts::value<int64_t>())(
      "distributed", "Data-parallel members over processes (torch.distributed); rendezvous from MASTER_ADDR, "
                     "MASTER_PORT, RANK, WORLD_SIZE (and LOCAL_RANK for the CUDA device), as torchrun sets them")(
      "seed", "Run seed (overrides run.seed)", cxxopts::value<uint64_t>())("h,help", "Show this help");
  const auto parsed = bnn::cli::parse_or_help(opts, argc, argv, config_help());
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (args.count("resume") && (args.count("config") || args.count("out"))) {
    throw bnn::config::ConfigError("bnn run --resume RUN_DIR takes the config and directory from RUN_DIR; "
                                   "drop --config and --out");
  }
  if (!args.count("config") && !args.count("resume")) {
    throw bnn::config::ConfigError("bnn run needs --config FILE or --resume RUN_DIR (see bnn run --help)");
  }
  std::filesystem::path config_file;
  bnn::pipeline::RunOptions run_options;
  if (args.count("resume")) {
    run_options.run_dir = args["resume"].as<std::string>();
    config_file = run_options.run_dir / "config.yaml";
    if (!std::filesystem::exists(config_file)) {
      throw bnn::config::ConfigError(
          fmt::format("bnn run --resume: {} has no config.yaml; not a run directory", run_options.run_dir.string()));
    }
  } else {
    config_file = args["config"].as<std::string>();
    run_options.run_dir = args.count("out") ? std::filesystem::path(args["out"].as<std::string>())
                                            : std::filesystem::path("runs") / config_file.stem();
  }
  bnn::config::Config config = bnn::config::load_config(config_file, bnn::cli::config_overrides(args));
  if (args.count("members")) {
    run_options.members = bnn::pipeline::parse_member_list(args["members"].as<std::string>(), config.run.members);
  }
  if (args.count("devices")) {
    if (args.count("device")) throw bnn::config::ConfigError("give either --device or --devices, not both");
    if (args.count("distributed")) {
      throw bnn::config::ConfigError("--distributed uses one device per process: give --device, not --devices");
    }
    run_options.devices = bnn::pipeline::parse_device_list(args["devices"].as<std::string>());
  }
  run_options.members_per_device =
      bnn::pipeline::parse_members_per_device(args["members-per-device"].as<std::string>());
  if (args.count("cudnn-benchmark")) at::globalContext().setBenchmarkCuDNN(true);
  const int threads = bnn::runtime::configure_threads(static_cast<int>(config.run.threads));
  std::unique_ptr<bnn::distributed::ProcessGroup> group;
  if (args.count("distributed")) {
    group = join_process_group(config);
    run_options.group = group.get();
  }
  spdlog::info("bnn run: config {}, run directory {}, {} threads", config_file.string(),
               run_options.run_dir.string(), threads);
  const int code = bnn::pipeline::run(config, run_options);
  if (group) group->barrier();  // rank 0 has written the run's outputs
  return code;
}

int cmd_evaluate(int argc, char** argv) {
  cxxopts::Options opts("bnn evaluate", "Merge the finished members of run directories into ensemble tables.");
  opts.add_options()("o,out", "Where to write metrics, uncertainty.json, report.md and figures/ (default: the run "
                     "directory, if only one)", cxxopts::value<std::string>())(
      "burn-in", "Burn-in in epochs (>= the run's sampler.burn_in): recompute the Bayesian ensemble from the stored "
      "samples", cxxopts::value<int64_t>())(
      "thin", "Keep every K-th stored sample after burn-in: recompute the Bayesian ensemble",
      cxxopts::value<int64_t>())(
      "members", "Members to evaluate: 3, 0-3, 0,2,5-7 (default every finished member)", cxxopts::value<std::string>())(
      "no-figures", "Do not draw figures (they need gnuplot)")(
      "dirs", "Run directories", cxxopts::value<std::vector<std::string>>())("h,help", "Show this help");
  opts.parse_positional({"dirs"});
  opts.positional_help("RUN_DIR [RUN_DIR...]");
  const auto parsed = bnn::cli::parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("dirs")) throw bnn::config::ConfigError("bnn evaluate needs at least one RUN_DIR");
  std::vector<std::filesystem::path> dirs;
  for (const auto& d : args["dirs"].as<std::vector<std::string>>()) dirs.emplace_back(d);
  if (dirs.size() > 1 && !args.count("out")) {
    throw bnn::config::ConfigError("bnn evaluate with several run directories needs --out DIR for the merged tables");
  }
  const std::filesystem::path out = args.count("out") ? std::filesystem::path(args["out"].as<std::string>()) : dirs[0];
  bnn::pipeline::EvaluateOptions options;
  if (args.count("burn-in")) options.burn_in = args["burn-in"].as<int64_t>();
  if (args.count("thin")) options.thin = args["thin"].as<int64_t>();
  if (args.count("members")) {
    const auto config = bnn::config::load_config(dirs[0] / "config.yaml", {});
    options.members = bnn::pipeline::parse_member_list(args["members"].as<std::string>(), config.run.members);
  }
  options.figures = args.count("no-figures") == 0;
  bnn::runtime::configure_threads(0);
  fmt::print("{}", bnn::evaluation::to_table(bnn::pipeline::evaluate_runs(dirs, out, options)));
  fmt::print("report: {}\n", (out / "report.md").string());
  return 0;
}

int cmd_hessian(int argc, char** argv) {
  cxxopts::Options opts("bnn hessian",
                        "Hessian spectral norm of the log-posterior by power iteration on Hessian-vector products, "
                        "at a member's initialisation, Adam, SWA and perturbed SWA points (paper appendix D.2).");
  opts.add_options()("checkpoint", "Member directory of a finished run, e.g. runs/demo/member_000",
                     cxxopts::value<std::string>())(
      "examples", "First N training examples (default 0: all)", cxxopts::value<int64_t>()->default_value("0"))(
      "iterations", "Power iterations at most", cxxopts::value<int64_t>()->default_value("100"))(
      "tolerance", "Relative change of ||Hv|| that stops the iteration",
      cxxopts::value<double>()->default_value("1e-4"))(
      "seed", "Seed of the start vector and the perturbation", cxxopts::value<uint64_t>()->default_value("0"))(
      "device", "auto, cpu, cuda or cuda:N", cxxopts::value<std::string>()->default_value("auto"))(
      "threads", "CPU threads (default all cores)", cxxopts::value<int64_t>()->default_value("0"))("h,help",
                                                                                                  "Show this help");
  const auto parsed = bnn::cli::parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("checkpoint")) {
    throw bnn::config::ConfigError("bnn hessian needs --checkpoint MEMBER_DIR (see bnn hessian --help)");
  }
  bnn::pipeline::HessianOptions options;
  options.member_dir = args["checkpoint"].as<std::string>();
  options.examples = args["examples"].as<int64_t>();
  options.power.max_iterations = args["iterations"].as<int64_t>();
  options.power.tolerance = args["tolerance"].as<double>();
  options.seed = args["seed"].as<uint64_t>();
  options.device = args["device"].as<std::string>();
  bnn::runtime::configure_threads(static_cast<int>(args["threads"].as<int64_t>()));
  const auto points = bnn::pipeline::hessian_at_checkpoints(options);
  fmt::print("{:<14} {:>14} {:>14} {:>14} {:>10}\n", "point", "spectral_norm", "rayleigh", "localized", "iterations");
  for (const auto& p : points) {
    fmt::print("{:<14} {:>14.6g} {:>14.6g} {:>14.6g} {:>10}{}\n", p.point, p.estimate.spectral_norm,
               p.estimate.rayleigh, p.localized, p.estimate.iterations, p.estimate.converged ? "" : " (not converged)");
  }
  fmt::print("written: {}\n", (options.member_dir / "hessian.json").string());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  try {
    if (command.empty() || command == "--help" || command == "-h" || command == "help") {
      fmt::print("{}", kUsage);
      return command.empty() ? 1 : 0;
    }
    if (command == "version" || command == "--version") return cmd_version();
    if (command == "models") return cmd_models();
    if (command == "run") return cmd_run(argc - 1, argv + 1);
    if (command == "evaluate") return cmd_evaluate(argc - 1, argv + 1);
    if (command == "hessian") return cmd_hessian(argc - 1, argv + 1);
    if (command == "predict") return bnn::cli::cmd_predict(argc - 1, argv + 1);
    if (command == "bias") return bnn::cli::cmd_bias(argc - 1, argv + 1);
    if (command == "coupled-bias") return bnn::cli::cmd_coupled_bias(argc - 1, argv + 1);
    if (command == "rhat") return bnn::cli::cmd_rhat(argc - 1, argv + 1);
    if (command == "samplers") return bnn::cli::cmd_samplers();
    fmt::print(stderr,
               "bnn: error: unknown command '{}' (commands: run, evaluate, predict, hessian, rhat, bias, "
               "coupled-bias, samplers, models, version; "
               "see bnn --help)\n",
               command);
    return 2;
  } catch (const c10::Error& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what_without_backtrace());
  } catch (const cxxopts::exceptions::exception& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what());
  }
  return 2;
}
