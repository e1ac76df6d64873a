// Test helper: a digest of the CPU normal kernel's draws, computed by
// whichever build of samplers/normal_kernel.cpp is linked in.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "samplers/normal_kernel.h"

namespace bnn::testing {

// Three fills of 2^16 + 37 draws (full blocks and a partial one) from
// `seed`: FNV-1a over the float bits.
inline uint64_t normal_kernel_digest(uint64_t seed = 2026) {
  samplers::detail::NormalLanes lanes;
  samplers::detail::seed_normal_lanes(lanes, seed);
  std::vector<float> draws((int64_t{1} << 16) + 37);
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (int fill = 0; fill < 3; ++fill) {
    samplers::detail::fill_standard_normal(lanes, draws.data(), static_cast<int64_t>(draws.size()));
    for (const float z : draws) {
      uint32_t bits;
      std::memcpy(&bits, &z, sizeof bits);
      hash = (hash ^ bits) * 0x100000001b3ULL;
    }
  }
  return hash;
}

}  // namespace bnn::testing
