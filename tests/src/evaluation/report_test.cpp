// Tests for src/evaluation/report.h's sampling diagnostics: an ESS at its
// lower bound on tau is marked, with the bound's value.
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

}  // namespace
}  // namespace bnn::evaluation
