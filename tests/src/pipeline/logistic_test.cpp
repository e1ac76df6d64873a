// Section 3.4's Bayesian multinomial logistic regression: the logistic model,
// the MAP point by L-BFGS, the map.* config keys and the "map" method of the
// evaluator. `bnn coupled-bias` is tested in tests/src/experiments/.
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
#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/map_estimate.h"
#include "src/pipeline/model_oracle.h"
#include "tests/support/data_paths.h"
#include "tests/support/logistic_slice.h"
#include "tests/support/run_bnn.h"

namespace bnn {
namespace {

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
const std::filesystem::path kWork = testing::slice_work_dir("bnn_logistic_test");
const std::string kConfig = testing::kLogisticConfig;
const std::string kSlice = testing::kLogisticSlice;

testing::CommandResult bnn_cli(const std::string& args) { return testing::run_logged(kWork, args); }

TEST(LogisticEndToEnd, MapThenSamplingScoresMapAndBayes) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
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

}  // namespace
}  // namespace bnn
