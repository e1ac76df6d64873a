// Tests for src/evaluation/ensemble.h: golden ensemble rows from
// scripts/make_metric_golden.py, group bookkeeping, and the JSON / CSV / table output.
#include "src/evaluation/ensemble.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "src/evaluation/metrics.h"
#include "tests/support/golden_json.h"
#include "tests/support/synthetic_labels.h"

namespace bnn::evaluation {
namespace {

using testing::labels_from_json;
using testing::probs_from_json;
using testing::synthetic_labels;

const char* const kMetricNames[] = {"accuracy", "nll", "ace", "rps", "ece", "brier", "entropy"};

nlohmann::json load_golden_ensemble() {
  return testing::load_metric_golden().at("ensemble");
}


// Deterministic, distinct members without a random generator: softmax of a
// member-dependent smooth pattern.
std::vector<torch::Tensor> synthetic_members(int64_t members, int64_t n, int64_t k) {
  std::vector<torch::Tensor> out;
  const torch::Tensor grid = torch::arange(n * k, torch::kDouble).reshape({n, k});
  for (int64_t m = 0; m < members; ++m) {
    out.push_back(torch::softmax(torch::sin(grid * (0.37 + 0.11 * m)) * 3.0, /*dim=*/1));
  }
  return out;
}


const Summary& summary_of(const EnsembleRow& row, const std::string& name) {
  if (name == "accuracy") return row.accuracy;
  if (name == "nll") return row.nll;
  if (name == "ace") return row.ace;
  if (name == "rps") return row.rps;
  if (name == "ece") return row.ece;
  if (name == "brier") return row.brier;
  return row.entropy;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

TEST(EnsembleGolden, RowsMatchNumpy) {
  const nlohmann::json golden = load_golden_ensemble();
  std::vector<torch::Tensor> members;
  for (const auto& m : golden.at("members")) members.push_back(probs_from_json(m));
  const torch::Tensor labels =
      torch::tensor(golden.at("labels").get<std::vector<int64_t>>(), torch::kLong);

  const std::vector<EnsembleRow> rows = ensemble_table(golden.at("method"), members, labels);
  const auto& expected = golden.at("rows");
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& e = expected.at(r);
    EXPECT_EQ(rows[r].method, e.at("method").get<std::string>());
    EXPECT_EQ(rows[r].size, e.at("size").get<int64_t>());
    EXPECT_EQ(rows[r].groups, e.at("groups").get<int64_t>());
    for (const std::string name : kMetricNames) {
      const Summary& s = summary_of(rows[r], name);
      const double mean = e.at(name).at("mean");
      const double std = testing::golden_std(e.at(name));
      const std::string where = "size " + std::to_string(rows[r].size) + " " + name;
      EXPECT_NEAR(s.mean, mean, 1e-12 * std::max(1.0, std::abs(mean))) << where;
      if (std::isnan(std)) {
        EXPECT_TRUE(std::isnan(s.std)) << where << ": " << s.std;
      } else {
        EXPECT_NEAR(s.std, std, 1e-12 * std::max(1.0, std::abs(std))) << where;
      }
      // Each group's own value, in group order: group g is members [g size, (g + 1) size).
      const auto values = e.at(name).at("values").get<std::vector<double>>();
      ASSERT_EQ(s.values.size(), values.size()) << where;
      ASSERT_EQ(values.size(), static_cast<size_t>(rows[r].groups)) << where;
      for (size_t g = 0; g < values.size(); ++g) {
        EXPECT_NEAR(s.values[g], values[g], 1e-12 * std::max(1.0, std::abs(values[g]))) << where << " group " << g;
      }
    }
  }
}

// Top-1 agreement and total variation against reference probabilities, on
// quarters and eighths where argmax ties are common (ties to the lowest index,
// as numpy's argmax); the CSV, JSON and table carry them.
TEST(EnsembleGolden, ReferenceAgreementMatchesNumpy) {
  const nlohmann::json golden = testing::load_metric_golden().at("reference");
  std::vector<torch::Tensor> members;
  for (const auto& m : golden.at("members")) members.push_back(probs_from_json(m));
  const torch::Tensor labels = torch::tensor(golden.at("labels").get<std::vector<int64_t>>(), torch::kLong);
  const torch::Tensor reference = probs_from_json(golden.at("reference"));
  const std::vector<EnsembleRow> rows = ensemble_table("bayes", members, labels, reference);
  const auto& expected = golden.at("rows");
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& e = expected.at(r);
    EXPECT_TRUE(rows[r].has_reference);
    EXPECT_EQ(rows[r].groups, e.at("groups").get<int64_t>());
    for (const auto& [name, s] : {std::pair<std::string, Summary>{"agreement", rows[r].agreement},
                                  std::pair<std::string, Summary>{"total_variation", rows[r].total_variation}}) {
      const double mean = e.at(name).at("mean");
      const double std = testing::golden_std(e.at(name));
      EXPECT_NEAR(s.mean, mean, 1e-12) << "size " << rows[r].size << " " << name;
      if (std::isnan(std)) {
        EXPECT_TRUE(std::isnan(s.std)) << "size " << rows[r].size << " " << name;
      } else {
        EXPECT_NEAR(s.std, std, 1e-12) << "size " << rows[r].size << " " << name;
      }
      const auto values = e.at(name).at("values").get<std::vector<double>>();
      ASSERT_EQ(s.values.size(), values.size()) << "size " << rows[r].size << " " << name;
      for (size_t g = 0; g < values.size(); ++g) EXPECT_NEAR(s.values[g], values[g], 1e-12) << name << " group " << g;
    }
  }
  // A member against itself: agreement 1, total variation 0.
  const auto self = ensemble_table("adam", {members[0]}, labels, members[0]);
  EXPECT_EQ(self[0].agreement.mean, 1.0);
  EXPECT_EQ(self[0].total_variation.mean, 0.0);

  const std::string csv = to_csv(rows);
  EXPECT_NE(
      csv.substr(0, csv.find('\n')).find(",agreement_mean,agreement_std,total_variation_mean,total_variation_std"),
      std::string::npos)
      << csv;
  EXPECT_EQ(to_json(rows).at("ensembles").at(0).at("agreement").at("mean").get<double>(), rows[0].agreement.mean);
  EXPECT_NE(to_table(rows).find("agree "), std::string::npos);
  EXPECT_NE(to_markdown(rows).find("| agreement | total_variation |"), std::string::npos) << to_markdown(rows);
  // Without a reference none of it appears.
  const auto plain = ensemble_table("bayes", members, labels);
  EXPECT_FALSE(plain[0].has_reference);
  EXPECT_EQ(to_csv(plain).find("agreement"), std::string::npos);
  EXPECT_FALSE(to_json(plain).at("ensembles").at(0).contains("agreement"));
  EXPECT_THROW(ensemble_table("bayes", members, labels, reference.narrow(0, 0, 10)), c10::Error);
}

TEST(Ensemble, SixMembersGiveSizesOneTwoFourAndSix) {
  const auto members = synthetic_members(/*members=*/6, /*n=*/40, /*k=*/3);
  const torch::Tensor labels = synthetic_labels(40, 3);
  const std::vector<EnsembleRow> rows = ensemble_table("adam", members, labels);

  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].size, 1);
  EXPECT_EQ(rows[0].groups, 6);
  EXPECT_EQ(rows[1].size, 2);
  EXPECT_EQ(rows[1].groups, 3);
  EXPECT_EQ(rows[2].size, 4);
  EXPECT_EQ(rows[2].groups, 1);
  for (const std::string name : kMetricNames) {
    EXPECT_TRUE(std::isnan(summary_of(rows[2], name).std)) << name << ": one group has no spread";
  }
  EXPECT_GT(rows[0].nll.std, 0.0);

  // Size 1 summarises the members themselves; size 4 scores members 0..3 averaged.
  double nll_sum = 0.0;
  for (const auto& m : members) nll_sum += nll(m, labels);
  EXPECT_NEAR(rows[0].nll.mean, nll_sum / 6.0, 1e-12);
  const torch::Tensor first_four = (members[0] + members[1] + members[2] + members[3]) / 4.0;
  EXPECT_NEAR(rows[2].ace.mean, ace(first_four, labels), 1e-12);
  // The whole ensemble, not a power of two, is a size of its own: one group of all six.
  EXPECT_EQ(rows[3].size, 6);
  EXPECT_EQ(rows[3].groups, 1);
  const torch::Tensor all_six = (first_four * 4.0 + members[4] + members[5]) / 6.0;
  EXPECT_NEAR(rows[3].nll.mean, nll(all_six, labels), 1e-12);
  EXPECT_TRUE(std::isnan(rows[3].nll.std));
  EXPECT_EQ(ensemble_sizes(1), std::vector<int64_t>({1}));
  EXPECT_EQ(ensemble_sizes(8), std::vector<int64_t>({1, 2, 4, 8}));
  EXPECT_EQ(ensemble_sizes(3), std::vector<int64_t>({1, 2, 3}));
}

// The spread across groups is the sample standard deviation (over n - 1), as
// the reference code's Tensor.std() reports it: 1, 2, 3, 6 have mean 3 and
// squares 4 + 1 + 0 + 9 = 14, so sqrt(14 / 3), not sqrt(14 / 4).
TEST(Ensemble, SpreadIsOverGroupsLessOne) {
  const Summary s = summarize({1.0, 2.0, 3.0, 6.0});
  EXPECT_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(14.0 / 3.0));
  EXPECT_EQ(s.values, (std::vector<double>{1.0, 2.0, 3.0, 6.0}));
  EXPECT_DOUBLE_EQ(summarize({0.5, 0.75}).std, std::sqrt(0.03125));
  EXPECT_TRUE(std::isnan(summarize({0.25}).std));
}

// One group: no spread, said as such in every format (null, an empty CSV
// field, "-"), not as a spread of 0.
TEST(Ensemble, SingleMemberGivesOneRowWithNoStd) {
  const auto members = synthetic_members(/*members=*/1, /*n=*/10, /*k=*/4);
  const std::vector<EnsembleRow> rows =
      ensemble_table("swa", members, synthetic_labels(10, 4));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].groups, 1);
  EXPECT_TRUE(std::isnan(rows[0].brier.std));
  const nlohmann::json j = to_json(rows);
  EXPECT_TRUE(j.at("ensembles").at(0).at("brier").at("std").is_null()) << j.dump();
  EXPECT_EQ(j.at("ensembles").at(0).at("brier").at("mean").get<double>(), rows[0].brier.mean);
  const std::vector<std::string> csv = split(to_csv(rows), '\n');
  EXPECT_NE(csv.at(1).find(fmt::format(",{:.17g},,", rows[0].accuracy.mean)), std::string::npos) << csv.at(1);
  EXPECT_EQ(csv.at(1).find("nan"), std::string::npos) << csv.at(1);
  EXPECT_NE(to_markdown(rows).find(fmt::format("| {:.4f} ± - |", rows[0].nll.mean)), std::string::npos)
      << to_markdown(rows);
  EXPECT_NE(to_table(rows).find(fmt::format("nll {:.4f}±- ", rows[0].nll.mean)), std::string::npos)
      << to_table(rows);
}

TEST(Ensemble, RejectsBadMembers) {
  const torch::Tensor labels = synthetic_labels(10, 4);
  auto members = synthetic_members(/*members=*/2, /*n=*/10, /*k=*/4);
  EXPECT_THROW(ensemble_table("bayes", {}, labels), c10::Error);
  EXPECT_THROW(ensemble_table("", members, labels), c10::Error);
  EXPECT_THROW(ensemble_table("a,b", members, labels), c10::Error);
  members.push_back(torch::full({9, 4}, 0.25, torch::kDouble));
  try {
    ensemble_table("bayes", members, labels);
    ADD_FAILURE() << "mismatched member shapes were accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("member 2 has probabilities of shape [9, 4]"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST(Ensemble, ToJsonHasOneEntryPerRowWithMeanStdAndGroupValues) {
  const auto rows = ensemble_table("bayes", synthetic_members(4, 12, 3), synthetic_labels(12, 3));
  const nlohmann::json j = to_json(rows);
  ASSERT_TRUE(j.contains("ensembles"));
  ASSERT_EQ(j.at("ensembles").size(), rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& entry = j.at("ensembles").at(r);
    EXPECT_EQ(entry.size(), 3u + std::size(kMetricNames));
    EXPECT_EQ(entry.at("method"), "bayes");
    EXPECT_EQ(entry.at("size").get<int64_t>(), rows[r].size);
    EXPECT_EQ(entry.at("groups").get<int64_t>(), rows[r].groups);
    for (const std::string name : kMetricNames) {
      ASSERT_TRUE(entry.contains(name)) << name;
      EXPECT_EQ(entry.at(name).size(), 3u) << name;
      EXPECT_EQ(entry.at(name).at("mean").get<double>(), summary_of(rows[r], name).mean);
      if (rows[r].groups == 1) {
        EXPECT_TRUE(entry.at(name).at("std").is_null()) << name;
      } else {
        EXPECT_EQ(entry.at(name).at("std").get<double>(), summary_of(rows[r], name).std);
      }
      // The groups' values round-trip exactly and give back the mean.
      const auto values = entry.at(name).at("values").get<std::vector<double>>();
      EXPECT_EQ(values, summary_of(rows[r], name).values) << name;
      ASSERT_EQ(values.size(), static_cast<size_t>(rows[r].groups)) << name;
      double sum = 0;
      for (const double v : values) sum += v;
      EXPECT_NEAR(sum / static_cast<double>(values.size()), summary_of(rows[r], name).mean, 1e-15) << name;
    }
  }
}

TEST(Ensemble, ToCsvHasHeaderAndRoundTrippingRows) {
  auto rows = ensemble_table("adam", synthetic_members(4, 12, 3), synthetic_labels(12, 3));
  const auto bayes = ensemble_table("bayes", synthetic_members(2, 12, 3), synthetic_labels(12, 3));
  rows.insert(rows.end(), bayes.begin(), bayes.end());

  const std::vector<std::string> lines = split(to_csv(rows), '\n');
  ASSERT_EQ(lines.size(), rows.size() + 1);
  EXPECT_EQ(lines[0],
            "method,size,groups,accuracy_mean,accuracy_std,nll_mean,nll_std,ace_mean,ace_std,"
            "rps_mean,rps_std,ece_mean,ece_std,brier_mean,brier_std,entropy_mean,entropy_std");
  for (size_t r = 0; r < rows.size(); ++r) {
    // A closing mark, so that an empty last field (one group's std) is a field.
    const std::vector<std::string> fields = split(lines[r + 1] + ",$", ',');
    ASSERT_EQ(fields.size(), 18u) << lines[r + 1];
    EXPECT_EQ(fields[0], rows[r].method);
    EXPECT_EQ(std::stoll(fields[1]), rows[r].size);
    EXPECT_EQ(std::stoll(fields[2]), rows[r].groups);
    // 17 significant digits: every double reads back exactly.
    EXPECT_EQ(std::stod(fields[5]), rows[r].nll.mean);
    if (rows[r].groups == 1) {
      EXPECT_EQ(fields[16], "") << "one group: no spread";
    } else {
      EXPECT_EQ(std::stod(fields[16]), rows[r].entropy.std);
    }
  }
}

TEST(Ensemble, ToTableGroupsRowsBySize) {
  auto rows = ensemble_table("adam", synthetic_members(2, 12, 3), synthetic_labels(12, 3));
  const auto bayes = ensemble_table("bayes", synthetic_members(2, 12, 3), synthetic_labels(12, 3));
  rows.insert(rows.end(), bayes.begin(), bayes.end());

  const std::string table = to_table(rows);
  const std::vector<std::string> lines = split(table, '\n');
  // size 1: adam, bayes; blank; size 2: adam, bayes.
  ASSERT_EQ(lines.size(), 5u) << table;
  EXPECT_EQ(lines[0].rfind("size 1 (2 groups)  adam ", 0), 0u) << table;
  EXPECT_EQ(lines[1].rfind("size 1 (2 groups)  bayes", 0), 0u) << table;
  EXPECT_TRUE(lines[2].empty()) << table;
  EXPECT_EQ(lines[3].rfind("size 2 (1 group)   adam ", 0), 0u) << table;
  EXPECT_EQ(lines[4].rfind("size 2 (1 group)   bayes", 0), 0u) << table;
  EXPECT_NE(lines[0].find(fmt::format("acc {:.4f}±{:.4f}", rows[0].accuracy.mean,
                                      rows[0].accuracy.std)),
            std::string::npos)
      << table;
  for (const char* label : {"nll ", "ace ", "rps ", "ece ", "brier ", "ent "}) {
    EXPECT_NE(lines[4].find(label), std::string::npos) << label;
  }
}

// Rows of `method` with every metric's groups at `values` (entropy left at 0).
EnsembleRow valued_row(const std::string& method, int64_t size, const std::vector<double>& values) {
  EnsembleRow row;
  row.method = method;
  row.size = size;
  row.groups = static_cast<int64_t>(values.size());
  for (Summary* s : {&row.accuracy, &row.nll, &row.ace, &row.rps, &row.ece, &row.brier}) *s = summarize(values);
  return row;
}

TEST(PairedMargin, MeanAndStandardErrorOfTheGroupDifferences) {
  // Differences 0.01 and 0.015: margin 0.0125, standard deviation (ddof 1) 0.0035355, error 0.0025.
  const Summary ours = summarize({0.91, 0.92}), theirs = summarize({0.90, 0.905});
  const PairedMargin higher = paired_margin(ours, theirs, /*higher_is_better=*/true);
  EXPECT_NEAR(higher.margin, 0.0125, 1e-15);
  ASSERT_TRUE(higher.error.has_value());
  EXPECT_NEAR(*higher.error, 0.0025, 1e-15);
  // t = 5 on one degree of freedom (the Cauchy distribution): p = 1 - 2 atan(5) / pi = 0.1257.
  ASSERT_TRUE(higher.p.has_value());
  EXPECT_NEAR(*higher.p, 1 - 2 * std::atan(5.0) / 3.14159265358979323846, 1e-12);
  // Lower is better: the same differences count against.
  const PairedMargin lower = paired_margin(ours, theirs, /*higher_is_better=*/false);
  EXPECT_NEAR(lower.margin, -0.0125, 1e-15);
  EXPECT_NEAR(*lower.error, 0.0025, 1e-15);
  EXPECT_NEAR(*lower.p, *higher.p, 1e-15);  // two-sided
  // The same shift in every group has no spread, however far apart the groups are; unpaired,
  // the groups' spread (0.05) would swamp it.
  const PairedMargin shift = paired_margin(summarize({0.8, 0.9, 1.0}), summarize({0.79, 0.89, 0.99}), true);
  EXPECT_NEAR(shift.margin, 0.01, 1e-12);
  EXPECT_NEAR(*shift.error, 0.0, 1e-12);
  // Its t would be as large as rounding makes it; the sign test's 2 / 2^3 is the p-value instead.
  EXPECT_EQ(*shift.p, 0.25);
  // One group: no error and no p-value.
  const PairedMargin one = paired_margin(summarize({0.5}), summarize({0.4}), true);
  EXPECT_FALSE(one.error.has_value());
  EXPECT_FALSE(one.p.has_value());
  // Other groups cannot be paired.
  try {
    (void)paired_margin(summarize({0.5, 0.6}), summarize({0.4}), true);
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("paired margin: the two rows hold 2 and 1 group values"), std::string::npos)
        << e.what();
  }
}

TEST(PairedMargin, MarkdownAgainstTheBetterPointEstimate) {
  // Size 1: the Bayesian groups 0.91, 0.92 against Adam's 0.90, 0.905 (mean 0.9025) and SWA's 0.89, 0.90
  // (0.895). Accuracy is measured against Adam, the higher; for the lower-is-better metrics the same numbers
  // make SWA the better one, and the Bayesian ensemble loses by (0.91 - 0.89 + 0.92 - 0.90) / 2 = 0.02 with
  // no spread. Size 2 has one group; size 4 has no point estimate.
  const std::vector<EnsembleRow> rows = {
      valued_row("adam", 1, {0.90, 0.905}), valued_row("swa", 1, {0.89, 0.90}), valued_row("bayes", 1, {0.91, 0.92}),
      valued_row("adam", 2, {0.95}),        valued_row("swa", 2, {0.96}),       valued_row("bayes", 2, {0.97}),
      valued_row("bayes", 4, {0.99}),
  };
  const std::string table = paired_margins_markdown(rows, "bayes", {"adam", "swa"});
  const std::vector<std::string> lines = split(table, '\n');
  ASSERT_EQ(lines.size(), 6u) << table;
  EXPECT_EQ(lines[0], "| size | groups | accuracy | nll | ace | rps | ece | brier |");
  // Accuracy: t = 5 on 1 degree of freedom, p = 0.13; the others differ alike in both groups, the sign
  // test's 2 / 2^2. None is below 0.01 / 6.
  EXPECT_EQ(lines[2], "| 1 | 2 | +0.0125 ± 0.0025 (adam, p 0.13) | -0.0200 ± 0.0000 (swa, p 0.5) | "
                      "-0.0200 ± 0.0000 (swa, p 0.5) | -0.0200 ± 0.0000 (swa, p 0.5) | -0.0200 ± 0.0000 (swa, p 0.5) | "
                      "-0.0200 ± 0.0000 (swa, p 0.5) |");
  EXPECT_EQ(lines[3], "| 2 | 1 | +0.0100 (swa) | -0.0200 (adam) | -0.0200 (adam) | -0.0200 (adam) | -0.0200 (adam) | "
                      "-0.0200 (adam) |");
  EXPECT_EQ(lines[4], "");
  EXPECT_EQ(lines[5], "Bold: p below 0.01 / 6 = 0.0017 (the margins tested, Bonferroni), a margin beyond the "
                      "groups' noise either way.");
  // Without a point estimate at any size there is nothing to compare.
  EXPECT_EQ(paired_margins_markdown({valued_row("bayes", 1, {0.9})}, "bayes", {"adam"}), "");
  // Sizes of one group only: margins, but nothing tested and no line about a bound.
  const std::string single =
      paired_margins_markdown({valued_row("adam", 2, {0.95}), valued_row("bayes", 2, {0.97})}, "bayes", {"adam"});
  EXPECT_EQ(split(single, '\n').size(), 3u) << single;
  EXPECT_EQ(single.find("Bold"), std::string::npos) << single;
}

TEST(PairedMargin, MarkdownMarksTheMarginsBeyondTheBound) {
  // Four groups, the Bayesian ensemble above Adam by 0.010, 0.011, 0.009, 0.010: t = 24.5 on 3 degrees of
  // freedom, p = 1.5e-4, below 0.01 / 6 (bold) but not below 0.0001 / 6. On the lower-is-better metrics the
  // same numbers are a loss, just as far beyond the bound: bold either way.
  const std::vector<EnsembleRow> rows = {valued_row("adam", 1, {0.80, 0.85, 0.90, 0.95}),
                                         valued_row("bayes", 1, {0.810, 0.861, 0.909, 0.960})};
  std::vector<std::string> lines = split(paired_margins_markdown(rows, "bayes", {"adam"}), '\n');
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[2], "| 1 | 4 | **+0.0100 ± 0.0004** (adam, p 0.00015) | **-0.0100 ± 0.0004** (adam, p 0.00015) | "
                      "**-0.0100 ± 0.0004** (adam, p 0.00015) | **-0.0100 ± 0.0004** (adam, p 0.00015) | "
                      "**-0.0100 ± 0.0004** (adam, p 0.00015) | **-0.0100 ± 0.0004** (adam, p 0.00015) |");
  // A method equal to the comparator group by group (the same members) is shown with p = 1 and not
  // counted: the bound stays 0.01 / 6 with it beside.
  std::vector<EnsembleRow> with_same = rows;
  with_same.push_back(valued_row("bayes", 2, {0.5, 0.6}));
  with_same.push_back(valued_row("adam", 2, {0.5, 0.6}));
  lines = split(paired_margins_markdown(with_same, "bayes", {"adam"}), '\n');
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[3].rfind("| 2 | 2 | +0.0000 ± 0.0000 (adam, p 1) |", 0), 0u) << lines[3];
  EXPECT_EQ(lines[5].rfind("Bold: p below 0.01 / 6 = 0.0017 ", 0), 0u) << lines[5];
  EXPECT_TRUE(paired_margin(with_same[2].accuracy, with_same[3].accuracy, true).same);
  EXPECT_FALSE(paired_margin(rows[1].accuracy, rows[0].accuracy, true).same);
  lines = split(paired_margins_markdown(rows, "bayes", {"adam"}, 0.0001), '\n');
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[2].rfind("| 1 | 4 | +0.0100 ± 0.0004 (adam, p 0.00015) |", 0), 0u) << lines[2];
  EXPECT_EQ(lines[4], "Bold: p below 0.0001 / 6 = 1.7e-05 (the margins tested, Bonferroni), a margin beyond the "
                      "groups' noise either way.");
}

}  // namespace
}  // namespace bnn::evaluation
