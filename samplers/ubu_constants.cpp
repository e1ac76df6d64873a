#include "samplers/ubu_constants.h"

#include <cmath>

#include <torch/torch.h>

namespace bnn::samplers {

UbuConstants ubu_constants(double gamma, double t) {
  TORCH_CHECK(gamma > 0 && std::isfinite(gamma), "friction gamma must be positive and finite, got ", gamma);
  TORCH_CHECK(t > 0 && std::isfinite(t), "time step must be positive and finite, got ", t);
  const double a = gamma * t;
  const double em1 = std::expm1(-a);        // e^{-a} - 1, accurate for small a
  const double em2 = std::expm1(-2.0 * a);  // e^{-2a} - 1
  UbuConstants k;
  k.decay = std::exp(-a);  // not 1 + em1: that loses relative precision for large a
  k.x_from_v = -em1 / gamma;
  k.var_v = -em2;
  k.cov_xv = em1 * em1 / gamma;
  // 2a - 3 + 4e^{-a} - e^{-2a} = 2a + 4 em1 - em2 cancels to O(a^3); below
  // a = 1e-2 use its series 2a^3/3 - a^4/2 + 7a^5/30 - a^6/12 + 31a^7/1260.
  double var_x_scaled;
  if (a < 1e-2) {
    var_x_scaled = a * a * a * (2.0 / 3.0 + a * (-0.5 + a * (7.0 / 30.0 + a * (-1.0 / 12.0 + a * 31.0 / 1260.0))));
  } else {
    var_x_scaled = 2.0 * a + 4.0 * em1 - em2;
  }
  k.var_x = var_x_scaled / (gamma * gamma);
  k.x_noise = std::sqrt(k.var_x);
  k.v_from_xi1 = k.cov_xv / k.x_noise;
  const double resid = k.var_v - k.cov_xv * k.cov_xv / k.var_x;
  k.v_noise = std::sqrt(std::max(resid, 0.0));
  return k;
}

}  // namespace bnn::samplers
