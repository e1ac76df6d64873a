// Section 3.4's Bayesian multinomial logistic regression: the logistic model,
// the MAP point by L-BFGS, the map.* config keys, the "map" method of the
// evaluator, and `bnn coupled-bias` (appendix D.1) with its noise coupling.
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/registry.h"
#include "samplers/ubu.h"
#include "src/config/config.h"
#include "src/experiments/coupled_bias.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/map_estimate.h"
#include "src/pipeline/model_oracle.h"
#include "tests/samplers/quadratic_oracle.h"
#include "tests/support/run_bnn.h"

namespace bnn {
namespace {

using experiments::CouplingRule;

TEST(Logistic, IsTheSoftmaxRegressionWith7850Parameters) {
  const auto model = models::make_model(models::default_spec("logistic"), 0);
  EXPECT_EQ(models::count_parameters(*model), 784 * 10 + 10);
  models::FlatParameters flat(*model);
  EXPECT_EQ(flat.prior_mask().sum().item<double>(), 7840.0);  // weights only by default
  flat.include_biases_in_prior();
  EXPECT_EQ(flat.prior_mask().sum().item<double>(), 7850.0);
}

// The MAP of a strictly convex potential: L-BFGS reaches the tolerance, and
// the point beats random perturbations of it; the potential's gradient there
// is ~0 when recomputed independently of find_map (autograd on all examples).
TEST(Logistic, LbfgsFindsTheMapPoint) {
  torch::manual_seed(3);
  data_loaders::Split train;
  train.images = torch::randn({400, 1, 28, 28});
  train.labels = torch::randint(10, {400}, torch::kLong);
  const data_loaders::Partition partition(train, 50, 1);
  auto model = models::make_model(models::default_spec("logistic"), 2);
  models::FlatParameters flat(*model);
  flat.include_biases_in_prior();
  pipeline::ModelOracle oracle(*model, flat, partition);
  config::MapConfig options{"lbfgs", 500, 1e-5, 20};
  const double lambda = 50.0;
  const auto r = pipeline::find_map(oracle, model->parameters(), partition.num_examples(), lambda, options);
  EXPECT_TRUE(r.converged) << r.max_gradient;
  EXPECT_LE(r.max_gradient, 1e-5);

  const data_loaders::Split all = partition.first_batches(partition.num_batches());
  auto potential = [&] {
    const torch::Tensor ce = torch::nn::functional::cross_entropy(
        model->forward(all.images), all.labels,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    torch::Tensor prior = torch::zeros({});
    for (const auto& p : model->parameters()) prior = prior + p.pow(2).sum();  // every parameter, biases too
    return (ce + 0.5 * lambda * prior) / static_cast<double>(partition.num_examples());
  };
  flat.zero_grad();
  const torch::Tensor f = potential();
  f.backward();
  EXPECT_NEAR(f.item<double>(), r.objective, 1e-5);
  EXPECT_LT(flat.grads().abs().max().item<double>(), 2e-5);
  const torch::Tensor x_star = flat.values().clone();
  torch::NoGradGuard no_grad;
  for (int k = 0; k < 5; ++k) {
    flat.values().copy_(x_star + 1e-2 * torch::randn_like(x_star));
    EXPECT_GT(potential().item<double>(), r.objective);
  }
}

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

TEST(MapConfig, LbfgsReplacesAdamAndSwa) {
  try {
    config::load_config("", {"map.optimizer=lbfgs"});
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("set adam.epochs and swa.epochs to 0 (they are 15 and 5)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(config::load_config("", {"map.optimizer=lbfgs", "adam.epochs=0", "swa.epochs=0"}));
  try {
    config::load_config("", {"adam.epochs=0"});
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'adam.epochs': invalid value '0': must be at least 1"), std::string::npos)
        << e.what();
  }
}

// The command line, on a slice of the real Fashion-MNIST.
const std::filesystem::path kFmnist = "/usr/share/datasets/fashion-mnist";
const std::filesystem::path kWork =
    std::filesystem::temp_directory_path() /
    ("bnn_logistic_test_" + std::to_string(std::hash<std::string>{}(BNN_SOURCE_DIR) % 1000000007));
const std::string kConfig = std::string(BNN_SOURCE_DIR) + "/configs/logistic_fmnist.yaml";
const std::string kSlice = " --set data.train_limit=2000 --set data.test_limit=300 --threads 1";

testing::CommandResult bnn_cli(const std::string& args) {
  std::filesystem::create_directories(kWork);
  static int calls = 0;
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return testing::run_bnn(args, kWork / (test + "_" + std::to_string(++calls) + ".txt"));
}

TEST(LogisticEndToEnd, MapThenSamplingScoresMapAndBayes) {
  if (!std::filesystem::exists(kFmnist)) GTEST_SKIP() << "Fashion-MNIST not installed at " << kFmnist;
  const auto out = kWork / "run";
  std::filesystem::remove_all(out);
  const auto r = bnn_cli("run --config " + kConfig + kSlice + " --set sampler.epochs=4 --set sampler.burn_in=1 --out " +
                         out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("MAP after"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out / "member_000" / "map_weights.npy"));
  EXPECT_FALSE(std::filesystem::exists(out / "member_000" / "swa_probs.npy"));
  const auto metrics = nlohmann::json::parse(io::read_file(out / "metrics.json"));
  std::set<std::string> methods;
  for (const auto& row : metrics["ensembles"]) {
    methods.insert(row["method"].get<std::string>());
    EXPECT_GT(row["accuracy"]["mean"].get<double>(), 0.6) << row;  // 10 classes: chance is 0.1
  }
  EXPECT_EQ(methods, (std::set<std::string>{"map", "bayes"}));
  EXPECT_NE(io::read_file(out / "report.md").find("| map |"), std::string::npos);
}

TEST(LogisticEndToEnd, CoupledBiasWritesOneRowPerSamplerAndLevel) {
  if (!std::filesystem::exists(kFmnist)) GTEST_SKIP() << "Fashion-MNIST not installed at " << kFmnist;
  const auto csv = kWork / "coupled.csv";
  std::filesystem::remove(csv);
  const auto r = bnn_cli("coupled-bias --config " + kConfig + kSlice +
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
  const auto bad = bnn_cli("coupled-bias --config " + kConfig + " --samplers nogin");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("sampler 'nogin' has no synchronous coupling"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace bnn
