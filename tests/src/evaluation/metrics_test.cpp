// Tests for src/evaluation/metrics.h: golden values from an independent numpy
// implementation (scripts/make_metric_golden.py), analytic cases and input checks.
#include "src/evaluation/metrics.h"
#include "tests/support/error_text.h"
#include "tests/support/golden_json.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace bnn::evaluation {
namespace {

using testing::labels_from_json;
using testing::probs_from_json;




// Agreement to 1e-12, relative for large values and absolute near zero: both sides
// evaluate the same sums in double, in slightly different orders.
void expect_close(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::max(1.0, std::abs(expected))) << what;
}

void expect_error_contains(const std::function<void()>& call, const std::string& substring) {
  testing::expect_error<c10::Error>(call, substring);
}

TEST(MetricsGolden, EachMetricMatchesNumpy) {
  const nlohmann::json golden = testing::load_metric_golden();
  ASSERT_FALSE(golden.at("cases").empty());
  for (const auto& c : golden.at("cases")) {
    const std::string name = c.at("name");
    const torch::Tensor p = probs_from_json(c.at("probs"));
    const torch::Tensor y = labels_from_json(c.at("labels"));
    const auto& e = c.at("expected");
    expect_close(accuracy(p, y), e.at("accuracy"), name + " accuracy");
    expect_close(nll(p, y), e.at("nll"), name + " nll");
    expect_close(ace(p, y), e.at("ace"), name + " ace");
    expect_close(rps(p, y), e.at("rps"), name + " rps");
    expect_close(ece(p, y), e.at("ece"), name + " ece");
    expect_close(brier(p, y), e.at("brier"), name + " brier");
    expect_close(predictive_entropy(p), e.at("entropy"), name + " entropy");
  }
}

TEST(MetricsGolden, ComputeMetricsMatchesNumpy) {
  const nlohmann::json golden = testing::load_metric_golden();
  for (const auto& c : golden.at("cases")) {
    const std::string name = c.at("name");
    const Metrics m =
        compute_metrics(probs_from_json(c.at("probs")), labels_from_json(c.at("labels")));
    const auto& e = c.at("expected");
    expect_close(m.accuracy, e.at("accuracy"), name + " accuracy");
    expect_close(m.nll, e.at("nll"), name + " nll");
    expect_close(m.ace, e.at("ace"), name + " ace");
    expect_close(m.rps, e.at("rps"), name + " rps");
    expect_close(m.ece, e.at("ece"), name + " ece");
    expect_close(m.brier, e.at("brier"), name + " brier");
    expect_close(m.entropy, e.at("entropy"), name + " entropy");
  }
}

// Float32 probabilities are widened to double before any arithmetic, so they score
// exactly like their double copy.
TEST(Metrics, Float32InputScoresLikeItsDoubleCopy) {
  const nlohmann::json golden = testing::load_metric_golden();
  const auto& c = golden.at("cases").at(0);
  const torch::Tensor p32 = probs_from_json(c.at("probs")).to(torch::kFloat);
  const torch::Tensor y = labels_from_json(c.at("labels"));
  const Metrics a = compute_metrics(p32, y);
  const Metrics b = compute_metrics(p32.to(torch::kDouble), y.to(torch::kInt));
  EXPECT_EQ(a.accuracy, b.accuracy);
  EXPECT_EQ(a.nll, b.nll);
  EXPECT_EQ(a.ace, b.ace);
  EXPECT_EQ(a.rps, b.rps);
  EXPECT_EQ(a.ece, b.ece);
  EXPECT_EQ(a.brier, b.brier);
  EXPECT_EQ(a.entropy, b.entropy);
}

TEST(Metrics, PerfectOneHotPredictionsScoreZeroError) {
  const torch::Tensor y = torch::tensor({0, 2, 1, 1, 3, 0, 2}, torch::kLong);
  const torch::Tensor p = torch::one_hot(y, /*num_classes=*/4).to(torch::kDouble);
  const Metrics m = compute_metrics(p, y);
  EXPECT_EQ(m.accuracy, 1.0);
  EXPECT_EQ(m.nll, 0.0);
  EXPECT_EQ(m.ace, 0.0);
  EXPECT_EQ(m.rps, 0.0);
  EXPECT_EQ(m.ece, 0.0);
  EXPECT_EQ(m.brier, 0.0);
  EXPECT_EQ(m.entropy, 0.0);
}

TEST(Metrics, UniformPredictionsHaveKnownScores) {
  const int64_t k = 5;
  const torch::Tensor y = torch::tensor({0, 1, 2, 3, 4, 4}, torch::kLong);
  const torch::Tensor p = torch::full({6, k}, 1.0 / k, torch::kDouble);
  EXPECT_NEAR(nll(p, y), std::log(5.0), 1e-15);
  EXPECT_NEAR(predictive_entropy(p), std::log(5.0), 1e-15);
  EXPECT_NEAR(brier(p, y), 1.0 - 1.0 / k, 1e-15);
  // argmax ties go to class 0, which is the label of one example in six.
  EXPECT_NEAR(accuracy(p, y), 1.0 / 6.0, 1e-15);
}

TEST(Metrics, NllIsClampedAtOneHundred) {
  const torch::Tensor p = torch::tensor({{0.0, 1.0}, {1e-60, 1.0 - 1e-60}}, torch::kDouble);
  const torch::Tensor y = torch::tensor({0, 0}, torch::kLong);
  EXPECT_EQ(nll(p, y), 100.0);
}

TEST(Metrics, RejectsMismatchedNumberOfLabels) {
  const torch::Tensor p = torch::full({4, 3}, 1.0 / 3.0);
  const torch::Tensor y = torch::zeros({5}, torch::kLong);
  expect_error_contains([&] { compute_metrics(p, y); },
                        "probs has shape [4, 3], labels has shape [5]");
  expect_error_contains([&] { nll(p, y); }, "labels must be 1-D");
}

TEST(Metrics, RejectsLabelOutOfRange) {
  const torch::Tensor p = torch::full({3, 3}, 1.0 / 3.0);
  expect_error_contains([&] { accuracy(p, torch::tensor({0, 3, 1}, torch::kLong)); },
                        "labels[1] = 3 is out of range [0, 3)");
  expect_error_contains([&] { rps(p, torch::tensor({0, 1, -1}, torch::kLong)); },
                        "labels[2] = -1 is out of range");
}

TEST(Metrics, RejectsBadProbabilityShapesAndValues) {
  const torch::Tensor y = torch::zeros({2}, torch::kLong);
  expect_error_contains([&] { ace(torch::full({2, 3, 1}, 0.5), y); }, "probs must be 2-D");
  expect_error_contains([&] { ece(torch::ones({2, 1}), y); }, "K >= 2");
  expect_error_contains([&] { brier(torch::zeros({2, 2}, torch::kLong), y); }, "floating dtype");
  expect_error_contains([&] { brier(torch::tensor({{0.5, 0.5}, {-0.5, 1.5}}), y); },
                        "probs[1][0] = -0.5 is not a probability");
  expect_error_contains(
      [&] { predictive_entropy(torch::tensor({{0.5, std::nan("")}, {0.5, 0.5}})); },
      "probs[0][1] = nan");
  expect_error_contains([&] { accuracy(torch::full({2, 2}, 0.5), torch::zeros({2})); },
                        "integer dtype");
}

TEST(Metrics, RejectsNonPositiveBinCounts) {
  const torch::Tensor p = torch::full({2, 2}, 0.5);
  const torch::Tensor y = torch::zeros({2}, torch::kLong);
  expect_error_contains([&] { ace(p, y, /*bins=*/0); }, "at least 1, got 0");
  expect_error_contains([&] { ece(p, y, /*bins=*/-3); }, "at least 1, got -3");
}

}  // namespace
}  // namespace bnn::evaluation
