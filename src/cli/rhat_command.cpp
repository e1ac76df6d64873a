#include "src/cli/rhat_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/pipeline/rhat.h"
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
      "rho", "Standard deviation of the start's perturbation of x* (default sampler.rho, the paper's 50^-1/2)",
      cxxopts::value<double>())(
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
  pipeline::validate(config, options);
  const int threads = runtime::configure_threads(static_cast<int>(config.run.threads));
  spdlog::info("bnn rhat: config {}, output {}, {} threads", config_file.string(), options.out_dir.string(), threads);
  const pipeline::RhatResult result = pipeline::run_rhat(config, options);
  fmt::print("{}", pipeline::rhat_table(result));
  fmt::print("written: {}\n", options.out_dir.string());
  return 0;
}

}  // namespace bnn::cli
