// StochasticGradient (samplers/stochastic_gradient.h): the potential f(x)/T
// that a Metropolis-Hastings correction reads, with every term switched on
// (data, prior on the masked coordinates, localization, temperature), against
// the formula computed here, and the force as its gradient.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "samplers/langevin_options.h"
#include "samplers/random.h"
#include "samplers/stochastic_gradient.h"
#include "tests/samplers/quadratic_oracle.h"

namespace bnn::samplers {
namespace {

constexpr int64_t kPotentialDim = 8;  // the first half carries the prior
const std::vector<double> kBatchPrecisions = {0.5, 1.0, 0.25}, kBatchMeans = {-1.0, 0.5, 1.0};
constexpr double kPotentialLambda = 6.0, kPotentialRho = 0.7, kPotentialTemperature = 2.5;

testing::QuadraticOracle make_potential_oracle() {
  torch::Tensor mask = torch::zeros({kPotentialDim}, torch::kDouble);
  mask.narrow(0, 0, kPotentialDim / 2).fill_(1.0);
  return testing::QuadraticOracle(kPotentialDim, kBatchPrecisions, kBatchMeans, mask, 0.0);
}

LangevinOptions potential_options(GradientEstimator estimator = GradientEstimator::kPlain) {
  return LangevinOptions(0.1).prior_precision(kPotentialLambda).rho(kPotentialRho).temperature(kPotentialTemperature)
      .estimator(estimator);
}

// The anchor x* and two points x, fixed draws.
torch::Tensor draw_point(uint64_t seed, double scale) {
  at::Generator gen = make_generator(torch::kCPU, seed);
  return torch::empty({kPotentialDim}, torch::kDouble).normal_(0.0, scale, gen);
}

struct PotentialTerms {
  double data, prior, localization;
};

// The three terms of f (stochastic_gradient.h), each computed from its
// definition: sum_b (a_b/2) ||x - m_b||^2, (lambda/2) ||x_w||^2 over the masked
// coordinates, ||x - x*||^2 / (2 rho^2).
PotentialTerms potential_terms(const torch::Tensor& x, const torch::Tensor& anchor) {
  PotentialTerms t{0, 0, 0};
  for (int64_t i = 0; i < kPotentialDim; ++i) {
    const double xi = x[i].item<double>();
    for (size_t b = 0; b < kBatchPrecisions.size(); ++b) {
      t.data += kBatchPrecisions[b] / 2 * (xi - kBatchMeans[b]) * (xi - kBatchMeans[b]);
    }
    if (i < kPotentialDim / 2) t.prior += kPotentialLambda / 2 * xi * xi;
    const double d = xi - anchor[i].item<double>();
    t.localization += d * d / (2 * kPotentialRho * kPotentialRho);
  }
  return t;
}

// potential() = (data + prior + localization) / T to double rounding (1e-12
// relative: sums of a few dozen terms of order 1). At the points below each
// term is over 15% of f (checked), so doubling or halving any one of them, or
// dividing by T^2 or 1 instead of T, moves the potential by more than 7%.
TEST(StochasticGradient, PotentialIsTheTemperedLocalizedPosterior) {
  auto oracle = make_potential_oracle();
  const torch::Tensor anchor = draw_point(1, 0.5);
  StochasticGradient gradient(oracle, anchor, potential_options());
  for (const uint64_t seed : {2, 3}) {
    SCOPED_TRACE(seed);
    const torch::Tensor x = draw_point(seed, 1.0);
    oracle.parameters().copy_(x);
    const PotentialTerms t = potential_terms(x, anchor);
    const double f = t.data + t.prior + t.localization;
    for (const double term : {t.data, t.prior, t.localization}) {
      EXPECT_GT(term, 0.15 * f) << "data " << t.data << ", prior " << t.prior << ", localization " << t.localization;
    }
    const double got = gradient.potential().item<double>();
    EXPECT_NEAR(got / (f / kPotentialTemperature), 1.0, 1e-12) << got << " vs " << f / kPotentialTemperature;
  }
}

// The force is the gradient of the potential: the mean of G(x, b) over the
// batches (for the control variate S* + N_m (g_b - g*_b) averages to the full
// gradient too) against a central difference of potential() along a random
// direction. f is quadratic, so the difference is exact but for rounding:
// about 1e-16 |U| / eps = 1e-11 here against a derivative of order 10;
// tolerance 1e-8 relative.
TEST(StochasticGradient, ForceIsTheGradientOfThePotential) {
  for (const auto estimator : {GradientEstimator::kPlain, GradientEstimator::kControlVariate}) {
    SCOPED_TRACE(to_string(estimator));
    auto oracle = make_potential_oracle();
    const torch::Tensor anchor = draw_point(1, 0.5);
    oracle.parameters().copy_(anchor);  // the control variate starts at x*
    StochasticGradient gradient(oracle, anchor, potential_options(estimator));
    const torch::Tensor x = draw_point(2, 1.0), u = draw_point(4, 1.0);
    oracle.parameters().copy_(x);
    torch::Tensor mean_force = torch::zeros({kPotentialDim}, torch::kDouble);
    for (int64_t b = 0; b < oracle.num_batches(); ++b) mean_force += gradient.evaluate(b);
    mean_force /= static_cast<double>(oracle.num_batches());
    const double slope = torch::dot(mean_force, u).item<double>();

    const double eps = 1e-3;
    oracle.parameters().copy_(x + eps * u);
    const double up = gradient.potential().item<double>();
    oracle.parameters().copy_(x - eps * u);
    const double down = gradient.potential().item<double>();
    EXPECT_NEAR((up - down) / (2 * eps) / slope, 1.0, 1e-8) << (up - down) / (2 * eps) << " vs " << slope;
    EXPECT_GT(std::abs(slope), 1.0);
  }
}

}  // namespace
}  // namespace bnn::samplers

namespace bnn::samplers {
namespace {

// Note [Redrawn batches]: with BatchNorm, redrawn batches make another
// potential each cycle. Here batch b's gradient is a_b (x - m_b - c) in cycle
// c, so the sum over batches is another function in each cycle.
class ShiftingOracle : public GradientOracle {
 public:
  explicit ShiftingOracle(torch::Tensor start) : x_(std::move(start)), g_(torch::zeros_like(x_)) {}
  torch::Tensor parameters() override { return x_; }
  torch::Tensor gradient() override { return g_; }
  torch::Tensor prior_mask() override { return torch::ones_like(x_); }
  int64_t num_batches() const override { return static_cast<int64_t>(kBatchPrecisions.size()); }
  torch::Tensor evaluate(int64_t b) override {
    const auto i = static_cast<size_t>(b);
    torch::sub_out(g_, x_, kBatchMeans[i] + static_cast<double>(cycle_)).mul_(kBatchPrecisions[i]);
    return torch::zeros({}, x_.options());
  }
  bool begin_cycle(int64_t cycle) override {
    const bool changed = cycle != cycle_;
    cycle_ = cycle;
    return changed;
  }
  // The full-data gradient in the current cycle at `x`.
  torch::Tensor full_gradient(const torch::Tensor& x) const {
    torch::Tensor sum = torch::zeros_like(x);
    for (size_t b = 0; b < kBatchPrecisions.size(); ++b) {
      sum += kBatchPrecisions[b] * (x - kBatchMeans[b] - static_cast<double>(cycle_));
    }
    return sum;
  }

 private:
  torch::Tensor x_, g_;
  int64_t cycle_ = 0;
};

// The control variate sums S* again when the batches make another potential:
// the force averaged over a cycle's batches is then that cycle's gradient
// (unbiased); with cycle 0's S* it would be off by sum_b a_b / T.
TEST(StochasticGradient, AControlVariateResumsItsAnchorForAnotherCyclesPotential) {
  const torch::Tensor anchor = draw_point(31, 1.0);
  ShiftingOracle oracle(anchor.clone());
  StochasticGradient gradient(oracle, anchor,
                              potential_options(GradientEstimator::kControlVariate)
                                  .anchor_gradients(AnchorGradients::kRecomputed));
  const torch::Tensor x = draw_point(32, 0.5);
  oracle.parameters().copy_(x);
  ASSERT_TRUE(oracle.begin_cycle(1));
  gradient.resum_anchor();
  EXPECT_TRUE(oracle.parameters().equal(x));  // left where it was
  torch::Tensor mean = torch::zeros_like(x);
  for (int64_t b = 0; b < oracle.num_batches(); ++b) mean += gradient.evaluate(b) / oracle.num_batches();
  const double loc = 1.0 / (kPotentialRho * kPotentialRho);
  const torch::Tensor expected =
      (oracle.full_gradient(x) + kPotentialLambda * x + (x - anchor) * loc) / kPotentialTemperature;
  EXPECT_LT((mean - expected).abs().max().item<double>(), 1e-12) << mean << expected;
}

}  // namespace
}  // namespace bnn::samplers
