// Test helper: the relative distance of two tensors, for tolerances.
#pragma once

#include <algorithm>

#include <torch/torch.h>

namespace bnn::testing {

// ||a - b|| / max(||b||, floor).
inline double relative_error(const torch::Tensor& a, const torch::Tensor& b, double floor = 1e-30) {
  return (a - b).norm().item<double>() / std::max(b.norm().item<double>(), floor);
}

}  // namespace bnn::testing
