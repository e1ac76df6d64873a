// Out-of-distribution detection (src/evaluation/ood.h) against
// scripts/make_ood_golden.py's plain numpy definitions, including ties.
#include "src/evaluation/ood.h"

#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/golden_json.h"

namespace bnn::evaluation {
namespace {

torch::Tensor vec(const nlohmann::json& j) { return torch::tensor(j.get<std::vector<double>>(), torch::kDouble); }

const nlohmann::json& golden() {
  static const nlohmann::json g = bnn::testing::load_golden("ood_golden.json");
  return g;
}

TEST(OodDetection, MatchesNumpyOnEveryCaseIncludingTies) {
  for (const auto& [name, c] : golden().at("detection").items()) {
    const DetectionMetrics m = detection_metrics(vec(c.at("in")), vec(c.at("out")));
    EXPECT_NEAR(m.auroc, c.at("auroc").get<double>(), 1e-12) << name;
    EXPECT_NEAR(m.aupr, c.at("aupr").get<double>(), 1e-12) << name;
    EXPECT_NEAR(m.fpr95, c.at("fpr95").get<double>(), 1e-12) << name;
  }
}

TEST(OodDetection, KnownAnswers) {
  // One value for everything: chance.
  const auto tied = detection_metrics(torch::full({4}, 0.3, torch::kDouble), torch::full({6}, 0.3, torch::kDouble));
  EXPECT_DOUBLE_EQ(tied.auroc, 0.5);
  EXPECT_DOUBLE_EQ(tied.aupr, 0.6);  // the OOD fraction
  EXPECT_DOUBLE_EQ(tied.fpr95, 1.0);
  // Separated: perfect.
  const auto perfect = detection_metrics(torch::tensor({0.0, 0.1, 0.2}, torch::kDouble),
                                         torch::tensor({1.0, 2.0}, torch::kDouble));
  EXPECT_DOUBLE_EQ(perfect.auroc, 1.0);
  EXPECT_DOUBLE_EQ(perfect.aupr, 1.0);
  EXPECT_DOUBLE_EQ(perfect.fpr95, 0.0);
  // in {0, 1}, out {1, 2}: pairs (1>0, 1=1, 2>0, 2>1) = 3.5 / 4.
  const auto half =
      detection_metrics(torch::tensor({0.0, 1.0}, torch::kDouble), torch::tensor({1.0, 2.0}, torch::kDouble));
  EXPECT_DOUBLE_EQ(half.auroc, 0.875);
  // Thresholds 2 (P 1, R 1/2) and 1 (P 2/3, R 1): AP = 1/2 + 1/2 * 2/3.
  EXPECT_DOUBLE_EQ(half.aupr, 0.5 + 1.0 / 3.0);
  // 95 % of {0, 1} needs both: t = 1 accepts the OOD 1, FPR95 = 1/2.
  EXPECT_DOUBLE_EQ(half.fpr95, 0.5);
}

TEST(OodDetection, AurocIsTheAreaUnderRocCurve) {
  const auto& c = golden().at("detection").at("integer_ties");
  const auto curve = roc_curve(vec(c.at("in")), vec(c.at("out")));
  ASSERT_GE(curve.size(), 3u);
  EXPECT_EQ(curve.front(), (std::pair<double, double>{0.0, 0.0}));
  EXPECT_DOUBLE_EQ(curve.back().first, 1.0);
  EXPECT_DOUBLE_EQ(curve.back().second, 1.0);
  double area = 0;
  for (size_t i = 1; i < curve.size(); ++i) {
    area += (curve[i].first - curve[i - 1].first) * (curve[i].second + curve[i - 1].second) / 2;
    EXPECT_GE(curve[i].first, curve[i - 1].first);
    EXPECT_GE(curve[i].second, curve[i - 1].second);
  }
  EXPECT_NEAR(area, c.at("auroc").get<double>(), 1e-12);
}

TEST(OodDetection, BadScoresAreRefused) {
  EXPECT_THROW(detection_metrics(torch::empty({0}, torch::kDouble), torch::ones({2}, torch::kDouble)), c10::Error);
  EXPECT_THROW(detection_metrics(torch::ones({2}, torch::kDouble), torch::tensor({1.0, NAN}, torch::kDouble)),
               c10::Error);
}

// Members of the golden ensemble case as mixtures of their draws.
std::vector<MemberMixtures> members_of(const nlohmann::json& c) {
  std::vector<MemberMixtures> members;
  for (size_t m = 0; m < c.at("test").size(); ++m) {
    MemberMixtures x;
    x.draws = c.at("draws").get<int64_t>();
    for (const auto& draw : c.at("test").at(m)) x.test.add(bnn::testing::probs_from_json(draw));
    for (const auto& draw : c.at("ood").at(m)) x.ood.add(bnn::testing::probs_from_json(draw));
    members.push_back(std::move(x));
  }
  return members;
}

TEST(OodTable, MatchesNumpyForEnsemblesOfEverySize) {
  for (const auto& [method, c] : golden().at("ensembles").items()) {
    const auto rows = ood_table("digits", method, members_of(c));
    const auto& expected = c.at("rows");
    ASSERT_EQ(rows.size(), expected.size()) << method;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& e = expected.at(i);
      SCOPED_TRACE(method + " size " + std::to_string(rows[i].size) + " " + rows[i].score);
      EXPECT_EQ(rows[i].set, "digits");
      EXPECT_EQ(rows[i].method, method);
      EXPECT_EQ(rows[i].size, e.at("size").get<int64_t>());
      EXPECT_EQ(rows[i].groups, e.at("groups").get<int64_t>());
      EXPECT_EQ(rows[i].score, e.at("score").get<std::string>());
      for (const auto& [metric, summary] : {std::pair{"auroc", &rows[i].auroc}, std::pair{"aupr", &rows[i].aupr},
                                            std::pair{"fpr95", &rows[i].fpr95}}) {
        EXPECT_NEAR(summary->mean, e.at(metric).at("mean").get<double>(), 1e-12) << metric;
        if (const double std = testing::golden_std(e.at(metric)); std::isnan(std)) {
          EXPECT_TRUE(std::isnan(summary->std)) << metric;
        } else {
          EXPECT_NEAR(summary->std, std, 1e-12) << metric;
        }
        const auto values = e.at(metric).at("values").get<std::vector<double>>();  // each group's, in order
        ASSERT_EQ(summary->values.size(), values.size()) << metric;
        for (size_t g = 0; g < values.size(); ++g) EXPECT_NEAR(summary->values[g], values[g], 1e-12) << metric << g;
      }
    }
  }
}

TEST(OodTable, SingleNetworksHaveNoMutualInformation) {
  const auto rows = ood_table("x", "adam", members_of(golden().at("ensembles").at("point")));
  for (const OodRow& r : rows) {
    if (r.size == 1) {
      EXPECT_NE(r.score, "mutual_information");
    }
  }
  const auto csv = ood_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "set,method,size,groups,score,auroc_mean,auroc_std,aupr_mean,aupr_std,fpr95_mean,fpr95_std");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(rows.size()) + 1);
  const auto json = to_json(rows);
  ASSERT_EQ(json.size(), rows.size());
  EXPECT_EQ(json[0].at("score"), "entropy");
  EXPECT_DOUBLE_EQ(json[0].at("auroc").at("mean").get<double>(), rows[0].auroc.mean);
  for (size_t i = 0; i < rows.size(); ++i) {  // each group's own value, as in the ensembles' rows
    EXPECT_EQ(json[i].at("fpr95").at("values").get<std::vector<double>>(), rows[i].fpr95.values);
    EXPECT_EQ(rows[i].fpr95.values.size(), static_cast<size_t>(rows[i].groups));
  }
  const std::string table = ood_text_table(rows);
  EXPECT_NE(table.find("OOD set x"), std::string::npos);
  EXPECT_NE(table.find("mi -"), std::string::npos) << table;  // size 1: no mutual information
  const std::string md = ood_markdown(rows, "x");
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'), static_cast<long>(rows.size()) + 2);
  // The last size is one group: no spread, in every format.
  const OodRow& one = rows.back();
  ASSERT_EQ(one.groups, 1);
  EXPECT_TRUE(json.back().at("auroc").at("std").is_null());
  EXPECT_NE(csv.find(fmt::format(",{:.17g},,{:.17g},,{:.17g},\n", one.auroc.mean, one.aupr.mean, one.fpr95.mean)),
            std::string::npos)
      << csv;
  EXPECT_EQ(csv.find("nan"), std::string::npos) << csv;
  EXPECT_NE(md.find(fmt::format("| {:.4f} ± - | {:.4f} ± - | {:.4f} ± - |", one.auroc.mean, one.aupr.mean,
                                one.fpr95.mean)),
            std::string::npos)
      << md;
}

}  // namespace
}  // namespace bnn::evaluation
