// Elastic reflection of a chain into the hypercube around the anchor.
//
// Omega = { x : |x_j - x*_j| <= w for all j }, w = rho_max (docs/design.md §3).
// Per coordinate, with y = x - x*: inside (|y| <= w) nothing changes;
// otherwise the path is folded back as many times as it crossed a face,
//   y' = |((y - w) mod 4w) - 2w| - w,
// and the velocity flips sign when the number of reflections,
// floor((y + w) / (2w)), is odd. Whole-vector operations only.
#pragma once

#include <torch/torch.h>

namespace bnn::samplers {

// Folds x back into [anchor - w, anchor + w] and flips v where the number of
// reflections is odd. x, v, anchor: same shape and device. w > 0 (checked).
// On the CPU the common case (every coordinate inside) costs one pass and no
// allocation beyond `scratch`; on accelerators it never synchronises.
void reflect_into_box(torch::Tensor& x, torch::Tensor& v, const torch::Tensor& anchor, double w,
                      torch::Tensor& scratch);

}  // namespace bnn::samplers
