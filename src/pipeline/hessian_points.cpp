#include "src/pipeline/hessian_points.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "data_loaders/npy.h"
#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/random.h"
#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/member.h"
#include "src/pipeline/run.h"
#include "src/pipeline/rhat.h"
#include "src/pipeline/run_directory.h"
#include "src/pipeline/stored_weights.h"

namespace bnn::pipeline {
namespace {

// Streams of the --seed (Note [RNG streams] in samplers/random.h).
constexpr uint64_t kPowerStream = 0;
constexpr uint64_t kPerturbationStream = 1;

torch::Tensor read_weights(const std::filesystem::path& dir, const std::string& point, int64_t numel,
                           const config::Config& config) {
  const auto path = point_weights_path(dir, point);
  if (!std::filesystem::exists(path)) {
    if (weights_left_behind(dir)) throw config::ConfigError(weights_left_behind_message(dir, "bnn hessian"));
    std::vector<std::string> phases;
    for (const auto& p : point_estimates(config)) phases.push_back(p == "map" ? "L-BFGS" : p == "swa" ? "SWA" : "Adam");
    throw config::ConfigError(fmt::format("{} missing: the member has not finished {} (or was run by a bnn older "
                                          "than the stored weights)",
                                          path.string(), fmt::join(phases, " and ")));
  }
  const torch::Tensor w = data_loaders::read_npy(path);
  if (w.dim() != 1 || w.numel() != numel) {
    throw config::ConfigError(fmt::format("{} holds shape ({}) but the model has {} parameters", path.string(),
                                          fmt::join(w.sizes(), ", "), numel));
  }
  return w;
}

}  // namespace

std::filesystem::path hessian_output(const HessianOptions& options) {
  return options.out.empty() ? options.member_dir / "hessian.json" : options.out;
}

std::vector<HessianPoint> hessian_at_checkpoints(const HessianOptions& options) {
  const auto& dir = options.member_dir;
  const auto run_dir = std::filesystem::absolute(dir).parent_path();
  if (!std::filesystem::is_directory(dir)) {
    throw config::ConfigError(fmt::format("{} is not a member directory of a bnn run: no such folder", dir.string()));
  }
  if (std::filesystem::exists(dir / kConfigFile)) {
    throw config::ConfigError(fmt::format("{} is a run directory; give --checkpoint one of its member folders, e.g. {}",
                                          dir.string(), member_dir(dir, 0).string()));
  }
  if (!std::filesystem::exists(run_dir / kConfigFile)) {
    throw config::ConfigError(fmt::format("{} is not a member directory of a bnn run: {} missing", dir.string(),
                                          (run_dir / kConfigFile).string()));
  }
  // Before any work: an earlier result stays, and the result has a folder to go to.
  const std::filesystem::path target = hessian_output(options);
  if (std::filesystem::is_directory(target)) {
    throw config::ConfigError(fmt::format("--out {} is a folder: give the result file's name", target.string()));
  }
  if (std::filesystem::exists(std::filesystem::symlink_status(target))) {  // a dangling link too: link(2) fails on it
    if (options.out.empty()) {
      throw config::ConfigError(fmt::format("{} already holds a Hessian result, which bnn hessian does not write "
                                            "over: give --out FILE for this one, or remove it",
                                            target.string()));
    }
    throw config::ConfigError(fmt::format("--out {}: the file exists, and bnn hessian writes only a new file; give "
                                          "another file name, or move it away first",
                                          target.string()));
  }
  const std::filesystem::path folder = std::filesystem::absolute(target).parent_path();
  if (!std::filesystem::is_directory(folder)) {
    throw config::ConfigError(fmt::format("--out {}: the folder {} does not exist", target.string(), folder.string()));
  }
  const config::Config config = config::load_config(run_dir / kConfigFile, {});
  const torch::Device device = resolve_device(options.device);
  const data_loaders::Dataset data = load_dataset(config, device);
  if (options.examples < 0 || options.examples > data.train.size()) {
    throw config::ConfigError(fmt::format("--examples {} must be between 0 (all) and the {} training examples",
                                          options.examples, data.train.size()));
  }
  const int64_t n = options.examples == 0 ? data.train.size() : options.examples;
  // As training sees them: uint8 pixels standardised (Note [Pixel storage]),
  // a chunk at a time.
  const data_loaders::Split head = data.train.slice(0, n);
  const torch::Tensor labels = head.labels;

  models::ModelSpec spec = model_spec(config, data);
  if (spec.name == "torchscript") spec.path = (run_dir / kModelFile).string();  // the module the run trained
  auto model = models::make_model(spec, /*seed=*/0);
  model->to(device);
  model->train();
  models::FlatParameters flat(*model);
  const auto hvp = evaluation::log_posterior_hvp(
      *model, [head](int64_t start, int64_t count) { return head.slice(start, count).inputs(); }, labels,
      config.prior.precision, /*localization=*/0, /*chunk=*/1000, config.prior.biases);
  const double localization = std::isinf(config.sampler.rho) ? 0.0 : 1.0 / (config.sampler.rho * config.sampler.rho);

  // The initialisation, the member's point estimates (adam and swa, or map)
  // and x* perturbed by N(0, rho^2 I), rho as bnn rhat takes it: the
  // localization radius, or 50^-1/2 for a global sampler (rho = .inf).
  const std::string anchor = anchor_point(config);
  const torch::Tensor x_star = read_weights(dir, anchor, flat.numel(), config).to(device, torch::kFloat);
  auto noise_gen = samplers::make_generator(device, samplers::derive_seed(options.seed, kPerturbationStream));
  const double rho = default_perturbation(config);
  std::vector<std::pair<std::string, torch::Tensor>> points = {
      {"init", read_weights(dir, "init", flat.numel(), config)}};
  for (const std::string& point : point_estimates(config)) {
    points.emplace_back(point, point == anchor ? x_star : read_weights(dir, point, flat.numel(), config));
  }
  points.emplace_back(anchor + "_perturbed", x_star + rho * torch::randn(x_star.sizes(), noise_gen, x_star.options()));
  std::vector<HessianPoint> out;
  for (const auto& [name, weights] : points) {
    {
      torch::NoGradGuard no_grad;
      flat.values().copy_(weights);
    }
    // The same start vector at every point, so points differ only by x.
    auto power_gen = samplers::make_generator(device, samplers::derive_seed(options.seed, kPowerStream));
    HessianPoint p;
    p.point = name;
    p.estimate = evaluation::hessian_spectral_norm(hvp, flat.numel(), options.power, power_gen,
                                                   flat.values().options());
    p.localized = p.estimate.rayleigh + localization;
    spdlog::info("hessian at {:<13}: spectral norm {:.6g}  (rayleigh {:.6g}, {} iterations{})", name,
                 p.estimate.spectral_norm, p.estimate.rayleigh, p.estimate.iterations,
                 p.estimate.converged ? "" : ", not converged");
    out.push_back(p);
  }
  nlohmann::json report = to_json(out);
  report["examples"] = n;
  report["localization"] = localization;
  report["perturbation"] = rho;  // the standard deviation of the perturbed point's N(0, rho^2 I)
  // What produced it, so that the file can be reproduced (same seed and options, same numbers).
  report["seed"] = options.seed;
  report["max_iterations"] = options.power.max_iterations;
  report["tolerance"] = options.power.tolerance;
  report["device"] = device.str();
  if (!io::create_file_atomically(target, report.dump(2) + "\n")) {
    throw std::runtime_error(fmt::format("{} was written by another command while this one ran; it is kept, and "
                                         "this command's numbers (in its log above) are not written",
                                         target.string()));
  }
  return out;
}

nlohmann::json to_json(const std::vector<HessianPoint>& points) {
  nlohmann::json list = nlohmann::json::array();
  for (const HessianPoint& p : points) {
    list.push_back({{"point", p.point},
                    {"spectral_norm", p.estimate.spectral_norm},
                    {"rayleigh", p.estimate.rayleigh},
                    {"localized", p.localized},
                    {"iterations", p.estimate.iterations},
                    {"converged", p.estimate.converged}});
  }
  return {{"points", list}};
}

}  // namespace bnn::pipeline
