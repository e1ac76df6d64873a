#include "samplers/bounce.h"

#include <cmath>

namespace bnn::samplers {

void reflect_into_box(torch::Tensor& x, torch::Tensor& v, const torch::Tensor& anchor, double w,
                      torch::Tensor& scratch) {
  TORCH_CHECK(w > 0 && std::isfinite(w), "bounce half-width rho_max must be positive and finite, got ", w);
  torch::NoGradGuard no_grad;
  if (!scratch.defined() || !scratch.sizes().equals(x.sizes())) scratch = torch::empty_like(x);
  torch::sub_out(scratch, x, anchor);  // y
  const bool on_cpu = x.device().is_cpu();
  if (on_cpu && scratch.abs().max().item<double>() <= w) return;

  const torch::Tensor& y = scratch;
  const torch::Tensor outside = y.abs() > w;
  const torch::Tensor folded = (torch::remainder(y - w, 4.0 * w) - 2.0 * w).abs_().sub_(w);
  const torch::Tensor crossings = torch::floor((y + w) / (2.0 * w));
  const torch::Tensor odd = torch::remainder(crossings, 2.0) == 1.0;
  x.copy_(torch::where(outside, anchor + folded, x));
  v.copy_(torch::where(outside.logical_and(odd), -v, v));
}

}  // namespace bnn::samplers
