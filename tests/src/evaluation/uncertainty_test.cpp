// Tests for src/evaluation/uncertainty.h: the entropy decomposition on cases
// with known answers, class tables, weighting, JSON and input checks.
#include "src/evaluation/uncertainty.h"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/error_text.h"

namespace bnn::evaluation {
namespace {

TEST(Uncertainty, RowEntropyOfUniformAndOneHot) {
  const torch::Tensor p = torch::tensor({0.25, 0.25, 0.25, 0.25, 0.0, 1.0, 0.0, 0.0}).reshape({2, 4});
  const torch::Tensor h = row_entropy(p);
  EXPECT_NEAR(h[0].item<double>(), std::log(4.0), 1e-15);
  EXPECT_EQ(h[1].item<double>(), 0.0);
}

TEST(Uncertainty, DisagreeingConfidentDrawsAreAllEpistemic) {
  // Two one-hot draws on opposite classes: pbar uniform over 2 classes,
  // total entropy log 2, expected entropy 0, mutual information log 2.
  MixtureAccumulator mix;
  mix.add(torch::tensor({1.0, 0.0}).reshape({1, 2}));
  mix.add(torch::tensor({0.0, 1.0}).reshape({1, 2}));
  const auto s = summarize_uncertainty(mix, /*draws=*/2, torch::tensor({0}, torch::kLong));
  EXPECT_NEAR(s.predictive_entropy, std::log(2.0), 1e-15);
  EXPECT_EQ(s.expected_entropy, 0.0);
  EXPECT_NEAR(s.mutual_information, std::log(2.0), 1e-15);
}

TEST(Uncertainty, AgreeingDrawsHaveNoEpistemicPart) {
  const torch::Tensor p = torch::softmax(torch::randn({50, 5}, torch::kDouble), /*dim=*/1);
  MixtureAccumulator mix;
  for (int d = 0; d < 3; ++d) mix.add(p);
  const auto s = summarize_uncertainty(mix, /*draws=*/3, torch::zeros({50}, torch::kLong));
  EXPECT_NEAR(s.mutual_information, 0.0, 1e-14);
  EXPECT_NEAR(s.predictive_entropy, s.expected_entropy, 1e-14);
  EXPECT_NEAR(s.predictive_entropy, row_entropy(p).mean().item<double>(), 1e-14);
}

TEST(Uncertainty, NestedMixturesWeighMembersEqually) {
  // Member a has two samples, member b one; members weigh 1/2 each.
  const auto pair = [](double p) { return torch::tensor({p, 1.0 - p}, torch::kDouble).reshape({1, 2}); };
  const torch::Tensor a1 = pair(0.9), a2 = pair(0.7), b = pair(0.2);
  MixtureAccumulator member_a, all;
  member_a.add(a1);
  member_a.add(a2);
  all.add(member_a);
  all.add(b);
  const torch::Tensor expected_mean = ((a1 + a2) / 2 + b) / 2;
  EXPECT_TRUE(torch::allclose(all.mean(), expected_mean));
  const double expected_entropy =
      ((row_entropy(a1) + row_entropy(a2)) / 4 + row_entropy(b) / 2).item<double>();
  EXPECT_NEAR(all.expected_entropy().item<double>(), expected_entropy, 1e-15);
}

TEST(Uncertainty, ConfusionMatrixAndPerClassAccuracy) {
  // Predictions 0, 1, 1, 0 for labels 0, 1, 0, 0; class 2 has no examples.
  const torch::Tensor p =
      torch::tensor({0.8, 0.1, 0.1, 0.2, 0.7, 0.1, 0.3, 0.6, 0.1, 0.5, 0.4, 0.1}).reshape({4, 3});
  MixtureAccumulator mix;
  mix.add(p);
  const auto s = summarize_uncertainty(mix, /*draws=*/1, torch::tensor({0, 1, 0, 0}, torch::kLong));
  const std::vector<std::vector<int64_t>> confusion = {{2, 1, 0}, {0, 1, 0}, {0, 0, 0}};
  EXPECT_EQ(s.confusion, confusion);
  EXPECT_DOUBLE_EQ(s.per_class_accuracy[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.per_class_accuracy[1], 1.0);
  EXPECT_TRUE(std::isnan(s.per_class_accuracy[2]));
  EXPECT_DOUBLE_EQ(s.accuracy, 0.75);
  const nlohmann::json j = to_json(s);
  EXPECT_TRUE(j["per_class_accuracy"][2].is_null());
  EXPECT_EQ(j["confusion_matrix"][0][1], 1);
  EXPECT_EQ(j["draws"], 1);
}

TEST(Uncertainty, BadInputIsRefused) {
  using testing::error_of;
  MixtureAccumulator mix;
  EXPECT_NE(error_of([&] { mix.mean(); }).find("empty mixture"), std::string::npos);
  mix.add(torch::full({3, 2}, 0.5));
  EXPECT_NE(error_of([&] { mix.add(torch::full({4, 2}, 0.5)); }).find("share one shape"), std::string::npos);
  EXPECT_NE(error_of([&] { mix.add(torch::full({3, 2}, 0.5), 0.0); }).find("positive"), std::string::npos);
  EXPECT_NE(error_of([&] { summarize_uncertainty(mix, 1, torch::tensor({0, 1}, torch::kLong)); }).find("labels"),
            std::string::npos);
}

}  // namespace
}  // namespace bnn::evaluation
