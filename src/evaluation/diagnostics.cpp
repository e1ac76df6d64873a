#include "src/evaluation/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace bnn::evaluation {
namespace {

// Chains as rows of doubles (Note [Diagnostics conventions]).
using Chains = std::vector<std::vector<double>>;

Chains to_chains(const torch::Tensor& chains, const char* what, int64_t min_chains, int64_t min_draws) {
  TORCH_CHECK(chains.defined(), what, ": chains is an undefined tensor");
  TORCH_CHECK(chains.dim() == 2, what, ": chains must be 2-D (M chains x N draws), got shape ", chains.sizes());
  TORCH_CHECK(chains.is_floating_point(), what, ": chains must have a floating dtype, got ", chains.scalar_type());
  TORCH_CHECK(chains.size(0) >= min_chains && chains.size(1) >= min_draws, what, " needs at least ", min_chains,
              " chains of ", min_draws, " draws, got shape ", chains.sizes());
  const torch::Tensor c = chains.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const double* data = c.data_ptr<double>();
  const int64_t m = c.size(0), n = c.size(1);
  Chains out(m);
  for (int64_t j = 0; j < m; ++j) {
    out[j].assign(data + j * n, data + (j + 1) * n);
    for (int64_t i = 0; i < n; ++i) {
      TORCH_CHECK(std::isfinite(out[j][i]), what, ": chain ", j, " draw ", i, " is ", out[j][i],
                  " (draws must be finite)");
    }
  }
  return out;
}

double mean_of(const std::vector<double>& x) {
  double s = 0;
  for (const double v : x) s += v;
  return s / static_cast<double>(x.size());
}

// The variance components of the header's notation.
struct Components {
  std::vector<double> means;
  double within = 0;    // W
  double var_plus = 0;  // (N-1)/N W + B/N (B taken as 0 for a single chain)
};

Components components(const Chains& chains, const char* what) {
  const auto m = static_cast<double>(chains.size());
  const auto n = static_cast<double>(chains[0].size());
  Components c;
  for (const auto& chain : chains) {
    const double mu = mean_of(chain);
    double ss = 0;
    for (const double v : chain) ss += (v - mu) * (v - mu);
    c.means.push_back(mu);
    c.within += ss / (n - 1.0);
  }
  c.within /= m;
  TORCH_CHECK(c.within > 0, what, ": every chain is constant (within-chain variance 0), so it is undefined");
  c.var_plus = (n - 1.0) / n * c.within;
  if (chains.size() > 1) {
    const double grand = mean_of(c.means);
    double between = 0;  // B / N
    for (const double mu : c.means) between += (mu - grand) * (mu - grand);
    c.var_plus += between / (m - 1.0);
  }
  return c;
}

double rhat_of(const Chains& chains, const char* what) {
  const Components c = components(chains, what);
  return std::sqrt(c.var_plus / c.within);
}

// Biased autocovariance of one chain at `lag` (divided by N).
double autocovariance(const std::vector<double>& chain, double mean, size_t lag) {
  double s = 0;
  for (size_t i = 0; i + lag < chain.size(); ++i) s += (chain[i] - mean) * (chain[i + lag] - mean);
  return s / static_cast<double>(chain.size());
}

}  // namespace

double rhat(const torch::Tensor& chains) {
  return rhat_of(to_chains(chains, "rhat", /*min_chains=*/2, /*min_draws=*/2), "rhat");
}

double split_rhat(const torch::Tensor& chains) {
  const Chains whole = to_chains(chains, "split_rhat", /*min_chains=*/1, /*min_draws=*/4);
  const size_t half = whole[0].size() / 2;
  const size_t second = whole[0].size() - half;  // skips the middle draw when N is odd
  Chains halves;
  for (const auto& chain : whole) {
    halves.emplace_back(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(half));
    halves.emplace_back(chain.begin() + static_cast<std::ptrdiff_t>(second), chain.end());
  }
  return rhat_of(halves, "split_rhat");
}

double effective_sample_size(const torch::Tensor& chains) {
  const char* what = "effective_sample_size";
  const Chains x = to_chains(chains, what, /*min_chains=*/1, /*min_draws=*/4);
  const Components c = components(x, what);
  const size_t n = x[0].size();
  const auto rho = [&](size_t lag) {
    if (lag == 0) return 1.0;
    double acov = 0;
    for (size_t j = 0; j < x.size(); ++j) acov += autocovariance(x[j], c.means[j], lag);
    acov /= static_cast<double>(x.size());
    return 1.0 - (c.within - acov) / c.var_plus;
  };
  // Geyer's initial monotone sequence over pair sums Gamma_k.
  double tau = -1.0;
  double previous = std::numeric_limits<double>::infinity();
  for (size_t k = 0; 2 * k + 1 < n; ++k) {
    const double pair = rho(2 * k) + rho(2 * k + 1);
    if (pair < 0) break;
    previous = std::min(previous, pair);
    tau += 2.0 * previous;
  }
  const double total = static_cast<double>(x.size() * n);
  return total / std::max(tau, 1.0 / std::log10(total));
}

std::vector<RhatAtEpoch> rhat_by_epoch(const torch::Tensor& chains, int64_t burn_in) {
  TORCH_CHECK(chains.defined() && chains.dim() == 2, "rhat_by_epoch: chains must be 2-D (M chains x E epochs)");
  TORCH_CHECK(burn_in >= 0, "rhat_by_epoch: burn_in must be non-negative, got ", burn_in);
  // An R-hat that is undefined for constant chains becomes NaN; the draws are
  // checked for finiteness once, over the whole post-burn-in range.
  const auto or_nan = [](auto&& compute) {
    try {
      return compute();
    } catch (const c10::Error&) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  };
  std::vector<RhatAtEpoch> out;
  const int64_t epochs = chains.size(1);
  if (epochs < burn_in + 2) return out;
  const torch::Tensor kept = chains.slice(/*dim=*/1, burn_in, epochs);
  to_chains(kept, "rhat_by_epoch", /*min_chains=*/1, /*min_draws=*/1);
  for (int64_t e = burn_in + 2; e <= epochs; ++e) {
    RhatAtEpoch point;
    point.epoch = e;
    point.draws = e - burn_in;
    const torch::Tensor draws = kept.slice(/*dim=*/1, 0, point.draws);
    point.rhat = chains.size(0) >= 2 ? or_nan([&] { return rhat(draws); }) : std::numeric_limits<double>::quiet_NaN();
    point.split_rhat =
        point.draws >= 4 ? or_nan([&] { return split_rhat(draws); }) : std::numeric_limits<double>::quiet_NaN();
    out.push_back(point);
  }
  return out;
}

}  // namespace bnn::evaluation
