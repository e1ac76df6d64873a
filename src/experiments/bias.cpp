#include "src/experiments/bias.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/torch.h>

#include "samplers/gradient_oracle.h"
#include "samplers/random.h"
#include "samplers/registry.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/run_directory.h"

namespace bnn::experiments {
namespace {

constexpr double kMeans[2] = {-1.0, 1.0};
constexpr double kScales[2] = {0.5, 2.0};
constexpr double kHalfWidth = 8.0;  // histogram range: mu +- 8 sigma

// `chains` independent copies of the two-point target as one vector.
class TwoPointOracle : public samplers::GradientOracle {
 public:
  explicit TwoPointOracle(int64_t chains)
      : x_(torch::full({chains}, kBiasMean, torch::kDouble)),
        g_(torch::zeros({chains}, torch::kDouble)),
        mask_(torch::zeros({chains}, torch::kDouble)) {}
  torch::Tensor parameters() override { return x_; }
  torch::Tensor gradient() override { return g_; }
  torch::Tensor prior_mask() override { return mask_; }
  int64_t num_batches() const override { return 2; }
  torch::Tensor evaluate(int64_t b) override {
    // U_b'(x) = (x - m_b) / s_b^2; the sampler multiplies by N_m = 2.
    torch::sub_out(g_, x_, kMeans[b]).div_(kScales[b] * kScales[b]);
    return loss(b);
  }
  torch::Tensor loss(int64_t b) override { return ((x_ - kMeans[b]) / kScales[b]).pow(2).sum() / 2; }

 private:
  torch::Tensor x_, g_, mask_;
};

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

BiasRow run_one(const BiasOptions& o, const std::string& name, double h, uint64_t seed) {
  TwoPointOracle oracle(o.chains);
  samplers::LangevinOptions options(h);
  options.friction(o.friction).prior_precision(0.0);
  auto sampler = samplers::make_sampler(name, oracle, oracle.parameters().clone(), options, seed);
  const auto burn = static_cast<int64_t>(std::llround(o.burn_in_time / h));
  const auto steps = static_cast<int64_t>(std::llround(o.sample_time / h));
  const double lo = kBiasMean - kHalfWidth * kBiasStd, hi = kBiasMean + kHalfWidth * kBiasStd;
  torch::Tensor counts = torch::zeros({o.bins}, torch::kDouble);
  torch::Tensor outside = torch::zeros({}, torch::kLong);  // samples beyond mu +- 8 sigma
  const torch::Tensor x = oracle.parameters();
  auto diverged = [&] { return !x.isfinite().all().item<bool>(); };
  for (int64_t i = 0; i < burn; ++i) {
    sampler->step();
    if (i % 256 == 255 && diverged()) return {name, h, std::numeric_limits<double>::infinity()};
  }
  for (int64_t i = 0; i < steps; ++i) {
    sampler->step();
    counts += torch::histc(x.clamp(lo, hi), o.bins, lo, hi);
    outside += x.lt(lo).sum() + x.gt(hi).sum();
    if (i % 256 == 255 && diverged()) return {name, h, std::numeric_limits<double>::infinity()};
  }
  // A stable chain puts a mass of order 1e-15 beyond 8 sigma; 1% there means
  // the chains are blowing up (still finite, but not sampling anything).
  const double outside_fraction = outside.item<double>() / (static_cast<double>(steps) * o.chains);
  if (diverged() || outside_fraction > 0.01) return {name, h, std::numeric_limits<double>::infinity()};
  const std::vector<double> c(counts.data_ptr<double>(), counts.data_ptr<double>() + o.bins);
  return {name, h, w1_to_gaussian(c, lo, hi, kBiasMean, kBiasStd)};
}

}  // namespace

std::vector<std::string> default_bias_samplers() {
  std::vector<std::string> names;
  for (const auto& n : samplers::sampler_names()) {
    // sghmc is em_rr under another name; nogin needs per-example gradients,
    // which the two-point target (one example per batch) does not have.
    if (n != "csghmc" && n != "sghmc" && n != "nogin") names.push_back(n);
  }
  return names;
}

void validate(const BiasOptions& o) {
  const auto& known = samplers::sampler_names();
  for (const auto& s : o.samplers) {
    if (std::find(known.begin(), known.end(), s) == known.end()) {
      throw std::invalid_argument(fmt::format("bnn bias: unknown sampler '{}'", s));
    }
    if (s == "csghmc") {
      throw std::invalid_argument("bnn bias: csghmc cycles its step size, so it has no bias at a fixed h");
    }
    if (s == "nogin") {
      throw std::invalid_argument(
          "bnn bias: nogin estimates the gradient-noise covariance from per-example gradients, and the "
          "two-point target has one example per batch");
    }
  }
  if (o.step_sizes.empty()) throw std::invalid_argument("bnn bias: no step sizes given");
  for (double h : o.step_sizes) {
    if (!(h > 0 && std::isfinite(h))) {
      throw std::invalid_argument(fmt::format("bnn bias: step size {} must be positive and finite", h));
    }
  }
  if (o.chains < 1) throw std::invalid_argument(fmt::format("bnn bias: --chains {} must be at least 1", o.chains));
  // About ten doubles a chain (position, velocity, force, noise, mask): 10^8 chains are 8 GB.
  constexpr int64_t kMostChains = 100000000;
  if (o.chains > kMostChains) {
    throw std::invalid_argument(fmt::format("bnn bias: --chains {} must be at most {} (each chain holds about 80 "
                                            "bytes)",
                                            o.chains, kMostChains));
  }
  if (!(o.burn_in_time >= 0 && std::isfinite(o.burn_in_time))) {
    throw std::invalid_argument(fmt::format("bnn bias: --burn-in {} must be non-negative", o.burn_in_time));
  }
  if (!(o.sample_time > 0 && std::isfinite(o.sample_time))) {
    throw std::invalid_argument(fmt::format("bnn bias: --time {} must be positive", o.sample_time));
  }
  if (!(o.friction > 0 && std::isfinite(o.friction))) {
    throw std::invalid_argument(fmt::format("bnn bias: --friction {} must be positive", o.friction));
  }
  // run_one's sampling steps, round(time / h): none would leave nothing to measure.
  const double largest = *std::max_element(o.step_sizes.begin(), o.step_sizes.end());
  if (o.sample_time / largest < 0.5) {
    throw std::invalid_argument(fmt::format("bnn bias: --time {} is not one step of size {} (--step-sizes), so that "
                                            "chain would keep no sample; give --time {} or more",
                                            o.sample_time, largest, largest));
  }
  if (o.bins < 10) throw std::invalid_argument(fmt::format("bnn bias: --bins {} must be at least 10", o.bins));
}

double w1_to_gaussian(const std::vector<double>& counts, double lo, double hi, double mean, double std) {
  double total = 0;
  for (double c : counts) total += c;
  if (total <= 0) throw std::invalid_argument("w1_to_gaussian: empty histogram");
  const auto bins = static_cast<double>(counts.size());
  const double width = (hi - lo) / bins;
  // Below lo: F_n = 0 (values were clamped into the range), |F| integrates to
  // the Gaussian's lower tail moment; likewise above hi.
  auto tail = [&](double edge, double sign) {
    // integral over x beyond edge of F (or 1 - F): sigma (phi(z) - |z| Q(|z|)), z = (edge - mean)/sigma
    const double z = sign * (edge - mean) / std;
    const double q = 0.5 * std::erfc(z / std::sqrt(2.0));
    return std * (std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI) - z * q);
  };
  double w1 = tail(lo, -1.0) + tail(hi, 1.0);
  double cum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double a = lo + width * static_cast<double>(i), b = a + width;
    const double f_lo = cum / total;
    cum += counts[i];
    const double f_hi = cum / total;
    // Within the bin F_n is unknown but between f_lo and f_hi; the midpoint
    // rule on |F_mid - F| with F_n at its bin-end value keeps the error below
    // one bin width in total.
    const double fa = normal_cdf((a - mean) / std), fb = normal_cdf((b - mean) / std);
    w1 += width * 0.5 * (std::abs(f_lo - fa) + std::abs(f_hi - fb));
  }
  return w1;
}

std::vector<BiasRow> run_bias(const BiasOptions& options, void (*progress)(const BiasRow&)) {
  validate(options);
  const std::vector<std::string> names = options.samplers.empty() ? default_bias_samplers() : options.samplers;
  std::vector<BiasRow> rows;
  uint64_t stream = 0;
  for (const auto& name : names) {
    for (double h : options.step_sizes) {
      rows.push_back(run_one(options, name, h, samplers::derive_seed(options.seed, stream++)));
      if (progress) progress(rows.back());
    }
  }
  return rows;
}

double fitted_slope(const std::vector<BiasRow>& rows, const std::string& sampler) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& r : rows) {
    if (r.sampler != sampler || !(r.w1 > 0) || !std::isfinite(r.w1)) continue;
    const double x = std::log(r.h), y = std::log(r.w1);
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

namespace {
constexpr const char* kBiasCsvHeader = "sampler,h,w1\n";
}  // namespace

void check_bias_csv_path(const std::filesystem::path& path) {
  pipeline::check_output_file(path, "bnn bias", kBiasCsvHeader);
}

void write_bias_csv(const std::vector<BiasRow>& rows, const std::filesystem::path& path) {
  std::string text = kBiasCsvHeader;
  for (const auto& r : rows) {
    text += fmt::format("{},{:.17g},{}\n", r.sampler, r.h, std::isfinite(r.w1) ? fmt::format("{:.17g}", r.w1) : "inf");
  }
  io::write_file_atomically(path, text);
}

std::string bias_table(const std::vector<BiasRow>& rows) {
  std::vector<std::string> names;
  std::vector<double> hs;
  for (const auto& r : rows) {
    if (std::find(names.begin(), names.end(), r.sampler) == names.end()) names.push_back(r.sampler);
    if (std::find(hs.begin(), hs.end(), r.h) == hs.end()) hs.push_back(r.h);
  }
  std::string out = fmt::format("{:<10}", "sampler");
  for (double h : hs) out += fmt::format(" {:>11}", fmt::format("h={:g}", h));
  out += fmt::format(" {:>7}\n", "slope");
  for (const auto& name : names) {
    out += fmt::format("{:<10}", name);
    for (double h : hs) {
      std::string cell = "-";
      for (const auto& r : rows) {
        if (r.sampler == name && r.h == h) cell = std::isfinite(r.w1) ? fmt::format("{:.3e}", r.w1) : "diverged";
      }
      out += fmt::format(" {:>11}", cell);
    }
    const double slope = fitted_slope(rows, name);
    out += std::isnan(slope) ? fmt::format(" {:>7}\n", "-") : fmt::format(" {:>7.2f}\n", slope);
  }
  return out;
}

}  // namespace bnn::experiments
