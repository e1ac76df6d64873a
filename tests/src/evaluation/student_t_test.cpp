// Student's t tails against closed forms and table values, and the paired
// test's fallback to the sign test (src/evaluation/student_t.h).
#include "src/evaluation/student_t.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/error_text.h"

namespace bnn::evaluation {
namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(StudentT, IncompleteBetaIdentities) {
  for (const double x : {0.05, 0.3, 0.5, 0.77, 0.99}) {
    EXPECT_NEAR(incomplete_beta(1, 1, x), x, 1e-14) << x;                             // uniform
    EXPECT_NEAR(incomplete_beta(3.5, 1, x), std::pow(x, 3.5), 1e-14) << x;            // I_x(a, 1) = x^a
    EXPECT_NEAR(incomplete_beta(1, 2.5, x), 1 - std::pow(1 - x, 2.5), 1e-14) << x;    // I_x(1, b)
    EXPECT_NEAR(incomplete_beta(2, 7, x), 1 - incomplete_beta(7, 2, 1 - x), 1e-14) << x;  // symmetry
  }
  EXPECT_EQ(incomplete_beta(2, 3, 0.0), 0.0);
  EXPECT_EQ(incomplete_beta(2, 3, 1.0), 1.0);
  EXPECT_EQ(incomplete_beta(2, 3, -0.5), 0.0);
  const std::string error = bnn::testing::error_of([] { (void)incomplete_beta(0, 3, 0.5); });
  EXPECT_NE(error.find("incomplete_beta: a and b must be positive, got 0 and 3"), std::string::npos) << error;
}

TEST(StudentT, TailsAgainstClosedFormsAndTables) {
  for (const double t : {0.0, 0.5, 2.0, 9.0, 40.0}) {
    // df = 1 is the Cauchy distribution; df = 2, 3 and 4 have closed forms too.
    EXPECT_NEAR(t_two_sided(t, 1), 1 - 2 * std::atan(t) / kPi, 1e-14) << t;
    EXPECT_NEAR(t_two_sided(t, 2), 1 - t / std::sqrt(2 + t * t), 1e-14) << t;
    const double three = 1 - 2 / kPi * (t / (std::sqrt(3.0) * (1 + t * t / 3)) + std::atan(t / std::sqrt(3.0)));
    EXPECT_NEAR(t_two_sided(t, 3), three, 1e-14) << t;
    const double four = 1 - 0.75 * t / std::sqrt(1 + t * t / 4) * (1 - t * t / (12 * (1 + t * t / 4)));
    EXPECT_NEAR(t_two_sided(t, 4), four, 1e-14) << t;
    EXPECT_EQ(t_two_sided(-t, 3), t_two_sided(t, 3)) << t;
  }
  // Two-sided critical values from the t table, and the normal limit.
  EXPECT_NEAR(t_two_sided(2.228138852, 10), 0.05, 1e-9);
  EXPECT_NEAR(t_two_sided(5.840909309, 3), 0.01, 1e-9);
  EXPECT_NEAR(t_two_sided(2.042272456, 30), 0.05, 1e-9);
  EXPECT_NEAR(t_two_sided(3.0, 1e9), std::erfc(3 / std::sqrt(2.0)), 1e-8);
  EXPECT_EQ(t_two_sided(0.0, 7), 1.0);
}

TEST(StudentT, PairedTestAndItsSignTest) {
  // Differences 1, 2, 3, 6: mean 3, standard deviation (ddof 1) sqrt(14 / 3), t = 3 / (sqrt(14 / 3) / 2).
  EXPECT_NEAR(*paired_p_value({1, 2, 3, 6}, 12), t_two_sided(3 / (std::sqrt(14.0 / 3) / 2), 3), 1e-15);
  // The same shift in every group: the exact sign test, 2 / 2^n, however many groups; none at all: 1.
  EXPECT_EQ(*paired_p_value({0.5, 0.5}, 1), 0.5);
  EXPECT_EQ(*paired_p_value(std::vector<double>(16, -1.0), 2), 2.0 / 65536);
  EXPECT_EQ(*paired_p_value({0.0, 0.0, 0.0}, 1), 1.0);
  // One test image in 10,000 more in each of four groups: differences equal up to the rounding of the
  // accuracies (~1e-16), which must not pass for a spread (t would be ~1e12).
  const double shifted[] = {0.9013, 0.9021, 0.9005, 0.9030};
  std::vector<double> differences;
  for (const double a : shifted) differences.push_back(a - (a - 1e-4));
  EXPECT_EQ(*paired_p_value(differences, 0.9030), 0.125);
  // A spread above 1e-9 of the values' size is t's again: p ~ 1e-20, not the sign test's 0.125.
  EXPECT_LT(*paired_p_value({0.5, 0.5 + 1e-8, 0.5 - 1e-8, 0.5}, 1.0), 1e-15);
  EXPECT_FALSE(paired_p_value({0.3}, 1).has_value());
  EXPECT_FALSE(paired_p_value({}, 1).has_value());
}

}  // namespace
}  // namespace bnn::evaluation
