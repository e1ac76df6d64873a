#include "src/experiments/coupled_bias.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/random.h"
#include "samplers/registry.h"
#include "samplers/ubu_constants.h"
#include "src/config/sampler_options.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/map_estimate.h"
#include "src/pipeline/member.h"
#include "src/pipeline/model_oracle.h"
#include "src/pipeline/run_directory.h"

namespace bnn::experiments {
namespace {

// Streams of the experiment seed (Note [RNG streams] in samplers/random.h).
constexpr uint64_t kInitStream = 0;
constexpr uint64_t kPartitionStream = 1;
constexpr uint64_t kLevelStream = 2;
constexpr uint64_t kCouplingStream = 3;  // of a level's seed: the fine chain's draws

// One chain's network, flat parameters and gradient oracle.
struct Chain {
  std::shared_ptr<models::Classifier> model;
  std::unique_ptr<models::FlatParameters> flat;
  std::unique_ptr<pipeline::ModelOracle> oracle;
};

Chain make_chain(const config::Config& config, const data_loaders::Dataset& data,
                 const data_loaders::Partition& partition, torch::Device device, uint64_t seed) {
  Chain c;
  c.model = models::make_model(pipeline::model_spec(config, data), seed);
  c.model->to(device);
  c.flat = std::make_unique<models::FlatParameters>(*c.model);
  if (config.prior.biases) c.flat->include_biases_in_prior();
  c.oracle = std::make_unique<pipeline::ModelOracle>(*c.model, *c.flat, partition);
  return c;
}

// g_i: the probability of the true class of every test example (double).
torch::Tensor true_class_probability(Chain& chain, const data_loaders::Partition& partition,
                                     const data_loaders::Dataset& data, int64_t bn_batches) {
  const torch::Tensor p = pipeline::predict_test_probabilities(*chain.model, partition, data.test, bn_batches);
  return p.gather(1, data.test.labels.unsqueeze(1)).squeeze(1).to(torch::kDouble);
}

bool finite(Chain& chain) { return torch::isfinite(chain.flat->values()).all().item<bool>(); }

// The per-example difference of one level: over all retained samples, and per chunk.
struct LevelDiff {
  torch::Tensor whole;      // N
  torch::Tensor per_chunk;  // chunks x N
  bool diverged = false;
};

}  // namespace

std::pair<double, double> mean_abs(const torch::Tensor& whole, const torch::Tensor& per_chunk) {
  const double value = whole.abs().mean().item<double>();
  const torch::Tensor chunks = per_chunk.abs().mean(1);
  const double se = chunks.numel() > 1 ? chunks.std().item<double>() / std::sqrt(static_cast<double>(chunks.numel()))
                                       : std::nan("");
  return {value, se};
}

std::pair<torch::Tensor, torch::Tensor> level_means(const torch::Tensor& sums, const std::vector<int64_t>& counts,
                                                    int64_t kept) {
  TORCH_CHECK(sums.dim() == 2 && sums.size(0) == static_cast<int64_t>(counts.size()),
              "level_means: one row of sums per chunk count");
  torch::Tensor per_chunk = sums.clone();
  for (size_t k = 0; k < counts.size(); ++k) per_chunk[static_cast<int64_t>(k)] /= static_cast<double>(counts[k]);
  return {sums.sum(0) / static_cast<double>(kept), per_chunk};
}

CouplingRule coupling_rule(const std::string& name) {
  if (name == "sms_ubu" || name == "sg_ubu" || name == "ubu_rr") return CouplingRule::kOrnsteinUhlenbeck;
  if (name == "sms_baoab" || name == "sg_baoab" || name == "baoab_rr") return CouplingRule::kVelocityRefresh;
  if (name == "sghmc" || name == "sg_em" || name == "em_rr" || name == "sms_em" || name == "sgld") {
    return CouplingRule::kBrownianSum;
  }
  throw std::invalid_argument(fmt::format(
      "sampler '{}' has no synchronous coupling here (csghmc's step varies, sgnht, obabo and nogin have other "
      "noise); coupled-bias supports sms_ubu, sg_ubu, ubu_rr, sms_baoab, sg_baoab, baoab_rr, sghmc, sg_em, em_rr, "
      "sms_em, sgld",
      name));
}

void couple_draws(CouplingRule rule, double friction, double h_coarse, const torch::Tensor& first,
                  const torch::Tensor& second, torch::Tensor& out) {
  TORCH_CHECK(first.sizes() == out.sizes() && second.sizes() == out.sizes(),
              "couple_draws: fine draws and coarse buffer differ in shape");
  torch::NoGradGuard no_grad;
  switch (rule) {
    case CouplingRule::kBrownianSum:
      at::add_out(out, first, second).mul_(1.0 / std::sqrt(2.0));
      return;
    case CouplingRule::kVelocityRefresh: {
      // v'' = c_f^2 v + c_f s_f xi_a + s_f xi_b with c_f = e^{-gamma h/2}, s_f = sqrt(1 - c_f^2);
      // the noise has variance 1 - c_f^4 = s_c^2, the coarse O step's.
      const double c_f = std::exp(-friction * h_coarse / 2.0);
      const double s_f = std::sqrt(-std::expm1(-friction * h_coarse));
      const double s_c = std::sqrt(-std::expm1(-2.0 * friction * h_coarse));
      at::mul_out(out, first, c_f * s_f / s_c).add_(second, s_f / s_c);
      return;
    }
    case CouplingRule::kOrnsteinUhlenbeck: {
      // UBU halves: the fine chain's U(h/4) twice, the coarse chain's U(h/2).
      TORCH_CHECK(out.dim() >= 1 && out.size(0) == 2, "couple_draws: UBU draws are {2, d}");
      const samplers::UbuConstants f = samplers::ubu_constants(friction, h_coarse / 4.0);
      const samplers::UbuConstants c = samplers::ubu_constants(friction, h_coarse / 2.0);
      const torch::Tensor zx1 = first[0] * f.x_noise;
      const torch::Tensor zv1 = first[0] * f.v_from_xi1 + first[1] * f.v_noise;
      const torch::Tensor zx2 = second[0] * f.x_noise;
      const torch::Tensor zv2 = second[0] * f.v_from_xi1 + second[1] * f.v_noise;
      const torch::Tensor zx = zx1 + zv1 * f.x_from_v + zx2;
      const torch::Tensor zv = zv1 * f.decay + zv2;
      torch::Tensor xi1 = out[0];
      torch::Tensor xi2 = out[1];
      at::mul_out(xi1, zx, 1.0 / c.x_noise);
      at::sub_out(xi2, zv, xi1 * c.v_from_xi1).mul_(1.0 / c.v_noise);
      return;
    }
  }
}

NoiseCoupling::NoiseCoupling(samplers::KineticLangevin& coarse, samplers::KineticLangevin& fine, CouplingRule rule,
                             double friction, double h_coarse, uint64_t seed)
    : rule_(rule), friction_(friction), h_coarse_(h_coarse), seed_(seed) {
  fine.set_noise_hook([this](torch::Tensor& buffer) {
    if (!normal_) normal_ = std::make_unique<samplers::ChunkedNormal>(buffer, seed_);
    normal_->fill(buffer);
    pending_.push_back(buffer.clone());
  });
  coarse.set_noise_hook([this](torch::Tensor& buffer) {
    TORCH_CHECK(pending_.size() >= 2, "coupled chains: the coarse chain ran ahead of the fine chain (step the fine "
                                      "chain twice before each coarse step)");
    couple_draws(rule_, friction_, h_coarse_, pending_[0], pending_[1], buffer);
    pending_.pop_front();
    pending_.pop_front();
  });
}

void validate(const CoupledBiasOptions& o) {
  if (o.samplers.empty()) throw std::invalid_argument("--samplers: no sampler given");
  for (const auto& name : o.samplers) coupling_rule(name);
  if (!(o.h0 > 0) || !std::isfinite(o.h0)) throw std::invalid_argument(fmt::format("--h0 {} must be positive", o.h0));
  if (o.levels < 1 || o.levels > 20) throw std::invalid_argument(fmt::format("--levels {} must be 1 to 20", o.levels));
  if (!(o.burn_in_fraction >= 0 && o.burn_in_fraction < 1)) {
    throw std::invalid_argument(fmt::format("--burn-in-fraction {} must be in [0, 1)", o.burn_in_fraction));
  }
  if (o.chunks < 2) throw std::invalid_argument(fmt::format("--chunks {} must be at least 2", o.chunks));
  const auto kept = o.epochs - static_cast<int64_t>(std::floor(o.burn_in_fraction * static_cast<double>(o.epochs)));
  if (o.epochs < 1 || kept < o.chunks) {
    throw std::invalid_argument(fmt::format("--epochs {} keeps {} sample(s) after the burn-in at level 0, fewer than "
                                            "--chunks {}",
                                            o.epochs, kept, o.chunks));
  }
}

std::vector<CoupledBiasRow> run_coupled_bias(const config::Config& config, const data_loaders::Dataset& data,
                                             torch::Device device, const CoupledBiasOptions& options,
                                             const std::function<void(const std::string&)>& log) {
  validate(options);
  const data_loaders::Partition partition(data.train, config.data.batch_size,
                                          samplers::derive_seed(options.seed, kPartitionStream));
  const uint64_t init_seed = samplers::derive_seed(options.seed, kInitStream);
  Chain coarse = make_chain(config, data, partition, device, init_seed);
  Chain fine = make_chain(config, data, partition, device, init_seed);
  const int64_t nb = partition.num_batches();
  const int64_t bn_batches = config.evaluation.bn_batches;

  auto start = std::chrono::steady_clock::now();
  const pipeline::MapResult map = pipeline::find_map(*coarse.oracle, coarse.model->parameters(),
                                                     partition.num_examples(), config.prior.precision, config.map);
  TORCH_CHECK(std::isfinite(map.objective), "coupled-bias: L-BFGS reached a non-finite objective");
  log(fmt::format("x* by L-BFGS: {} full-data evaluations, F = {:.6f}, max |grad| {:.3g}{} ({:.1f}s)",
                  map.evaluations, map.objective, map.max_gradient, map.converged ? "" : " (above map.tolerance)",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  const torch::Tensor x_star = coarse.flat->values().clone();
  const double gamma = *config.sampler.friction;

  std::vector<CoupledBiasRow> rows;
  for (const std::string& name : options.samplers) {
    const CouplingRule rule = coupling_rule(name);
    std::vector<LevelDiff> diffs;
    std::vector<CoupledBiasRow> level_rows;
    for (int64_t l = 0; l < options.levels; ++l) {
      start = std::chrono::steady_clock::now();
      const double h = options.h0 * std::ldexp(1.0, static_cast<int>(-l));
      const int64_t epochs = options.epochs << l;
      const int64_t burn = static_cast<int64_t>(std::floor(options.burn_in_fraction * static_cast<double>(epochs)));
      const int64_t kept = epochs - burn;
      const int64_t per_chunk = kept / options.chunks;
      const uint64_t level_seed = samplers::derive_seed(options.seed, kLevelStream + 16 * static_cast<uint64_t>(l));
      {
        torch::NoGradGuard no_grad;
        coarse.flat->values().copy_(x_star);
        fine.flat->values().copy_(x_star);
      }
      config::Config c = config;
      c.sampler.name = name;
      c.sampler.step_size = h;
      const auto coarse_sampler =
          samplers::make_sampler(name, *coarse.oracle, x_star, config::langevin_options(c, nb, x_star.numel()),
                                 level_seed);
      c.sampler.step_size = h / 2.0;
      const auto fine_sampler = samplers::make_sampler(
          name, *fine.oracle, x_star, config::langevin_options(c, nb, x_star.numel()), level_seed);
      auto* coarse_kl = dynamic_cast<samplers::KineticLangevin*>(coarse_sampler.get());
      auto* fine_kl = dynamic_cast<samplers::KineticLangevin*>(fine_sampler.get());
      TORCH_CHECK(coarse_kl != nullptr && fine_kl != nullptr, "coupled-bias: ", name, " is not a Langevin sampler");
      const NoiseCoupling coupling(*coarse_kl, *fine_kl, rule, gamma, h,
                                   samplers::derive_seed(level_seed, kCouplingStream));

      LevelDiff d;
      d.per_chunk = torch::zeros({options.chunks, data.test.size()}, torch::TensorOptions().dtype(torch::kDouble)
                                                                          .device(device));
      std::vector<int64_t> counts(static_cast<size_t>(options.chunks), 0);
      for (int64_t e = 0; e < epochs && !d.diverged; ++e) {
        for (int64_t s = 0; s < nb; ++s) {
          fine_sampler->step();
          fine_sampler->step();
          coarse_sampler->step();
        }
        if (!finite(coarse) || !finite(fine)) {
          d.diverged = true;
          break;
        }
        if (e < burn) continue;
        const int64_t chunk = std::min((e - burn) / per_chunk, options.chunks - 1);
        d.per_chunk[chunk] += true_class_probability(coarse, partition, data, bn_batches) -
                              true_class_probability(fine, partition, data, bn_batches);
        ++counts[static_cast<size_t>(chunk)];
      }
      if (!d.diverged) std::tie(d.whole, d.per_chunk) = level_means(d.per_chunk, counts, kept);
      CoupledBiasRow row;
      row.sampler = name;
      row.h = h;
      row.h_fine = h / 2.0;
      row.epochs = epochs;
      row.samples = kept;
      row.diverged = d.diverged;
      row.mean_abs_diff = row.mean_abs_diff_se = std::nan("");
      if (!d.diverged) std::tie(row.mean_abs_diff, row.mean_abs_diff_se) = mean_abs(d.whole, d.per_chunk);
      log(fmt::format("{} h={:g} vs {:g}: {} epochs, mean |diff| {:.4g} (se {:.2g}){} ({:.1f}s)", name, h, h / 2.0,
                      epochs, row.mean_abs_diff, row.mean_abs_diff_se, d.diverged ? ", diverged" : "",
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
      diffs.push_back(std::move(d));
      level_rows.push_back(row);
    }
    // Telescoping sums from the finest level up.
    torch::Tensor whole, per_chunk;
    bool diverged = false;
    for (int64_t l = options.levels - 1; l >= 0; --l) {
      auto& row = level_rows[static_cast<size_t>(l)];
      const LevelDiff& d = diffs[static_cast<size_t>(l)];
      diverged = diverged || d.diverged;
      if (diverged) {
        row.bias = row.bias_se = std::nan("");
        continue;
      }
      whole = whole.defined() ? whole + d.whole : d.whole;
      per_chunk = per_chunk.defined() ? per_chunk + d.per_chunk : d.per_chunk;
      std::tie(row.bias, row.bias_se) = mean_abs(whole, per_chunk);
    }
    rows.insert(rows.end(), level_rows.begin(), level_rows.end());
  }
  return rows;
}

namespace {
std::string number(double v) { return std::isfinite(v) ? fmt::format("{:.17g}", v) : "nan"; }
constexpr const char* kCoupledBiasCsvHeader =
    "sampler,h,h_fine,epochs,samples,mean_abs_diff,mean_abs_diff_se,bias,bias_se\n";
}  // namespace

void check_coupled_bias_csv_path(const std::filesystem::path& path) {
  pipeline::check_output_file(path, "bnn coupled-bias", kCoupledBiasCsvHeader);
}

void write_coupled_bias_csv(const std::vector<CoupledBiasRow>& rows, const std::filesystem::path& path) {
  std::string text = kCoupledBiasCsvHeader;
  for (const auto& r : rows) {
    text += fmt::format("{},{},{},{},{},{},{},{},{}\n", r.sampler, number(r.h), number(r.h_fine), r.epochs,
                        r.samples, number(r.mean_abs_diff), number(r.mean_abs_diff_se), number(r.bias),
                        number(r.bias_se));
  }
  io::write_file_atomically(path, text);
}

std::string coupled_bias_table(const std::vector<CoupledBiasRow>& rows) {
  std::string out = fmt::format("{:<10} {:>10} {:>7} {:>22} {:>22}\n", "sampler", "h", "epochs",
                                "mean|p_h - p_h/2| (se)", "bias vs finest h (se)");
  auto cell = [](double v, double se) {
    return std::isfinite(v) ? fmt::format("{:.3e} ({:.1e})", v, se) : std::string("diverged");
  };
  for (const auto& r : rows) {
    out += fmt::format("{:<10} {:>10.4g} {:>7} {:>22} {:>22}\n", r.sampler, r.h, r.epochs,
                       cell(r.mean_abs_diff, r.mean_abs_diff_se), cell(r.bias, r.bias_se));
  }
  return out;
}

}  // namespace bnn::experiments
