// Student's t tail probabilities and the paired t-test, for the report's
// paired margins (ensemble.h, paired_margin). The same definitions as
// scripts/student_t.py, which compare_metrics.py and paper_comparison.py
// use, so that a margin's p-value in report.md is the one those scripts
// give for the same groups.
#pragma once

#include <optional>
#include <vector>

namespace bnn::evaluation {

// I_x(a, b), the regularized incomplete beta function, for a, b > 0: 0 at
// x <= 0, 1 at x >= 1; between, the continued fraction of the incomplete
// beta (modified Lentz), on whichever side of (a + 1) / (a + b + 2) it
// converges fast, to about 1e-15 relative.
double incomplete_beta(double a, double b, double x);

// P(|T| >= |t|) for Student's t with df > 0 degrees of freedom:
// I_{df / (df + t^2)}(df / 2, 1 / 2).
double t_two_sided(double t, double df);

// The two-sided p-value that paired differences have mean 0: Student's t on
// their mean over its standard error (their standard deviation, ddof 1,
// over sqrt(n)) with n - 1 degrees of freedom; none for fewer than two.
// Where the differences are equal up to rounding (standard deviation at most
// 1e-9 of `scale`, the size of the values they were taken from), t means
// nothing (a metric in steps, such as an accuracy in steps of one test
// image, can shift every group alike), and the test is the exact sign test:
// 1 when they are all 0 (within the same tolerance), else 2 / 2^n.
std::optional<double> paired_p_value(const std::vector<double>& differences, double scale);

}  // namespace bnn::evaluation
