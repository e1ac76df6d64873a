#include "samplers/ubu_constants.h"

#include <cmath>

#include <gtest/gtest.h>

namespace bnn::samplers {
namespace {

// Var Zx * gamma^2 in long double: the closed form where it is well
// conditioned, otherwise its Taylor series summed to convergence.
long double scaled_var_x(long double a) {
  if (a > 0.05L) return 2 * a - 3 + 4 * std::exp(-a) - std::exp(-2 * a);
  // 4 e^{-a} - e^{-2a} = sum_n (-a)^n (4 - 2^n)/n!; the n = 0, 1 terms cancel 2a - 3.
  long double sum = 0, term = 1;
  for (int n = 1; n < 40; ++n) {
    term *= -a / n;  // (-a)^n / n!
    if (n >= 2) sum += term * (4 - std::pow(2.0L, n));
  }
  return sum;
}

void expect_rel(double got, long double want, double tol) {
  EXPECT_NEAR(got / static_cast<double>(want), 1.0, tol) << "got " << got << " want " << static_cast<double>(want);
}

TEST(UbuConstants, MatchClosedFormsInHighPrecision) {
  for (double gamma : {0.5, 1.0, 7.0710678118654755}) {
    for (double t : {1e-7, 1e-5, 6.25e-5, 1e-3, 1.2e-2, 0.05, 0.3, 2.0}) {
      const UbuConstants k = ubu_constants(gamma, t);
      const long double g = gamma, a = gamma * t;
      expect_rel(k.decay, std::exp(-a), 1e-14);
      expect_rel(k.x_from_v, -std::expm1(-a) / g, 1e-14);
      expect_rel(k.var_v, -std::expm1(-2 * a), 1e-14);
      expect_rel(k.cov_xv, std::expm1(-a) * std::expm1(-a) / g, 1e-14);
      expect_rel(k.var_x, scaled_var_x(a) / (g * g), 1e-11);
    }
  }
}

TEST(UbuConstants, NoiseFactorsReproduceTheCovariance) {
  for (double t : {1e-6, 1e-3, 0.1, 1.0}) {
    const UbuConstants k = ubu_constants(/*gamma=*/2.0, t);
    EXPECT_NEAR(k.x_noise * k.x_noise / k.var_x, 1.0, 1e-13);
    EXPECT_NEAR(k.x_noise * k.v_from_xi1 / k.cov_xv, 1.0, 1e-13);
    const double var_v = k.v_from_xi1 * k.v_from_xi1 + k.v_noise * k.v_noise;
    EXPECT_NEAR(var_v / k.var_v, 1.0, 1e-9);
  }
}

TEST(UbuConstants, SeriesAndClosedFormAgreeAtTheSwitch) {
  const double below = ubu_constants(1.0, 0.01 * (1 - 1e-9)).var_x;
  const double above = ubu_constants(1.0, 0.01 * (1 + 1e-9)).var_x;
  EXPECT_NEAR(above / below, 1.0, 1e-8);
}

TEST(UbuConstants, RejectsBadArguments) {
  EXPECT_THROW(ubu_constants(0.0, 0.1), c10::Error);
  EXPECT_THROW(ubu_constants(1.0, -0.1), c10::Error);
  try {
    ubu_constants(-2.0, 0.1);
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gamma must be positive"), std::string::npos);
  }
}

}  // namespace
}  // namespace bnn::samplers
