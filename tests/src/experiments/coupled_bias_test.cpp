// `bnn coupled-bias` (SMS-UBU paper, appendix D.1): the noise coupling of
// chains at h and h/2 (src/experiments/coupled_bias.h), and the command on a
// slice of the real Fashion-MNIST.
#include <cmath>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>

#include "samplers/registry.h"
#include "samplers/ubu.h"
#include "src/experiments/coupled_bias.h"
#include "src/io/atomic_file.h"
#include "tests/samplers/quadratic_oracle.h"
#include "tests/support/data_paths.h"
#include "tests/support/logistic_slice.h"
#include "tests/support/run_bnn.h"

namespace bnn {
namespace {

using experiments::CouplingRule;

// Draws the coupling builds are exactly N(0, 1): mean 0, variance 1, and for
// UBU the two components uncorrelated (d = 200000 draws: the standard error of
// a variance is 0.003, of a correlation 0.002; tolerances are 7 of those).
TEST(CoupledBias, CoupledDrawsAreStandardNormal) {
  torch::manual_seed(5);
  const int64_t d = 200000;
  for (const CouplingRule rule :
       {CouplingRule::kOrnsteinUhlenbeck, CouplingRule::kVelocityRefresh, CouplingRule::kBrownianSum}) {
    const bool ubu = rule == CouplingRule::kOrnsteinUhlenbeck;
    const std::vector<int64_t> shape = ubu ? std::vector<int64_t>{2, d} : std::vector<int64_t>{d};
    const torch::Tensor a = torch::randn(shape, torch::kDouble);
    const torch::Tensor b = torch::randn(shape, torch::kDouble);
    torch::Tensor out = torch::empty(shape, torch::kDouble);
    for (const double h : {1e-3, 0.3}) {
      experiments::couple_draws(rule, 2.0, h, a, b, out);
      const torch::Tensor rows = out.reshape({-1, d});
      for (int64_t i = 0; i < rows.size(0); ++i) {
        EXPECT_NEAR(rows[i].mean().item<double>(), 0.0, 0.016) << static_cast<int>(rule) << " h " << h;
        EXPECT_NEAR(rows[i].var().item<double>(), 1.0, 0.022) << static_cast<int>(rule) << " h " << h;
      }
      if (ubu) {
        EXPECT_NEAR((rows[0] * rows[1]).mean().item<double>(), 0.0, 0.016) << h;
      }
    }
  }
}

// With no force, UBU is exact (U(h/2) U(h/2) = U(h)), so coupled chains at h
// and h/2 must coincide at common times; BAOAB's velocity, which only the O
// steps move, must too. This pins down the composition formulas.
TEST(CoupledBias, ForceFreeCoupledChainsCoincide) {
  const double gamma = 1.5, h = 0.2;
  for (const std::string name : {"sms_ubu", "sms_baoab"}) {
    testing::QuadraticOracle coarse_oracle(64, {0.0, 0.0}, {0.0, 0.0}, torch::zeros({64}, torch::kDouble), 0.3);
    testing::QuadraticOracle fine_oracle(64, {0.0, 0.0}, {0.0, 0.0}, torch::zeros({64}, torch::kDouble), 0.3);
    const auto options = [&](double step) {
      return samplers::LangevinOptions(step).friction(gamma).rho(INFINITY).prior_precision(0.0).estimator(
          samplers::GradientEstimator::kPlain);
    };
    const torch::Tensor anchor = torch::zeros({64}, torch::kDouble);
    auto coarse = samplers::make_sampler(name, coarse_oracle, anchor, options(h), 9);
    auto fine = samplers::make_sampler(name, fine_oracle, anchor, options(h / 2), 9);
    const experiments::NoiseCoupling coupling(dynamic_cast<samplers::KineticLangevin&>(*coarse),
                                              dynamic_cast<samplers::KineticLangevin&>(*fine),
                                              experiments::coupling_rule(name), gamma, h, 4);
    for (int k = 0; k < 50; ++k) {
      fine->step();
      fine->step();
      coarse->step();
    }
    EXPECT_TRUE(torch::allclose(coarse->velocity(), fine->velocity(), 1e-9, 1e-9)) << name;
    if (name == "sms_ubu") {
      EXPECT_TRUE(torch::allclose(coarse_oracle.parameters(), fine_oracle.parameters(), 1e-9, 1e-9));
    }
    // They moved: the test is not comparing two chains stuck at their start.
    EXPECT_GT((coarse_oracle.parameters() - 0.3).abs().max().item<double>(), 0.5) << name;
  }
}

// A level's table entries from its chunk sums, by hand: sums [[0.2, -0.4, 0],
// [0.3, -0.3, 0.6]] of 2 and 3 samples (5 in all) give the mean difference
// [0.1, -0.14, 0.12], so mean |d| = 0.12; the chunks' means [0.1, -0.2, 0] and
// [0.1, -0.1, 0.2] have mean |.| 0.1 and 2/15, whose sample standard
// deviation (1/30)/sqrt(2) over sqrt(2) chunks is the standard error 1/60.
// (Over 2 x kept the mean would be 0.06; with std / chunks the error 0.0118.)
TEST(CoupledBias, LevelMeansAndTheirStandardErrorByHand) {
  const torch::Tensor sums = torch::tensor({0.2, -0.4, 0.0, 0.3, -0.3, 0.6}, torch::kDouble).reshape({2, 3});
  const auto [whole, per_chunk] = experiments::level_means(sums, {2, 3}, 5);
  EXPECT_TRUE(torch::allclose(whole, torch::tensor({0.1, -0.14, 0.12}, torch::kDouble), 0, 1e-15)) << whole;
  const torch::Tensor chunk_means = torch::tensor({0.1, -0.2, 0.0, 0.1, -0.1, 0.2}, torch::kDouble).reshape({2, 3});
  EXPECT_TRUE(torch::allclose(per_chunk, chunk_means, 0, 1e-15)) << per_chunk;
  const auto [value, se] = experiments::mean_abs(whole, per_chunk);
  EXPECT_NEAR(value, 0.12, 1e-15);
  EXPECT_NEAR(se, 1.0 / 60.0, 1e-15);
  EXPECT_TRUE(std::isnan(experiments::mean_abs(whole, per_chunk.slice(0, 0, 1)).second));
}

TEST(CoupledBias, SamplersWithoutACouplingAreRefusedByName) {
  try {
    experiments::coupling_rule("nogin");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sampler 'nogin' has no synchronous coupling"), std::string::npos)
        << e.what();
  }
  experiments::CoupledBiasOptions o;
  o.epochs = 4;
  o.chunks = 4;  // 4 epochs less the 20% burn-in keep 4 samples: fine
  EXPECT_NO_THROW(experiments::validate(o));
  o.epochs = 3;
  EXPECT_THROW(experiments::validate(o), std::invalid_argument);
}

// The command line, on a slice of the real Fashion-MNIST.
const std::filesystem::path kCoupledWork = testing::slice_work_dir("bnn_coupled_bias_test");
const std::string kCoupledConfig = testing::kLogisticConfig;
const std::string kCoupledSlice = testing::kLogisticSlice;

testing::CommandResult coupled_cli(const std::string& args) { return testing::run_logged(kCoupledWork, args); }

TEST(LogisticEndToEnd, CoupledBiasWritesOneRowPerSamplerAndLevel) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto csv = kCoupledWork / "coupled.csv";
  std::filesystem::remove(csv);
  const auto r = coupled_cli("coupled-bias --config " + kCoupledConfig + kCoupledSlice +
                         " --samplers sms_ubu,sghmc --levels 2 --epochs 4 --chunks 2 --out " + csv.string());
  ASSERT_EQ(r.code, 0) << r.output;
  std::istringstream in(io::read_file(csv));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "sampler,h,h_fine,epochs,samples,mean_abs_diff,mean_abs_diff_se,bias,bias_se");
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string c; std::getline(fields, c, ',');) cells.push_back(c);
    ASSERT_EQ(cells.size(), 9u) << line;
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::string> hs = {"0.002", "0.001"};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], i < 2 ? "sms_ubu" : "sghmc");
    EXPECT_EQ(rows[i][1], hs[i % 2]);
    EXPECT_EQ(rows[i][3], i % 2 == 0 ? "4" : "8");  // level l runs epochs 2^l
    const double diff = std::stod(rows[i][5]), bias = std::stod(rows[i][7]);
    EXPECT_TRUE(std::isfinite(diff) && diff > 0 && diff < 0.1) << line;
    EXPECT_TRUE(std::isfinite(bias) && bias > 0 && bias < 0.1) << line;
    // The finest level's bias is its own difference (a telescoping sum of one term).
    if (i % 2 == 1) {
      EXPECT_EQ(rows[i][5], rows[i][7]);
    }
  }
  const auto bad = coupled_cli("coupled-bias --config " + kCoupledConfig + " --samplers nogin");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("sampler 'nogin' has no synchronous coupling"), std::string::npos) << bad.output;
  // Note [Output files]: a file it did not write is refused before any work.
  io::write_file_atomically(kCoupledWork / "notes.csv", "mine\n");
  const auto refused = coupled_cli("coupled-bias --config " + kCoupledConfig + " --out " + (kCoupledWork / "notes.csv").string());
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.output.find("the file exists and is not an earlier output of bnn coupled-bias"), std::string::npos)
      << refused.output;
  EXPECT_EQ(io::read_file(kCoupledWork / "notes.csv"), "mine\n");
}

}  // namespace
}  // namespace bnn
