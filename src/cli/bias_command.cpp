#include "src/cli/bias_command.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "samplers/registry.h"
#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/experiments/bias.h"
#include "src/experiments/coupled_bias.h"
#include "src/pipeline/run.h"
#include "src/runtime/threads.h"

namespace bnn::cli {
namespace {

// The entries of a comma-separated option value; an empty one (",," or an
// empty value) is an error naming the option, not left out.
std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  if (!text.empty() && text.back() == ',') out.emplace_back();
  if (out.empty() || std::find(out.begin(), out.end(), "") != out.end()) {
    throw config::ConfigError(
        fmt::format("option {}: '{}' has an empty entry; give comma-separated values", option, text));
  }
  return out;
}

std::vector<double> parse_step_sizes(const std::string& text) {
  std::vector<double> out;
  for (const auto& item : split_list(text, "--step-sizes")) {
    const std::optional<double> h = number_in(item);
    if (!h) throw config::ConfigError(fmt::format("bnn bias: --step-sizes: '{}' is not a number", item));
    out.push_back(*h);
  }
  return out;
}

}  // namespace

int cmd_bias(int argc, char** argv) {
  cxxopts::Options opts("bnn bias",
                        "Wasserstein bias of the integrators on the 1-D Gaussian target of the SMS-UBU paper "
                        "(section 3.4): two minibatches, target N(-0.8824, 0.4851^2).");
  experiments::BiasOptions defaults;
  opts.add_options()("samplers", "Comma-separated samplers (default: all that apply)", cxxopts::value<std::string>())(
      "step-sizes", "Comma-separated step sizes h",
      cxxopts::value<std::string>()->default_value("0.25,0.125,0.0625,0.03125"))(
      "chains", "Chains simulated as one vector", cxxopts::value<int64_t>()->default_value("20000"))(
      "time", "Sampling time per run (steps = time / h)", cxxopts::value<double>()->default_value("200"))(
      "burn-in", "Burn-in time per run (steps = burn-in / h)", cxxopts::value<double>()->default_value("20"))(
      "friction", "gamma", cxxopts::value<double>()->default_value("1"))(
      "bins", "Histogram bins over mean +- 8 sd", cxxopts::value<int64_t>()->default_value("80000"))(
      "seed", "Seed", cxxopts::value<uint64_t>()->default_value("1"))(
      "o,out", "CSV file (sampler,h,w1)", cxxopts::value<std::string>()->default_value("bias.csv"))(
      "threads", "CPU threads (default: the CPUs this process may use)", cxxopts::value<int>())(
      "h,help", "Show this help");
  const auto parsed = parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  experiments::BiasOptions o;
  if (args.count("samplers")) o.samplers = split_list(args["samplers"].as<std::string>(), "--samplers");
  o.step_sizes = parse_step_sizes(args["step-sizes"].as<std::string>());
  o.chains = args["chains"].as<int64_t>();
  o.sample_time = args["time"].as<double>();
  o.burn_in_time = args["burn-in"].as<double>();
  o.friction = args["friction"].as<double>();
  o.bins = args["bins"].as<int64_t>();
  o.seed = args["seed"].as<uint64_t>();
  try {
    experiments::validate(o);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(e.what());
  }
  const std::string out = args["out"].as<std::string>();
  experiments::check_bias_csv_path(out);
  runtime::configure_threads(args.count("threads") ? args["threads"].as<int>() : 0);
  const auto rows = experiments::run_bias(o, [](const experiments::BiasRow& r) {
    fmt::print(stderr, "bias: {} h={:g} W1={:.4g}\n", r.sampler, r.h, r.w1);
  });
  experiments::write_bias_csv(rows, out);
  fmt::print("{}", experiments::bias_table(rows));
  fmt::print("wrote {}\n", out);
  return 0;
}

int cmd_coupled_bias(int argc, char** argv) {
  cxxopts::Options opts("bnn coupled-bias",
                        "Bias of the samplers on a real posterior by synchronously coupled chains at h and h/2 "
                        "(SMS-UBU paper appendix D.1, Fig. 2): the mean absolute difference of the true-class "
                        "probability on the test set. x* = the MAP point by L-BFGS (map.* keys); sampler.* keys "
                        "other than name and step_size set the samplers up.");
  const experiments::CoupledBiasOptions defaults;
  opts.add_options()("c,config", "YAML config file, e.g. configs/logistic_fmnist.yaml", cxxopts::value<std::string>())(
      "set", "Override a config key: key=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "samplers", "Comma-separated samplers", cxxopts::value<std::string>()->default_value(
                                                  fmt::format("{}", fmt::join(defaults.samplers, ","))))(
      "h0", "Largest step size; level l couples h0 2^-l with h0 2^-(l+1)",
      cxxopts::value<double>()->default_value(fmt::format("{}", defaults.h0)))(
      "levels", "Number of coupled pairs",
      cxxopts::value<int64_t>()->default_value(fmt::format("{}", defaults.levels)))(
      "epochs", "Coarse-chain epochs at level 0 (x 2^l at level l)",
      cxxopts::value<int64_t>()->default_value(fmt::format("{}", defaults.epochs)))(
      "burn-in-fraction", "Fraction of each level's epochs discarded",
      cxxopts::value<double>()->default_value(fmt::format("{}", defaults.burn_in_fraction)))(
      "chunks", "Parts the samples are cut into for standard errors",
      cxxopts::value<int64_t>()->default_value(fmt::format("{}", defaults.chunks)))(
      "seed", "Seed of the experiment (overrides run.seed)", cxxopts::value<uint64_t>())(
      "o,out", "CSV file", cxxopts::value<std::string>()->default_value("coupled_bias.csv"))(
      "device", "auto, cpu, cuda or cuda:N (overrides run.device)", cxxopts::value<std::string>())(
      "threads", "CPU threads (default: the CPUs this process may use)", cxxopts::value<int64_t>())(
      "h,help", "Show this help");
  const auto parsed = parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("config")) throw config::ConfigError("bnn coupled-bias needs --config FILE (see --help)");
  const config::Config config = config::load_config(args["config"].as<std::string>(), config_overrides(args));
  if (config.sampler.repartition) {
    throw config::ConfigError("config key 'sampler.repartition': bnn coupled-bias keeps one partition of the data "
                              "for both coupled chains at every level; set it false");
  }
  experiments::CoupledBiasOptions o;
  o.samplers = split_list(args["samplers"].as<std::string>(), "--samplers");
  o.h0 = args["h0"].as<double>();
  o.levels = args["levels"].as<int64_t>();
  o.epochs = args["epochs"].as<int64_t>();
  o.burn_in_fraction = args["burn-in-fraction"].as<double>();
  o.chunks = args["chunks"].as<int64_t>();
  o.seed = config.run.seed;
  try {
    experiments::validate(o);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(e.what());
  }
  const std::string out = args["out"].as<std::string>();
  experiments::check_coupled_bias_csv_path(out);
  runtime::configure_threads(static_cast<int>(config.run.threads));
  const torch::Device device = pipeline::resolve_device(config.run.device);
  const data_loaders::Dataset data = pipeline::load_dataset(config, device);
  const auto rows = experiments::run_coupled_bias(config, data, device, o,
                                                  [](const std::string& line) { spdlog::info("{}", line); });
  experiments::write_coupled_bias_csv(rows, out);
  fmt::print("{}", experiments::coupled_bias_table(rows));
  fmt::print("wrote {}\n", out);
  return 0;
}

}  // namespace bnn::cli
