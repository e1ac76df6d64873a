#include "src/cli/hessian_command.h"

#include <fmt/format.h>

#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/pipeline/hessian_points.h"
#include "src/runtime/threads.h"

namespace bnn::cli {

int cmd_hessian(int argc, char** argv) {
  cxxopts::Options opts("bnn hessian",
                        "Hessian spectral norm of the log-posterior by power iteration on Hessian-vector products, "
                        "at a member's initialisation, Adam, SWA and perturbed SWA points (paper appendix D.2).");
  opts.add_options()("checkpoint", "Member directory of a run, e.g. runs/demo/member_000 (finished, or past its SWA or "
                     "L-BFGS phase)",
                     cxxopts::value<std::string>())(
      "examples", "First N training examples (0: all)", cxxopts::value<int64_t>()->default_value("0"))(
      "iterations", "Power iterations at most", cxxopts::value<int64_t>()->default_value("100"))(
      "tolerance", "Relative change of ||Hv|| that stops the iteration",
      cxxopts::value<double>()->default_value("1e-4"))(
      "seed", "Seed of the start vector and the perturbation", cxxopts::value<uint64_t>()->default_value("0"))(
      "device", "auto, cpu, cuda or cuda:N", cxxopts::value<std::string>()->default_value("auto"))(
      "out", "Result file (default MEMBER_DIR/hessian.json); never written over", cxxopts::value<std::string>())(
      "threads", "CPU threads (default: the CPUs this process may use)", cxxopts::value<int64_t>())(
      "h,help", "Show this help");
  const auto parsed = parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("checkpoint")) {
    throw config::ConfigError("bnn hessian needs --checkpoint MEMBER_DIR (see bnn hessian --help)");
  }
  pipeline::HessianOptions options;
  options.member_dir = args["checkpoint"].as<std::string>();
  options.examples = args["examples"].as<int64_t>();
  options.power.max_iterations = args["iterations"].as<int64_t>();
  options.power.tolerance = args["tolerance"].as<double>();
  if (options.power.max_iterations < 1) {
    throw config::ConfigError(fmt::format("--iterations {} must be at least 1", options.power.max_iterations));
  }
  if (!(options.power.tolerance > 0)) {
    throw config::ConfigError(fmt::format("--tolerance {:g} must be positive", options.power.tolerance));
  }
  options.seed = args["seed"].as<uint64_t>();
  options.device = args["device"].as<std::string>();
  if (args.count("out")) options.out = args["out"].as<std::string>();
  runtime::configure_threads(args.count("threads") ? static_cast<int>(args["threads"].as<int64_t>()) : 0);
  const auto points = pipeline::hessian_at_checkpoints(options);
  fmt::print("{:<14} {:>14} {:>14} {:>14} {:>10}\n", "point", "spectral_norm", "rayleigh", "localized", "iterations");
  for (const auto& p : points) {
    fmt::print("{:<14} {:>14.6g} {:>14.6g} {:>14.6g} {:>10}{}\n", p.point, p.estimate.spectral_norm,
               p.estimate.rayleigh, p.localized, p.estimate.iterations, p.estimate.converged ? "" : " (not converged)");
  }
  fmt::print("written: {}\n", pipeline::hessian_output(options).string());
  return 0;
}

}  // namespace bnn::cli
