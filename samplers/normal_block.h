// The Box-Muller block of Note [CPU normal kernel] (samplers/normal_kernel.h),
// shared by the buffer fill (normal_kernel.cpp) and the fused sampler passes
// (fused_kernels_impl.h), so that both make the same bits.
//
// Plain C++ with no LibTorch include. The functions have internal linkage on
// purpose: the including files are compiled with different instruction sets
// (fused_kernels_avx2.cpp with AVX2 and FMA), and an inline function with
// external linkage would let the linker keep one build for all of them; for
// the same reason the square root is the compiler's builtin, not std::sqrt
// (an inline function with external linkage that an unoptimised build emits
// in each object). The
// including file must be compiled with -fno-math-errno and -ffp-contract=off
// (samplers/CMakeLists.txt).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "samplers/normal_lanes.h"

namespace bnn::samplers::detail {
namespace {  // NOLINT(cert-dcl59-cpp, google-build-namespaces): see above

constexpr int kNormalBlock = 2 * kNormalLanes;

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// One step of every lane, then the transform of Note [CPU normal kernel].
// Branch-free on purpose: a float comparison or a select on floats stops
// GCC's vectoriser, so the mantissa test and the quadrant's swap and signs
// are integer operations on the float's bits.
inline void normal_block(NormalLanes& g, float* out) {
  uint32_t hi[kNormalLanes], lo[kNormalLanes];
  for (int l = 0; l < kNormalLanes; ++l) {
    const uint64_t s0 = g.s[0][l], s1 = g.s[1][l], s2 = g.s[2][l], s3 = g.s[3][l];
    const uint64_t times5 = s1 + (s1 << 2);
    const uint64_t rotated = rotl(times5, 7);
    const uint64_t word = rotated + (rotated << 3);  // rotl(5 s1, 7) * 9, the ** scrambler
    const uint64_t t = s1 << 17;
    const uint64_t n2 = s2 ^ s0, n3 = s3 ^ s1;
    g.s[0][l] = s0 ^ n3;
    g.s[1][l] = s1 ^ n2;
    g.s[2][l] = n2 ^ t;
    g.s[3][l] = rotl(n3, 45);
    hi[l] = static_cast<uint32_t>(word >> 32);
    lo[l] = static_cast<uint32_t>(word);
  }
  for (int l = 0; l < kNormalLanes; ++l) {
    // log u = e log 2 + log m, m in [sqrt(1/2), sqrt(2)].
    const float u = (static_cast<float>(static_cast<int32_t>(hi[l] >> 1)) + 0.5f) * 0x1p-31f;
    const uint32_t ub = float_bits(u);
    const uint32_t mantissa = ub & 0x7fffffu;
    const uint32_t above_sqrt2 = mantissa > 0x3504f3u ? 1u : 0u;  // 1.mantissa > sqrt(2)
    const float m = bits_float(mantissa | (0x3f800000u - (above_sqrt2 << 23)));
    const float e = static_cast<float>(static_cast<int32_t>(ub >> 23) - 127 + static_cast<int32_t>(above_sqrt2));
    const float t = (m - 1.0f) / (m + 1.0f);
    const float t2 = t * t;
    const float log_m =
        2.0f * t * (1.0f + t2 * (1.0f / 3.0f + t2 * (1.0f / 5.0f + t2 * (1.0f / 7.0f + t2 * (1.0f / 9.0f)))));
    const float radius = __builtin_sqrtf(-2.0f * (e * 0.693147180559945309f + log_m));

    const uint32_t quadrant = lo[l] >> 30;
    const float a = ((static_cast<float>(static_cast<int32_t>(lo[l] & 0x3fffffffu)) + 0.5f) * 0x1p-30f - 0.5f) *
                    1.57079632679489662f;
    const float a2 = a * a;
    const float sin_a =
        a * (1.0f + a2 * (-1.0f / 6.0f + a2 * (1.0f / 120.0f + a2 * (-1.0f / 5040.0f + a2 * (1.0f / 362880.0f)))));
    const float cos_a =
        1.0f + a2 * (-0.5f + a2 * (1.0f / 24.0f + a2 * (-1.0f / 720.0f + a2 * (1.0f / 40320.0f +
                                                                                 a2 * (-1.0f / 3628800.0f)))));
    // (cos, sin) of q pi/2 + a: q = 0 (c, s), 1 (-s, c), 2 (-c, -s), 3 (s, -c).
    const uint32_t swap = 0u - (quadrant & 1u);
    const uint32_t sb = float_bits(sin_a), cb = float_bits(cos_a);
    const uint32_t cos_bits = ((sb & swap) | (cb & ~swap)) ^ ((((quadrant + 1u) >> 1) & 1u) << 31);
    const uint32_t sin_bits = ((cb & swap) | (sb & ~swap)) ^ ((quadrant >> 1) << 31);
    out[l] = radius * bits_float(cos_bits);
    out[kNormalLanes + l] = radius * bits_float(sin_bits);
  }
}

}  // namespace
}  // namespace bnn::samplers::detail
