// Constants of the exact Ornstein-Uhlenbeck flow U(t) used by UBU.
//
// U(t) solves dx = v dt, dv = -gamma v dt + sqrt(2 gamma) dW exactly:
//   x' = x + ((1 - e^{-gamma t}) / gamma) v + Zx,   v' = e^{-gamma t} v + Zv,
//   Var Zv = 1 - e^{-2 gamma t},   Cov(Zx, Zv) = (1 - e^{-gamma t})^2 / gamma,
//   Var Zx = (2 gamma t - 3 + 4 e^{-gamma t} - e^{-2 gamma t}) / gamma^2.
// With xi1, xi2 ~ N(0, I): Zx = sx xi1, Zv = (c / sx) xi1 + s2 xi2 where
// sx = sqrt(Var Zx), c = Cov, s2 = sqrt(Var Zv - c^2 / sx^2).
// (SMS-UBU paper, section 2; docs/design.md section 3.) Everything is computed in
// double with expm1 and series for small gamma t, where the closed forms
// cancel catastrophically.
#pragma once

namespace bnn::samplers {

struct UbuConstants {
  double decay = 0;      // e^{-gamma t}
  double x_from_v = 0;   // (1 - e^{-gamma t}) / gamma
  double x_noise = 0;    // sx
  double v_from_xi1 = 0; // c / sx
  double v_noise = 0;    // s2
  // The three second moments, kept for tests and diagnostics.
  double var_x = 0, cov_xv = 0, var_v = 0;
};

// TORCH_CHECKs gamma > 0 and t > 0.
UbuConstants ubu_constants(double gamma, double t);

}  // namespace bnn::samplers
