// Stationary moments of SMS-UBU and SGHMC on a Gaussian target split into
// minibatches (tests/samplers/quadratic_oracle.h), with prior, localization,
// both gradient estimators, and the bounce.
//
// Tolerances: 10,000 chains per group and 200 snapshots give standard errors
// below 0.2% on the mean and 0.5% on the variance; the bounds below (1.5-4%)
// are set by the discretisation bias of each integrator at the step used, so
// a wrong factor (e.g. N_m or N_b in the gradient scale, a missing prior or
// localization term) moves a moment by far more than the bound.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "samplers/fused_step.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/registry.h"
#include "tests/samplers/quadratic_oracle.h"
#include "tests/support/error_text.h"

namespace bnn::samplers {
namespace {

constexpr int64_t kGaussianChains = 20000;  // first half carries the prior, second half does not
constexpr double kGaussianAnchor = 0.3;

struct Moments {
  double mean_prior, var_prior, mean_free, var_free;
};

testing::QuadraticOracle make_gaussian_oracle(torch::Device device = torch::kCPU, torch::ScalarType dtype = torch::kDouble) {
  torch::Tensor mask = torch::zeros({kGaussianChains}, torch::kDouble);
  mask.narrow(0, 0, kGaussianChains / 2).fill_(1.0);
  return testing::QuadraticOracle(kGaussianChains, {1.0, 2.0, 0.5, 1.5}, {-1.0, 0.5, 2.0, 0.0}, mask, kGaussianAnchor, device,
                                  dtype);
}

Moments run_chains(const std::string& name, const LangevinOptions& options, int64_t burn_in, int64_t steps,
                   int64_t every, testing::QuadraticOracle& oracle, uint64_t seed = 1,
                   std::string* fused_path = nullptr) {
  auto sampler = make_sampler(name, oracle, torch::full_like(oracle.parameters(), kGaussianAnchor), options, seed);
  if (fused_path != nullptr) {
    const auto* kinetic = dynamic_cast<const KineticLangevin*>(sampler.get());
    *fused_path = kinetic == nullptr         ? "not a kinetic Langevin sampler"
                  : kinetic->fused_steps() ? kinetic->fused_path()
                                           : "tensor operations (fused steps turned off)";
  }
  for (int64_t i = 0; i < burn_in; ++i) sampler->step();
  torch::Tensor sum = torch::zeros_like(oracle.parameters()), sq = torch::zeros_like(oracle.parameters());
  int64_t n = 0;
  for (int64_t i = 1; i <= steps; ++i) {
    sampler->step();
    if (i % every == 0) {
      const torch::Tensor x = oracle.parameters();
      sum += x;
      sq += x * x;
      ++n;
    }
  }
  const torch::Tensor mean = sum / n, second = sq / n;
  auto half = [&](const torch::Tensor& t, int64_t start) {
    return t.narrow(0, start, kGaussianChains / 2).mean().item<double>();
  };
  const double m1 = half(mean, 0), m2 = half(mean, kGaussianChains / 2);
  return {m1, half(second, 0) - m1 * m1, m2, half(second, kGaussianChains / 2) - m2 * m2};
}

// The exact target for given lambda and rho.
Moments exact(const testing::QuadraticOracle& oracle, double lambda, double rho) {
  const double loc = std::isfinite(rho) ? 1.0 / (rho * rho) : 0.0;
  const double p_prior = oracle.precision_sum() + lambda + loc, p_free = oracle.precision_sum() + loc;
  const double b = oracle.weighted_mean_sum() + kGaussianAnchor * loc;
  return {b / p_prior, 1.0 / p_prior, b / p_free, 1.0 / p_free};
}

void expect_moments(const Moments& got, const Moments& want, double mean_tol, double var_rel_tol) {
  EXPECT_NEAR(got.mean_prior, want.mean_prior, mean_tol);
  EXPECT_NEAR(got.mean_free, want.mean_free, mean_tol);
  EXPECT_NEAR(got.var_prior / want.var_prior, 1.0, var_rel_tol) << got.var_prior << " vs " << want.var_prior;
  EXPECT_NEAR(got.var_free / want.var_free, 1.0, var_rel_tol) << got.var_free << " vs " << want.var_free;
}

TEST(SmsUbuGaussian, StationaryMomentsPlainGradient) {
  auto oracle = make_gaussian_oracle();
  const auto options = LangevinOptions(0.05).friction(2.0).rho(1.0).prior_precision(1.0);
  const Moments got = run_chains("sms_ubu", options, 2000, 4000, 20, oracle);
  expect_moments(got, exact(oracle, 1.0, 1.0), 0.01, 0.03);
}

TEST(SmsUbuGaussian, StationaryMomentsControlVariateStoredAndRecomputed) {
  for (auto mode : {AnchorGradients::kStored, AnchorGradients::kRecomputed}) {
    auto oracle = make_gaussian_oracle();
    const auto options = LangevinOptions(0.05).friction(2.0).rho(0.5).prior_precision(2.0).estimator(
        GradientEstimator::kControlVariate).anchor_gradients(mode);
    const Moments got = run_chains("sms_ubu", options, 2000, 4000, 20, oracle);
    expect_moments(got, exact(oracle, 2.0, 0.5), 0.01, 0.03);
  }
}

TEST(SmsUbuGaussian, StoredAndRecomputedAnchorsGiveTheSameChain) {
  auto run = [](AnchorGradients mode) {
    auto oracle = make_gaussian_oracle();
    const auto options = LangevinOptions(0.05).friction(2.0).rho(0.5).estimator(GradientEstimator::kControlVariate)
                             .anchor_gradients(mode);
    run_chains("sms_ubu", options, 0, 50, 50, oracle, /*seed=*/9);
    return oracle.parameters().clone();
  };
  EXPECT_TRUE(torch::allclose(run(AnchorGradients::kStored), run(AnchorGradients::kRecomputed), 1e-12, 1e-12));
}

TEST(SmsUbuGaussian, TemperatureScalesTheVariance) {
  auto oracle = make_gaussian_oracle();
  const auto options = LangevinOptions(0.05).friction(2.0).rho(1.0).temperature(2.0);
  const Moments got = run_chains("sms_ubu", options, 2000, 4000, 20, oracle);
  Moments want = exact(oracle, 1.0, 1.0);
  want.var_prior *= 2.0;
  want.var_free *= 2.0;
  expect_moments(got, want, 0.015, 0.04);
}

TEST(SmsUbuGaussian, BouncesKeepEveryChainInTheBox) {
  auto oracle = make_gaussian_oracle();
  const double w = 0.2;
  const auto options = LangevinOptions(0.05).friction(2.0).rho(0.1).rho_max(w);
  auto sampler = make_sampler("sms_ubu", oracle, torch::full({kGaussianChains}, kGaussianAnchor, torch::kDouble), options, 3);
  for (int i = 0; i < 300; ++i) {
    sampler->step();
    ASSERT_LE((oracle.parameters() - kGaussianAnchor).abs().max().item<double>(), w + 1e-12);
  }
}

TEST(SghmcGaussian, StationaryMomentsLocalized) {
  auto oracle = make_gaussian_oracle();
  const auto options = LangevinOptions(0.005).friction(2.0).rho(1.0).estimator(GradientEstimator::kControlVariate);
  const Moments got = run_chains("sghmc", options, 10000, 20000, 100, oracle);
  expect_moments(got, exact(oracle, 1.0, 1.0), 0.01, 0.04);
}

TEST(SghmcGaussian, StationaryMomentsGlobal) {
  auto oracle = make_gaussian_oracle();
  const auto options = LangevinOptions(0.005).friction(2.0);
  const Moments got = run_chains("sghmc", options, 10000, 20000, 100, oracle);
  expect_moments(got, exact(oracle, 1.0, std::numeric_limits<double>::infinity()), 0.015, 0.06);
}

// The same targets with the chains' parameters, velocities, noise and
// accumulators on a GPU (the noise comes from CUDA's Philox generator, so the
// chains differ from the CPU ones; the moments must not). Skips, visibly,
// where no CUDA device is visible.
TEST(CudaSamplers, StationaryMomentsOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible: the GPU sampler test did not run";
  const torch::Device cuda(torch::kCUDA, 0);
  {
    auto oracle = make_gaussian_oracle(cuda);
    const auto options = LangevinOptions(0.05).friction(2.0).rho(0.5).prior_precision(2.0).estimator(
        GradientEstimator::kControlVariate);
    const Moments got = run_chains("sms_ubu", options, 2000, 4000, 20, oracle);
    ASSERT_TRUE(oracle.parameters().is_cuda());
    expect_moments(got, exact(oracle, 2.0, 0.5), 0.01, 0.03);
  }
  {  // float32: bnn's CUDA kernels (Note [Buffered passes]) where built, else the tensor operations
    auto oracle = make_gaussian_oracle(cuda, torch::kFloat);
    const auto options = LangevinOptions(0.05).friction(2.0).rho(0.5).prior_precision(2.0).estimator(
        GradientEstimator::kControlVariate);
    std::string path;
    const Moments got = run_chains("sms_ubu", options, 2000, 4000, 20, oracle, 1, &path);
    expect_moments(got, exact(oracle, 2.0, 0.5), 0.01, 0.03);
    if (cuda_kernels_built()) {  // else the premise is gone
      EXPECT_EQ(path, "buffered passes on cuda:0");
    }
  }
  {
    auto oracle = make_gaussian_oracle(cuda);
    const auto options = LangevinOptions(0.005).friction(2.0).rho(1.0).estimator(GradientEstimator::kControlVariate);
    const Moments got = run_chains("sghmc", options, 10000, 20000, 100, oracle);
    expect_moments(got, exact(oracle, 1.0, 1.0), 0.01, 0.04);
  }
  {  // the bounce, on the device
    auto oracle = make_gaussian_oracle(cuda);
    const auto options = LangevinOptions(0.05).friction(2.0).rho(0.1).rho_max(0.2);
    auto sampler = make_sampler("sms_ubu", oracle, torch::full_like(oracle.parameters(), kGaussianAnchor), options, 3);
    for (int i = 0; i < 100; ++i) sampler->step();
    EXPECT_LE((oracle.parameters() - kGaussianAnchor).abs().max().item<double>(), 0.2 + 1e-12);
  }
}

TEST(Samplers, SameSeedSameChainDifferentSeedDifferentChain) {
  auto run = [](const std::string& name, uint64_t seed) {
    auto oracle = make_gaussian_oracle();
    auto options = LangevinOptions(0.05).friction(2.0).rho(0.3).rho_max(0.5);
    if (name == "csghmc") options.cycle_length(10);
    run_chains(name, options, 0, 30, 30, oracle, seed);
    return oracle.parameters().clone();
  };
  for (const auto& name : sampler_names()) {
    EXPECT_TRUE(run(name, 5).equal(run(name, 5))) << name;
    EXPECT_FALSE(run(name, 5).equal(run(name, 6))) << name;
  }
}

void expect_options_error(const LangevinOptions& options, const std::string& text) {
  testing::expect_error<c10::Error>([&] { options.validate(); }, text);
}

TEST(LangevinOptions, InvalidValuesAreNamed) {
  expect_options_error(LangevinOptions(0.0), "step_size h must be positive and finite, got 0");
  expect_options_error(LangevinOptions(-1e-3), "step_size h must be positive");
  expect_options_error(LangevinOptions(0.1).friction(0), "friction gamma must be positive");
  expect_options_error(LangevinOptions(0.1).rho(0.5).rho_max(0.1), "rho_max must be at least rho, got rho_max 0.1 < rho 0.5");
  expect_options_error(LangevinOptions(0.1).rho(-1), "localization rho must be positive");
  expect_options_error(LangevinOptions(0.1).prior_precision(-1), "prior precision lambda must be non-negative");
  expect_options_error(LangevinOptions(0.1).temperature(0), "temperature must be positive");
}

TEST(Samplers, UnknownNameListsValidNames) {
  auto oracle = make_gaussian_oracle();
  try {
    make_sampler("hmc", oracle, oracle.parameters().clone(), LangevinOptions(0.1), 1);
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown sampler 'hmc'; valid: sms_ubu, sg_ubu, ubu_rr, sms_baoab"),
              std::string::npos);
  }
}

TEST(Samplers, ControlVariateNeedsParametersAtTheAnchor) {
  auto oracle = make_gaussian_oracle();
  EXPECT_THROW(make_sampler("sms_ubu", oracle, torch::zeros({kGaussianChains}, torch::kDouble),
                            LangevinOptions(0.1).estimator(GradientEstimator::kControlVariate), 1),
               c10::Error);
}

}  // namespace
}  // namespace bnn::samplers
