// Test helper: labels for synthetic probability tables, without a random
// generator.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace bnn::testing {

// n labels of k classes: 7 i mod k.
inline torch::Tensor synthetic_labels(int64_t n, int64_t k) {
  return torch::remainder(torch::arange(n, torch::kLong) * 7, k);
}

}  // namespace bnn::testing
