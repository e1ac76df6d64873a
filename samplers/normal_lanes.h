// The state of bnn's CPU normal generator (Note [CPU normal kernel] in
// samplers/normal_kernel.h), on its own so that the kernel's block
// (samplers/normal_block.h) and its interface share it.
#pragma once

#include <cstdint>

namespace bnn::samplers::detail {

constexpr int kNormalLanes = 8;

struct NormalLanes {
  uint64_t s[4][kNormalLanes];
};

}  // namespace bnn::samplers::detail
