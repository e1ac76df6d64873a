#include "src/evaluation/student_t.h"

#include <algorithm>
#include <cmath>

#include <c10/util/Exception.h>

namespace bnn::evaluation {
namespace {

// The continued fraction of I_x(a, b) (without its front factor), by the
// modified Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  const auto guard = [](double v) { return std::abs(v) > kTiny ? v : kTiny; };
  double c = 1.0;
  double d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
  double h = d;
  for (int m = 1; m < 1000; ++m) {
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    double step = 1.0;
    for (const double numerator : {even, odd}) {
      d = 1.0 / guard(1.0 + numerator * d);
      c = guard(1.0 + numerator / c);
      step = c * d;
      h *= step;
    }
    if (std::abs(step - 1.0) < 1e-15) break;
  }
  return h;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  TORCH_CHECK(a > 0 && b > 0, "incomplete_beta: a and b must be positive, got ", a, " and ", b);
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
  return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

double t_two_sided(double t, double df) {
  TORCH_CHECK(df > 0, "t_two_sided: the degrees of freedom must be positive, got ", df);
  return incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
}

std::optional<double> paired_p_value(const std::vector<double>& differences, double scale) {
  const auto n = static_cast<double>(differences.size());
  if (differences.size() < 2) return std::nullopt;
  double mean = 0.0;
  for (const double d : differences) mean += d;
  mean /= n;
  double squares = 0.0;
  for (const double d : differences) squares += (d - mean) * (d - mean);
  const double deviation = std::sqrt(squares / (n - 1.0));
  const double tolerance = 1e-9 * scale;
  if (deviation <= tolerance) return std::abs(mean) <= tolerance ? 1.0 : std::min(1.0, 2.0 * std::pow(0.5, n));
  return t_two_sided(mean / (deviation / std::sqrt(n)), n - 1.0);
}

}  // namespace bnn::evaluation
