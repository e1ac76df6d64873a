// One coordinate of each fused sampler pass (Note [Fused steps] in
// samplers/fused_kernels.h): the arithmetic, written once, for the CPU passes
// (samplers/fused_kernels_impl.h), the buffered passes on the host and the
// CUDA kernels (samplers/buffered_passes.h, Note [Buffered passes]).
//
// Plain C++ that nvcc also compiles (every function is host and device code
// there). Everything is in an unnamed namespace: the CPU passes include this
// header from files built for different instruction sets, and the linker
// must not merge their copies. For the same reason the host code calls the
// compiler's builtins rather than std::fma and friends: those are inline
// functions with external linkage, which an unoptimised build emits once per
// object, the AVX2 object's copy with AVX2 instructions, for the linker to
// pick one of.
#pragma once

#include <cmath>
#include <cstdint>

#include "samplers/fused_kernels.h"

#if defined(__CUDACC__)
#define BNN_HOST_DEVICE __host__ __device__
#else
#define BNN_HOST_DEVICE
#endif

namespace bnn::samplers::detail {
namespace {  // NOLINT(cert-dcl59-cpp, google-build-namespaces): one copy per instruction set

// a * b + c rounded as ATen's `c.add_(a, b)` rounds it on the chain's device
// (once with kFma, twice with kSeparate). On the host the including files are
// compiled with -ffp-contract=off, so the plain expressions below round each
// operation; on a GPU the intrinsics keep nvcc from contracting them.
template <Rounding R>
BNN_HOST_DEVICE inline float mad(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  if constexpr (R == Rounding::kFma) {
    return __fmaf_rn(a, b, c);
  } else {
    return __fadd_rn(__fmul_rn(a, b), c);
  }
#else
  if constexpr (R == Rounding::kFma) {
    return __builtin_fmaf(a, b, c);
  } else {
    return a * b + c;
  }
#endif
}

BNN_HOST_DEVICE inline float abs_of(float a) {
#if defined(__CUDA_ARCH__)
  return fabsf(a);
#else
  return __builtin_fabsf(a);
#endif
}

BNN_HOST_DEVICE inline float fmod_of(float a, float b) {
#if defined(__CUDA_ARCH__)
  return fmodf(a, b);
#else
  return __builtin_fmodf(a, b);
#endif
}

BNN_HOST_DEVICE inline float floor_of(float a) {
#if defined(__CUDA_ARCH__)
  return floorf(a);
#else
  return __builtin_floorf(a);
#endif
}

BNN_HOST_DEVICE inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

BNN_HOST_DEVICE inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

BNN_HOST_DEVICE inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// G_j from the terms of StochasticGradient::evaluate_terms, in its order (the
// pointers start at the pass's first coordinate, i counts from there):
//   plain:    G = (diag x + scale grad) - offset
//   stored:   G = ((diag x + scale grad) - offset) - scale anchor_grad
//   partial:  G = (partial + scale grad) - offset
template <Rounding R, ForceMode M>
BNN_HOST_DEVICE inline float force_at(const float* __restrict diag, const float* __restrict offset,
                                      const float* __restrict grad, const float* __restrict anchor_grad,
                                      const float* __restrict partial, float scale, float minus_scale, int64_t i,
                                      float x) {
  float f;
  if constexpr (M == ForceMode::kPartial) {
    f = partial[i];
  } else {
    f = mul(diag[i], x);
  }
  f = mad<R>(grad[i], scale, f);
  f = sub(f, offset[i]);
  if constexpr (M == ForceMode::kStoredAnchors) f = mad<R>(anchor_grad[i], minus_scale, f);
  return f;
}

// The updates, each on one coordinate's x and v (documented with
// FusedKernels in samplers/fused_kernels.h).

// UBU's U(h/2) with normals z1, z2 (after the kick, where there is one).
template <Rounding R>
BNN_HOST_DEVICE inline void ubu_update(float& x, float& v, float z1, float z2, const UbuHalf& c) {
  const float xn = mad<R>(z1, c.x_noise, mad<R>(v, c.x_from_v, x));
  v = mad<R>(z2, c.v_noise, mad<R>(z1, c.v_from_xi1, mul(v, c.decay)));
  x = xn;
}

// A kick by the force g: v -= step g (minus_step = -step).
template <Rounding R>
BNN_HOST_DEVICE inline void kick_update(float& v, float g, float minus_step) {
  v = mad<R>(g, minus_step, v);
}

// A drift: x += time v.
template <Rounding R>
BNN_HOST_DEVICE inline void drift_update(float& x, float v, float time) {
  x = mad<R>(v, time, x);
}

// The one-normal updates after a gradient, and BAOAB's O A(h/2) without one.
struct Coefficients {
  // friction: EM's 1 - h gamma, SGNHT's thermostat factor, the OU decay
  // e^{-gamma h}; h: the drift's time (h/2 for BAOAB's A)
  float h, friction, minus_h, sigma;
};

// Euler-Maruyama: x += h v; v = v friction - h g + sigma z (g at the old x).
template <Rounding R>
BNN_HOST_DEVICE inline void euler_update(float& x, float& v, float g, float z, const Coefficients& c) {
  const float xn = mad<R>(v, c.h, x);
  v = mad<R>(z, c.sigma, mad<R>(g, c.minus_h, mul(v, c.friction)));
  x = xn;
}

// SGLD: x = x - h g + sigma z.
template <Rounding R>
BNN_HOST_DEVICE inline void sgld_update(float& x, float g, float z, const Coefficients& c) {
  x = mad<R>(z, c.sigma, mad<R>(g, c.minus_h, x));
}

// SGNHT: v = v thermostat - h g + sigma z; x += h v.
template <Rounding R>
BNN_HOST_DEVICE inline void sgnht_update(float& x, float& v, float g, float z, const Coefficients& c) {
  v = mad<R>(z, c.sigma, mad<R>(g, c.minus_h, mul(v, c.friction)));
  x = mad<R>(v, c.h, x);
}

// BAOAB's O A(h/2): v = v e^{-gamma h} + sigma z; x += (h/2) v.
template <Rounding R>
BNN_HOST_DEVICE inline void ou_drift_update(float& x, float& v, float z, const Coefficients& c) {
  v = mad<R>(z, c.sigma, mul(v, c.friction));
  x = mad<R>(v, c.h, x);
}

// Whether x is outside the box |x - anchor| <= w (w the largest float <= rho_max), NaN included.
BNN_HOST_DEVICE inline bool outside(float x, float anchor, float w) { return !(abs_of(x - anchor) <= w); }

// Python's (and ATen's) remainder: the sign of the divisor.
BNN_HOST_DEVICE inline float floor_remainder(float a, float b) {
  float m = fmod_of(a, b);
  if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) m = add(m, b);
  return m;
}

// The box as reflect_into_box's tensor operations see it: rho_max, 2 rho_max
// and 4 rho_max each rounded to float, as ATen rounds a double scalar for a
// float tensor; and 1 / (float) 2 rho_max in float, the factor ATen's CUDA
// division by a scalar multiplies by.
struct Reflection {
  float w, two_w, four_w, inv_two_w;
};

// reflect_into_box (samplers/bounce.cpp) on one coordinate, operation for
// operation: y = x - anchor; where |y| > w, x = anchor + (|(y - w) mod 4w - 2w| - w)
// and v flips when floor((y + w) / 2w) is odd. The division is ATen's on the
// chain's device: a float division on the host, a multiplication by the
// reciprocal on a GPU (ATen's CUDA kernel for a division by a scalar), so
// that both paths agree on whether a coordinate near a fold flips.
BNN_HOST_DEVICE inline void reflect(float& x, float& v, float anchor, const Reflection& b) {
  const float y = sub(x, anchor);
  if (!(abs_of(y) > b.w)) return;
  const float folded = sub(abs_of(sub(floor_remainder(sub(y, b.w), b.four_w), b.two_w)), b.w);
  x = add(anchor, folded);
#if defined(__CUDA_ARCH__)
  const float crossings = floor_of(mul(add(y, b.w), b.inv_two_w));
#else
  const float crossings = floor_of(add(y, b.w) / b.two_w);
#endif
  if (floor_remainder(crossings, 2.0f) == 1.0f) v = -v;
}

}  // namespace
}  // namespace bnn::samplers::detail
