// The elementwise part of a sampler step as single passes over the flat
// vectors, with the Gaussian noise drawn inside the pass (Note [Fused steps]).
//
// Plain C++ with no LibTorch include: the passes are compiled twice,
// for the baseline instruction set and (on x86-64) for AVX2 with FMA
// (fused_kernels_avx2.cpp), with the flags of the normal kernel
// (samplers/CMakeLists.txt). samplers/fused_step.h drives these functions
// from the samplers, splits the coordinates between threads and picks the
// build the CPU can run.
#pragma once

#include <cstdint>

#include "samplers/normal_kernel.h"

namespace bnn::samplers::detail {

// Note [Fused steps]
// ~~~~~~~~~~~~~~~~~~
// A sampler step written with tensor operations makes a dozen passes over the
// d-vectors (each OpenMP-parallel) plus one to write the noise; on a small
// network (the demo mlp: d = 269,322, a 5 ms gradient) they cost a third of
// the step. The fused path does the same arithmetic in one pass per part of
// the step that is not separated by a gradient or a bounce:
//
//   UBU      U(h/2) | gradient | B(h) U(h/2)                     2 passes
//   BAOAB    B(h/2) A(h/2) | O A(h/2) | gradient | B(h/2)        3 passes
//   EM, SGLD, SGNHT        gradient | the update                 1 pass
//
// and gives the same bits as the tensor path, which stays the reference:
//
// - the noise: coordinate j of a pass reads element j (and d + j for UBU's
//   second normal) of the same ChunkedNormal streams. A pass covers its
//   coordinates in tiles of kFusedTile; a tile's normals are drawn into a
//   buffer on the stack (it stays in L1) just before the tile's arithmetic.
//   A thread that starts in the middle of a chunk jumps its generator there
//   (Note [Lane jumps]); the thread that makes a chunk's last draw stores the
//   chunk's generator for the next pass.
// - the arithmetic: the same operations in the same order with the same
//   float rounding. ATen computes `a.add_(b, alpha)` as fma(b, alpha, a)
//   where its CPU kernels have FMA, and as a rounded product plus a where
//   they do not; fused_step.cpp asks ATen which (fused_step.h,
//   aten_add_rounding) and the kernels round the same way. When ATen's
//   answer is mixed, the fused path is off.
// - the force G(x, b) is formed coordinate by coordinate from the terms
//   StochasticGradient::evaluate_terms returns, in the order of
//   StochasticGradient::evaluate.
// - the bounce: each pass reports whether some coordinate left the box; if
//   so, the driver runs reflect_into_box (samplers/bounce.h) on the whole
//   vector, exactly as the tensor path does after the same update. Inside
//   the box nothing else happens, as in the tensor path.
//
// Results therefore do not depend on the path, the thread count or the
// instruction set, and checkpoints are the same either way (the noise state
// saved is the chunk generators between passes).
constexpr int64_t kFusedTile = 512;
constexpr int64_t kNoiseChunk = int64_t{1} << 16;  // ChunkedNormal::kChunk (checked in random.cpp)
constexpr int64_t kBlocksPerChunk = kNoiseChunk / (2 * kNormalLanes);

// The generators of one ChunkedNormal buffer during a pass.
struct NoiseBuffer {
  const NormalLanes* chunks;  // every chunk's generator before the pass
  NormalLanes* next;          // written: every chunk's generator after its last draw
  int64_t numel;              // elements in the buffer
  // jumps[k] moves a generator k blocks ahead; the driver fills the entries a
  // pass will need (0 < k < kBlocksPerChunk) and leaves the others null.
  const LaneJump* const* jumps;
};

// How a pass rounds a * b + c (the way ATen's add with alpha does).
enum class Rounding { kFma, kSeparate };

// The terms of G(x, b) after the gradient (StochasticGradient::evaluate_terms):
//   plain:    G_j = (diag_j x_j + scale grad_j) - offset_j
//   stored:   then G_j -= scale anchor_grad_j
//   partial:  G_j = (partial_j + scale grad_j) - offset_j  (recomputed anchors:
//             partial = diag x - scale g*_b, formed before the gradient)
enum class ForceMode { kPlain, kStoredAnchors, kPartial };
struct ForceTerms {
  ForceMode mode = ForceMode::kPlain;
  const float* diag = nullptr;
  const float* offset = nullptr;
  const float* grad = nullptr;
  const float* anchor_grad = nullptr;
  const float* partial = nullptr;
  float scale = 0;
  float minus_scale = 0;
};

// The coordinates of one pass: x and v are updated in place on [begin, end).
// `anchor` and `w` define the box (w = +inf when unbounded); every pass
// returns true when some x_j ends with !(|x_j - anchor_j| <= w), NaN included.
struct PassSpan {
  float* x;
  float* v;
  const float* anchor;
  float w;  // the largest float <= rho_max, so that float comparison is exact
  int64_t dim;
  int64_t begin;
  int64_t end;
};

// UBU's half-step U(h/2) (samplers/ubu.h) with normals (xi1, xi2) = elements
// (j, d + j) of `noise`:
//   x = fma(xi1, x_noise, fma(v, x_from_v, x)),
//   v = fma(xi2, v_noise, fma(xi1, v_from_xi1, v decay)),
// preceded, when `kick` is set, by the kick v = fma(G_j, minus_h, v).
struct UbuHalf {
  float x_from_v, x_noise, decay, v_from_xi1, v_noise;
};

// The passes (documented with their samplers; fused_step.cpp says which
// tensor operations each one replaces).
struct FusedKernels {
  bool (*ubu)(const PassSpan&, Rounding, const UbuHalf&, const ForceTerms* kick, float minus_h,
              const NoiseBuffer& noise);
  // BAOAB's B(h/2) A(h/2) from the stored force: v = fma(force, minus_half_h, v); x = fma(v, half_h, x).
  bool (*kick_drift)(const PassSpan&, Rounding, const float* force, float minus_half_h, float half_h);
  // BAOAB's O A(h/2): v = fma(xi, sigma, v eta); x = fma(v, half_h, x).
  bool (*ou_drift)(const PassSpan&, Rounding, float eta, float sigma, float half_h, const NoiseBuffer& noise);
  // BAOAB's closing B(h/2): force_out = G; v = fma(G, minus_half_h, v). Never reports.
  void (*kick)(const PassSpan&, Rounding, const ForceTerms&, float* force_out, float minus_half_h);
  // Euler-Maruyama: x = fma(v, h, x); v = fma(xi, sigma, fma(G, minus_h, v friction)), G at the old x.
  bool (*euler)(const PassSpan&, Rounding, const ForceTerms&, float h, float friction, float minus_h, float sigma,
                const NoiseBuffer& noise);
  // SGLD: x = fma(xi, sigma, fma(G, minus_h, x)).
  bool (*sgld)(const PassSpan&, Rounding, const ForceTerms&, float minus_h, float sigma, const NoiseBuffer& noise);
  // SGNHT: v = fma(xi, sigma, fma(G, minus_h, v thermostat)); x = fma(v, h, x).
  bool (*sgnht)(const PassSpan&, Rounding, const ForceTerms&, float thermostat, float minus_h, float sigma, float h,
                const NoiseBuffer& noise);
};

// The baseline build, and (where built) the AVX2 and FMA build.
const FusedKernels& fused_kernels_baseline();
const FusedKernels* fused_kernels_avx2();  // null where not built

}  // namespace bnn::samplers::detail
