// Tests for src/evaluation/diagnostics.h: R-hat on chains of one distribution
// and on shifted or drifting chains, ESS of AR(1) chains against the closed
// form, a hand-checkable case, and input checks. Fixed seeds throughout.
#include "src/evaluation/diagnostics.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "samplers/random.h"
#include "tests/support/error_text.h"

namespace bnn::evaluation {
namespace {

torch::Tensor normal_chains(int64_t m, int64_t n, uint64_t seed) {
  auto gen = samplers::make_generator(torch::kCPU, seed);
  return torch::randn({m, n}, gen, torch::kDouble);
}

// Stationary AR(1): x_0 ~ N(0, 1 / (1 - phi^2)), x_t = phi x_{t-1} + eps_t.
torch::Tensor ar1_chains(int64_t m, int64_t n, double phi, uint64_t seed) {
  const torch::Tensor eps = normal_chains(m, n, seed);
  torch::Tensor x = torch::empty({m, n}, torch::kDouble);
  auto e = eps.accessor<double, 2>();
  auto a = x.accessor<double, 2>();
  for (int64_t j = 0; j < m; ++j) {
    a[j][0] = e[j][0] / std::sqrt(1.0 - phi * phi);
    for (int64_t i = 1; i < n; ++i) a[j][i] = phi * a[j][i - 1] + e[j][i];
  }
  return x;
}

// Chains of one distribution: (R-hat - 1) is of order 1/N (its between-chain
// part is B/N / W ~ chi^2_{M-1} / ((M-1) N)), so with N = 1000 a tolerance
// of 0.01 is about ten times the typical deviation.
constexpr double kSameDistributionTolerance = 0.01;

TEST(Rhat, ChainsOfOneDistributionGiveOne) {
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const torch::Tensor chains = normal_chains(/*m=*/4, /*n=*/1000, seed);
    EXPECT_NEAR(rhat(chains), 1.0, kSameDistributionTolerance) << "seed " << seed;
    EXPECT_NEAR(split_rhat(chains), 1.0, kSameDistributionTolerance) << "seed " << seed;
  }
}

TEST(Rhat, ShiftedChainsExceedTheAlarmLevel) {
  // One chain of four moved by one standard deviation: var+ / W -> 1 + 1/4,
  // R-hat -> sqrt(1.25) = 1.118.
  torch::Tensor chains = normal_chains(/*m=*/4, /*n=*/1000, /*seed=*/1);
  chains[3] += 1.0;
  EXPECT_GT(rhat(chains), 1.1);
  EXPECT_NEAR(rhat(chains), std::sqrt(1.25), 0.02);
  // Split R-hat dilutes one shifted chain among 8 halves (var+ / W -> 1 + 3/14
  // for a shift of 1); by two standard deviations both are far above 1.1.
  chains[3] += 1.0;
  EXPECT_GT(rhat(chains), 1.3);
  EXPECT_GT(split_rhat(chains), 1.3);
}

TEST(Rhat, OnlyTheSplitFormSeesDriftWithinChains) {
  // Every chain drifts the same way: their means agree, their halves do not.
  const torch::Tensor drift = torch::linspace(-2.0, 2.0, 1000, torch::kDouble);
  const torch::Tensor chains = normal_chains(/*m=*/4, /*n=*/1000, /*seed=*/2) + drift;
  EXPECT_LT(rhat(chains), 1.01);
  EXPECT_GT(split_rhat(chains), 1.1);
}

TEST(Rhat, HandCheckedCase) {
  // Means 2.5 and 4.5, s^2 = 5/3 each: W = 5/3, B = 4 * (1 + 1) = 8,
  // var+ = 3/4 * 5/3 + 8/4 = 3.25, R-hat = sqrt(3.25 / (5/3)) = sqrt(1.95).
  const torch::Tensor chains = torch::tensor({1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0, 6.0}).reshape({2, 4});
  EXPECT_NEAR(rhat(chains), std::sqrt(1.95), 1e-12);
  // Halves [1,2] [3,4] [3,4] [5,6]: s^2 = 1/2, W = 1/2, means 1.5 3.5 3.5 5.5
  // around 3.5, B / N = (4 + 0 + 0 + 4) / 3, var+ = 1/2 * 1/2 + 8/3.
  EXPECT_NEAR(split_rhat(chains), std::sqrt((0.25 + 8.0 / 3.0) / 0.5), 1e-12);
}

TEST(Rhat, OddLengthDropsTheMiddleDraw) {
  const torch::Tensor odd = torch::tensor({1.0, 2.0, 100.0, 3.0, 4.0}).reshape({1, 5});
  const torch::Tensor even = torch::tensor({1.0, 2.0, 3.0, 4.0}).reshape({1, 4});
  EXPECT_DOUBLE_EQ(split_rhat(odd), split_rhat(even));
}

// ESS of AR(1) chains against N M (1 - phi) / (1 + phi). The estimate of the
// integrated autocorrelation time tau over a window of K lags has relative
// standard deviation about sqrt(2 (2K + 1) / (M N)) (Sokal 1997); with
// M N = 80000 and windows of up to ~60 lags (phi = 0.9) that is at most 4%, so a
// 15% tolerance is over three standard deviations.
constexpr double kEssRelativeTolerance = 0.15;

TEST(RhatByEpoch, UsesTheDrawsFromBurnInToEachEpoch) {
  const torch::Tensor chains = normal_chains(3, 12, 11);
  const auto curve = rhat_by_epoch(chains, /*burn_in=*/2);
  ASSERT_EQ(curve.size(), 9u);  // epochs 4 .. 12
  EXPECT_EQ(curve.front().epoch, 4);
  EXPECT_EQ(curve.front().draws, 2);
  EXPECT_TRUE(std::isnan(curve.front().split_rhat));  // split R-hat needs 4 draws
  EXPECT_DOUBLE_EQ(curve.front().rhat, rhat(chains.slice(1, 2, 4)));
  EXPECT_DOUBLE_EQ(curve[2].split_rhat, split_rhat(chains.slice(1, 2, 6)));
  EXPECT_DOUBLE_EQ(curve.back().rhat, rhat(chains.slice(1, 2, 12)));
  EXPECT_TRUE(rhat_by_epoch(chains, /*burn_in=*/11).empty());
  // One chain: only the split form is defined.
  const auto single = rhat_by_epoch(chains.slice(0, 0, 1), /*burn_in=*/0);
  EXPECT_TRUE(std::isnan(single.back().rhat));
  EXPECT_DOUBLE_EQ(single.back().split_rhat, split_rhat(chains.slice(0, 0, 1)));
  // Constant chains have no R-hat: NaN, not an error.
  const auto constant = rhat_by_epoch(torch::ones({2, 6}, torch::kDouble), /*burn_in=*/0);
  EXPECT_TRUE(std::isnan(constant.back().rhat));
  EXPECT_TRUE(std::isnan(constant.back().split_rhat));
}

TEST(EffectiveSampleSize, Ar1MatchesItsClosedForm) {
  const int64_t m = 4, n = 20000;
  for (const double phi : {0.0, 0.5, 0.9}) {
    const double expected = static_cast<double>(m * n) * (1.0 - phi) / (1.0 + phi);
    for (uint64_t seed = 10; seed < 13; ++seed) {
      const double ess = effective_sample_size(ar1_chains(m, n, phi, seed));
      EXPECT_NEAR(ess / expected, 1.0, kEssRelativeTolerance) << "phi " << phi << " seed " << seed;
    }
  }
}

TEST(EffectiveSampleSize, SingleChainWorks) {
  const double phi = 0.5;
  const int64_t n = 50000;
  const double ess = effective_sample_size(ar1_chains(/*m=*/1, n, phi, /*seed=*/20));
  EXPECT_NEAR(ess / (static_cast<double>(n) / 3.0), 1.0, kEssRelativeTolerance);
}

TEST(EffectiveSampleSize, ShiftedChainsLoseSamples) {
  // Disagreeing chains inflate var+, and with it every rho_t: fewer effective draws.
  torch::Tensor chains = ar1_chains(/*m=*/4, /*n=*/5000, /*phi=*/0.5, /*seed=*/30);
  const double before = effective_sample_size(chains);
  chains[0] += 3.0;
  EXPECT_LT(effective_sample_size(chains), 0.5 * before);
}

// Two chains of eight, checked with exact fractions: W = 983/112, var+ = 21/2;
// rho_t = 1 - (W - mean_j acov_j(t)) / var+ with acov over N (not N - t);
// Geyer's pair sums Gamma_0..3 = 70753/75264, 5237/75264, 14187/25088,
// 15653/75264, made monotone (Gamma_2 and Gamma_3 are capped at Gamma_1):
// tau = -1 + 2 (Gamma_0 + 3 Gamma_1) = 109/84, ESS = 16 / tau = 1344/109.
// Acov over N - t gives 19.27 (tau at its floor 1/log10(16)); pair sums not
// made monotone give 6.23.
TEST(EffectiveSampleSize, HandCheckedShortChains) {
  const torch::Tensor chains =
      torch::tensor({8.0, 3.0, 2.0, 0.0, 8.0, 1.0, 3.0, 0.0, 7.0, 8.0, 3.0, 4.0, 6.0, 9.0, 1.0, 6.0}, torch::kDouble)
          .reshape({2, 8});
  EXPECT_NEAR(effective_sample_size(chains), 1344.0 / 109.0, 1e-12);
}

TEST(Diagnostics, BadInputIsRefused) {
  using testing::error_of;
  EXPECT_NE(error_of([] { rhat(torch::zeros({4})); }).find("must be 2-D"), std::string::npos);
  EXPECT_NE(error_of([] { rhat(torch::randn({1, 10})); }).find("needs at least 2 chains"), std::string::npos);
  EXPECT_NE(error_of([] { split_rhat(torch::randn({2, 3})); }).find("needs at least 1 chains of 4 draws"),
            std::string::npos);
  EXPECT_NE(error_of([] { rhat(torch::ones({2, 10})); }).find("every chain is constant"), std::string::npos);
  EXPECT_NE(error_of([] {
              torch::Tensor c = torch::randn({2, 10});
              c[1][3] = std::nan("");
              effective_sample_size(c);
            }).find("chain 1 draw 3 is nan"),
            std::string::npos);
  EXPECT_NE(error_of([] { rhat(torch::ones({2, 10}, torch::kLong)); }).find("floating dtype"), std::string::npos);
}

}  // namespace
}  // namespace bnn::evaluation
