// SplitMix64 (Steele, Lea and Flood 2014), the mixer behind derive_seed
// (Note [RNG streams]), the seeding of the CPU normal kernel's xoshiro lanes
// (the seeding xoshiro's authors recommend) and the image loaders' per-image
// augmentation seeds. Header-only and free of LibTorch, so that
// samplers/normal_kernel.cpp, compiled with its own flags, can use it.
#pragma once

#include <cstdint>

namespace bnn::samplers {

// SplitMix64's state increment (the golden ratio in 64-bit fixed point).
inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ULL;

// The output of one SplitMix64 step from state z; the state after the step
// is z + kSplitMix64Gamma.
inline uint64_t splitmix64(uint64_t z) {
  z += kSplitMix64Gamma;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace bnn::samplers
