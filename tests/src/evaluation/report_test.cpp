// Tests for src/evaluation/report.h's sampling diagnostics: an ESS at its
// lower bound on tau is marked, with the bound's value; an R-hat across
// members not computed says why.
#include "src/evaluation/report.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace bnn::evaluation {
namespace {

LossTrace sampling_trace(const std::string& member, const std::vector<double>& losses) {
  LossTrace t;
  t.member = member;
  t.phase = {"adam", "swa"};
  t.loss = {2.0, 1.0};
  for (double l : losses) {
    t.phase.push_back("sample");
    t.loss.push_back(l);
  }
  return t;
}

TEST(SamplingDiagnostics, AnEssAtItsBoundIsMarked) {
  // Alternating losses: antithetic, tau at its bound, ESS = 6 log10(6) = 4.67 < 6 draws.
  const LossTrace alternating = sampling_trace("member_000", {0.5, 0.4, 0.5, 0.4, 0.5, 0.4});
  // A slow drift: positively correlated, ESS well below the draws and not at the bound.
  std::vector<double> drift;
  for (int i = 0; i < 40; ++i) drift.push_back(0.5 + 0.1 * std::sin(i / 6.0) + 0.001 * (i % 3));
  const LossTrace drifting = sampling_trace("member_001", drift);
  const std::string bounded = diagnostics_section({alternating, drifting}, /*burn_in=*/0);
  EXPECT_NE(bounded.find(fmt::format("| member_000 | 6 | ")), std::string::npos) << bounded;
  EXPECT_NE(bounded.find(fmt::format("| {:.1f} (bound) |", 6 * std::log10(6.0))), std::string::npos) << bounded;
  EXPECT_NE(bounded.find("(bound): the chain shows no positive autocorrelation to estimate"), std::string::npos)
      << bounded;
  const std::string line = bounded.substr(bounded.find("| member_001 |"));
  EXPECT_EQ(line.substr(0, line.find('\n')).find("(bound)"), std::string::npos) << line;
  // Without a bounded row, no note.
  EXPECT_EQ(diagnostics_section({drifting}, 0).find("(bound)"), std::string::npos);
}

// Where R-hat across members cannot be computed, the report says what it
// lacks: members, epochs after the burn-in, or the same epochs in every
// member; where it can, the curve starts after the burn-in.
TEST(RhatAcrossMembers, SaysWhatItLacks) {
  const LossTrace eight = sampling_trace("member_000", {0.5, 0.4, 0.5, 0.4, 0.5, 0.4, 0.5, 0.4});
  EXPECT_EQ(rhat_across_members({eight}, 0).why_not,
            "Not computed: R-hat across members needs at least 2 members (1 here).");
  const MembersRhat short_of_epochs = rhat_across_members({eight, eight, eight, eight}, /*burn_in=*/5);
  EXPECT_TRUE(short_of_epochs.curve.empty());
  EXPECT_EQ(short_of_epochs.why_not,
            fmt::format("Not computed: R-hat across members needs at least {} sampling epochs after the burn-in of "
                        "5 epoch(s) (3 here).",
                        kMinDiagnosticDraws));
  const LossTrace six = sampling_trace("member_001", {0.5, 0.4, 0.5, 0.4, 0.5, 0.4});
  EXPECT_EQ(rhat_across_members({eight, six}, 0).why_not,
            "Not computed: R-hat across members needs the same sampling epochs in every member (here from 6 to 8).");
  const MembersRhat computed = rhat_across_members({eight, eight}, /*burn_in=*/2);
  EXPECT_TRUE(computed.why_not.empty());
  ASSERT_FALSE(computed.curve.empty());
  EXPECT_EQ(computed.curve.back().epoch, 8);
  EXPECT_EQ(computed.curve.back().draws, 6);
}

// What the report says of the Bayesian ensemble's samples and of a
// one-member ensemble: a run that stored no sample probabilities averaged
// its samples all the same (bayes_probs.npy), so "0 stored samples in all"
// would mislead; one member is not "1 members".
TEST(Report, SaysWhatItAveragedInWords) {
  ReportInputs in;
  UncertaintySummary bayes;
  bayes.per_class_accuracy = {1.0, 0.5};
  bayes.confusion = {{2, 0}, {1, 1}};
  in.methods = {"bayes"};
  in.summaries["bayes"] = bayes;
  in.members = {"member_000"};
  in.traces = {sampling_trace("member_000", {0.5, 0.4, 0.5, 0.4})};
  in.run_burn_in = 1;
  in.samples = 0;
  in.draws_are_samples = false;
  const std::string none = render_report(in);
  EXPECT_NE(none.find("samples after the run's burn-in of 1 epoch(s); their probabilities not stored "
                      "(evaluation.save_sample_probs false), so the uncertainty below is over members)"),
            std::string::npos)
      << none;
  EXPECT_NE(none.find("## Uncertainty of the full ensemble (1 member)\n"), std::string::npos) << none;
  in.members.push_back("member_001");
  in.traces.push_back(sampling_trace("member_001", {0.5, 0.4, 0.5, 0.4}));
  in.samples = 6;
  in.draws_are_samples = true;
  const std::string some = render_report(in);
  EXPECT_NE(some.find("epoch(s); 6 stored samples in all)"), std::string::npos) << some;
  EXPECT_NE(some.find("## Uncertainty of the full ensemble (2 members)\n"), std::string::npos) << some;
}

}  // namespace
}  // namespace bnn::evaluation
