// `bnn coupled-bias`: the bias of a sampler's stationary distribution on a
// real posterior, estimated with synchronously coupled chains (SMS-UBU paper,
// appendix D.1, Fig. 2 top; section 3.4's multinomial logistic regression).
//
// For levels l = 0 .. L-1 with h_l = h0 2^-l, a chain at step h_l and a chain
// at h_l / 2 start together at x* (with the same velocity and the same batch
// sequence, step for step) and share their Brownian motion: every noise draw
// of the coarse chain is built from the two draws the fine chain made over
// the same time interval (couple_draws below), so the difference of the two
// chains' averages has a far smaller variance than with independent chains,
// while its expectation, pi_{h_l}(g) - pi_{h_l/2}(g), is unchanged. The test
// functions g_i are the posterior probabilities of the true class of every
// test example i. Level l runs `epochs` 2^l epochs of the coarse chain (the
// same simulated time at every level), drops the first `burn_in_fraction` of
// them and takes one sample of both chains per coarse epoch. Per level:
//   diff_l,i = mean over samples of g_i(coarse) - g_i(fine),
//   mean_abs_diff = mean_i |diff_l,i|,
//   bias_l = mean_i | sum_{j >= l} diff_j,i |  (the telescoping sum: the bias of
//            h_l against the finest step h_L = h0 2^-L, taken as unbiased).
// Standard errors: the retained samples are cut into `chunks` consecutive
// parts, each estimate is recomputed on each part, and se = sd / sqrt(chunks).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/random.h"
#include "src/config/config.h"

namespace bnn::experiments {

// How two consecutive fine draws become one coarse draw (Note [Coupled noise]
// in samplers/kinetic_langevin.h). Each rule keeps the coarse draw exactly
// N(0, I) and equal to the Brownian increment of the whole interval:
//   kOrnsteinUhlenbeck (UBU): each draw is {2, d} (xi1, xi2) of one exact
//     Ornstein-Uhlenbeck flow U(t); two flows U(t) U(t) compose to U(2t), whose
//     noise (Zx, Zv) = (Zx1 + x_from_v(t) Zv1 + Zx2, e^{-gamma t} Zv1 + Zv2) is
//     mapped back to (xi1, xi2) of U(2t).
//   kVelocityRefresh (BAOAB): each draw is {d}, the O step
//     v <- e^{-gamma t} v + sqrt(1 - e^{-2 gamma t}) xi; two O steps of t
//     compose to one of 2t.
//   kBrownianSum (Euler-Maruyama, SGLD): xi = (xi_a + xi_b) / sqrt(2), the
//     paper's rule: sqrt(2 gamma h) xi = sqrt(gamma h) (xi_a + xi_b).
enum class CouplingRule { kOrnsteinUhlenbeck, kVelocityRefresh, kBrownianSum };

// The rule of sampler `name`; throws std::invalid_argument for samplers with
// no coupling here (their noise has other structure or a varying step).
CouplingRule coupling_rule(const std::string& name);

// Writes into `out` the coarse draw of a step of size h_coarse (the fine chain
// runs h_coarse / 2) from the fine chain's two consecutive draws.
void couple_draws(CouplingRule rule, double friction, double h_coarse, const torch::Tensor& first,
                  const torch::Tensor& second, torch::Tensor& out);

// Couples two samplers of the same kind: `fine` (step h_coarse / 2) draws its
// noise from its own seeded stream, and `coarse` builds each of its draws
// from the two the fine chain made before (couple_draws). Step the fine chain
// twice before each coarse step. Installs hooks on both samplers (Note
// [Coupled noise]), so it must outlive their stepping; it cannot be moved.
class NoiseCoupling {
 public:
  NoiseCoupling(samplers::KineticLangevin& coarse, samplers::KineticLangevin& fine, CouplingRule rule,
                double friction, double h_coarse, uint64_t seed);
  NoiseCoupling(const NoiseCoupling&) = delete;
  NoiseCoupling& operator=(const NoiseCoupling&) = delete;

 private:
  CouplingRule rule_;
  double friction_, h_coarse_;
  uint64_t seed_;
  std::deque<torch::Tensor> pending_;  // fine draws not yet used by the coarse chain
  std::unique_ptr<samplers::ChunkedNormal> normal_;
};

struct CoupledBiasOptions {
  std::vector<std::string> samplers = {"sms_ubu", "sg_ubu", "sms_baoab", "sg_baoab", "sghmc"};
  double h0 = 2e-3;                // the largest step (appendix D.1)
  int64_t levels = 3;              // pairs (h_0, h_1) ... (h_{L-1}, h_L)
  int64_t epochs = 400;            // coarse-chain epochs at level 0 (x 2^l at level l)
  double burn_in_fraction = 0.2;
  int64_t chunks = 4;
  uint64_t seed = 1;
};

// Throws std::invalid_argument naming the bad option.
void validate(const CoupledBiasOptions& options);

struct CoupledBiasRow {
  std::string sampler;
  double h = 0, h_fine = 0;
  int64_t epochs = 0, samples = 0;
  double mean_abs_diff = 0, mean_abs_diff_se = 0;
  double bias = 0, bias_se = 0;  // against the finest step of the run
  bool diverged = false;         // a chain's loss or parameters became non-finite
};

// The chains of every sampler and level, from x* = the MAP point of `config`'s
// posterior (full-batch L-BFGS, map.* keys; the sampler.* keys other than
// name and step_size set the samplers up). `progress` gets each row when its
// sampler's levels are done and may print it.
std::vector<CoupledBiasRow> run_coupled_bias(const config::Config& config, const data_loaders::Dataset& data,
                                             torch::Device device, const CoupledBiasOptions& options,
                                             const std::function<void(const std::string&)>& log);

// A level's per-example difference of the true class's probability (coarse
// minus fine) from its chunks' sums (`sums`: chunks x N, chunk k holding
// counts[k] of the `kept` samples): the mean over all samples, and each
// chunk's mean.
std::pair<torch::Tensor, torch::Tensor> level_means(const torch::Tensor& sums, const std::vector<int64_t>& counts,
                                                    int64_t kept);
// The mean over examples of |whole|, and its standard error: the sample
// standard deviation of the chunks' mean |per_chunk| over sqrt(chunks) (NaN
// with one chunk).
std::pair<double, double> mean_abs(const torch::Tensor& whole, const torch::Tensor& per_chunk);

// CSV: sampler,h,h_fine,epochs,samples,mean_abs_diff,mean_abs_diff_se,bias,bias_se (atomic write).
void write_coupled_bias_csv(const std::vector<CoupledBiasRow>& rows, const std::filesystem::path& path);
// Throws ConfigError unless `path` is new or an earlier write_coupled_bias_csv
// (Note [Output files] in src/pipeline/run_directory.h).
void check_coupled_bias_csv_path(const std::filesystem::path& path);
std::string coupled_bias_table(const std::vector<CoupledBiasRow>& rows);

}  // namespace bnn::experiments
