#include "src/cli/rhat_command.h"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/pipeline/rhat.h"
#include "src/pipeline/run.h"
#include "src/runtime/deadline.h"
#include "src/runtime/stop_signal.h"
#include "src/runtime/threads.h"

namespace bnn::cli {

int cmd_rhat(int argc, char** argv) {
  cxxopts::Options opts("bnn rhat",
                        "Gelman-Rubin R-hat of the mean training loss across chains started at perturbations of one "
                        "SWA point x*, for several independent x* (SMS-UBU paper, Fig. 3).");
  opts.add_options()("c,config", "YAML config file (its sampler, schedule and burn-in are used)",
                     cxxopts::value<std::string>())(
      "set", "Override a config key: key=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "chains", "Chains per x*", cxxopts::value<int64_t>()->default_value("4"))(
      "repeats", "Independent x* (repeat r trains member r's x*)", cxxopts::value<int64_t>()->default_value("3"))(
      "only",
      "Repeats to run now: 3, 0-3, 0,2,5-7 (default every one not saved yet). Each repeat's chains are saved "
      "in member_NNN/chains.json and read by later commands into the same folder; the tables are written once "
      "every repeat is saved",
      cxxopts::value<std::string>())(
      "rho", "Standard deviation of the start's perturbation of x* (default sampler.rho, the paper's 50^-1/2; "
      "50^-1/2 where sampler.rho is .inf)",
      cxxopts::value<double>())(
      "repeats-at-once",
      "Repeats run at once, each in a worker thread and on a GPU on its own CUDA stream: K, or auto (as bnn "
      "run's --members-per-device auto)",
      cxxopts::value<std::string>()->default_value("auto"))(
      "time-limit",
      "Wall time for this command (540, 9m, 11h45m): a repeat starts only where a whole one, as long as the "
      "longest this command ran, would end in time; those not started are left for a later command (exit 75)",
      cxxopts::value<std::string>())(
      "throughput",
      "With --time-limit and --repeats-at-once auto: choose the repeats at once from a members_per_device.csv of "
      "bench/members_per_device.sh, for the most whole repeats in the time left (as bnn run --throughput)",
      cxxopts::value<std::string>())(
      "loss-every", "Also record the mean loss per K steps and score those windows (0: off)",
      cxxopts::value<int64_t>()->default_value("0"))(
      "o,out", "Output directory (default runs/rhat_<config name>)", cxxopts::value<std::string>())(
      "device", "auto, cpu, cuda or cuda:N (overrides run.device)", cxxopts::value<std::string>())(
      "threads", "CPU threads (default: the CPUs this process may use; overrides run.threads)",
      cxxopts::value<int64_t>())(
      "seed", "Run seed (overrides run.seed)", cxxopts::value<uint64_t>())(
      "no-figures", "Do not draw the figure (it needs gnuplot)")("h,help", "Show this help");
  const auto parsed = parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("config")) throw config::ConfigError("bnn rhat needs --config FILE (see bnn rhat --help)");
  // Note [Time limit]: counted from here, before the data are loaded.
  std::optional<runtime::Deadline> deadline;
  if (args.count("time-limit")) deadline.emplace(pipeline::parse_time_limit(args["time-limit"].as<std::string>()));
  const std::filesystem::path config_file = args["config"].as<std::string>();
  const config::Config config = config::load_config(config_file, config_overrides(args));

  pipeline::RhatOptions options;
  options.out_dir = args.count("out") ? std::filesystem::path(args["out"].as<std::string>())
                                      : std::filesystem::path("runs") / ("rhat_" + config_file.stem().string());
  options.chains = args["chains"].as<int64_t>();
  options.repeats = args["repeats"].as<int64_t>();
  if (args.count("rho")) options.rho = args["rho"].as<double>();
  options.loss_every = args["loss-every"].as<int64_t>();
  options.figures = args.count("no-figures") == 0;
  options.at_once =
      pipeline::parse_members_per_device(args["repeats-at-once"].as<std::string>(), pipeline::kRepeatsAtOnce.option);
  options.deadline = deadline ? &*deadline : nullptr;
  if (args.count("throughput")) {
    options.throughput = pipeline::throughput_option(args["throughput"].as<std::string>(), deadline.has_value(),
                                                     options.at_once, "streams", pipeline::kRepeatsAtOnce);
  }
  pipeline::validate(config, options);
  if (args.count("only")) {
    options.only = pipeline::parse_index_list(args["only"].as<std::string>(), options.repeats,
                                              {"--only", "repeats", "--repeats"});
  }
  const int threads = runtime::configure_threads(static_cast<int>(config.run.threads));
  spdlog::info("bnn rhat: config {}, output {}, {} threads", config_file.string(), options.out_dir.string(), threads);
  runtime::stop_on_signals();  // Note [Stop signals]
  const pipeline::RhatResult result = pipeline::run_rhat(config, options);
  if (!result.missing.empty()) {
    // Note [Repeats that persist]: not finished, run again (as a time limit's exit).
    fmt::print("{} of {} repeats saved in {}; the tables are written once every repeat is: run the same command "
               "for the others (--only {})\n",
               result.repeats.size(), options.repeats, options.out_dir.string(), fmt::join(result.missing, ","));
    return runtime::kExitTimeLimit;
  }
  fmt::print("{}", pipeline::rhat_table(result));
  fmt::print("written: {}\n", options.out_dir.string());
  return 0;
}

}  // namespace bnn::cli
