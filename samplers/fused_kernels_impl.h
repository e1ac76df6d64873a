// The passes of samplers/fused_kernels.h, included by fused_kernels_baseline.cpp
// (baseline instruction set) and fused_kernels_avx2.cpp (AVX2 and FMA).
// Everything here has internal linkage, so the two builds cannot be mixed up
// by the linker; the including file defines the one entry point.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "samplers/coordinate_updates.h"
#include "samplers/fused_kernels.h"
#include "samplers/normal_block.h"

namespace bnn::samplers::detail {
namespace {  // NOLINT(cert-dcl59-cpp, google-build-namespaces): one copy per instruction set

// Every loop below reads and writes distinct buffers, element by element:
// there is no dependence between iterations, which GCC cannot prove for this
// many pointers (it gives up past 10 run-time alias checks).
#if defined(__clang__)
#define BNN_NO_LOOP_DEPENDENCE _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define BNN_NO_LOOP_DEPENDENCE _Pragma("GCC ivdep")
#else
#define BNN_NO_LOOP_DEPENDENCE
#endif

// Whole blocks into out. Not inlined: inside the passes GCC does not
// vectorise the generator's state update (it does here, as in
// fill_standard_normal), which made the draws 2-3x slower.
#if defined(__GNUC__)
__attribute__((noinline))
#endif
void fill_blocks(NormalLanes& lanes, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += kNormalBlock) normal_block(lanes, out + i);
}

// Sequential draws from element `pos` on of a ChunkedNormal buffer
// (Note [Fused steps]): what ChunkedNormal::fill would have written there.
class NormalCursor {
 public:
  NormalCursor(const NoiseBuffer& buffer, int64_t pos) : buffer_(buffer), pos_(pos), chunk_(pos / kNoiseChunk) {
    load_chunk();
    const int64_t in_chunk = pos - chunk_ * kNoiseChunk;
    const int64_t blocks = in_chunk / kNormalBlock;
    if (blocks > 0) apply_lane_jump(*buffer_.jumps[blocks], lanes_);
    const int64_t into_block = in_chunk % kNormalBlock;
    if (into_block > 0) {
      refill(pos - into_block);
      pending_at_ = into_block;
    }
  }

  void draw(float* out, int64_t n) {
    while (n > 0) {
      if (pending_at_ < pending_end_) {
        const int64_t m = std::min(n, pending_end_ - pending_at_);
        std::memcpy(out, pending_ + pending_at_, sizeof(float) * static_cast<size_t>(m));
        pending_at_ += m;
        pos_ += m;
        out += m;
        n -= m;
      } else {
        const int64_t whole = std::min(n, chunk_end_ - pos_) / kNormalBlock * kNormalBlock;
        fill_blocks(lanes_, out, whole);
        pos_ += whole;
        out += whole;
        n -= whole;
        if (n > 0 && pos_ < chunk_end_) {
          refill(pos_);  // a block this draw ends inside, or the chunk's partial last block
          continue;
        }
      }
      if (pos_ == chunk_end_) {  // this cursor made the chunk's last draw
        buffer_.next[chunk_] = lanes_;
        if (pos_ < buffer_.numel) {
          ++chunk_;
          load_chunk();
        }
      }
    }
  }

 private:
  void load_chunk() {
    lanes_ = buffer_.chunks[chunk_];
    chunk_end_ = std::min((chunk_ + 1) * kNoiseChunk, buffer_.numel);
    pending_at_ = pending_end_ = 0;
  }
  void refill(int64_t block_start) {
    fill_blocks(lanes_, pending_, kNormalBlock);
    pending_end_ = std::min<int64_t>(kNormalBlock, chunk_end_ - block_start);
    pending_at_ = 0;
  }

  const NoiseBuffer& buffer_;
  int64_t pos_;
  int64_t chunk_;
  int64_t chunk_end_ = 0;
  NormalLanes lanes_;
  alignas(64) float pending_[kNormalBlock];
  int64_t pending_at_ = 0, pending_end_ = 0;
};

inline const float* from(const float* p, int64_t at) { return p == nullptr ? nullptr : p + at; }

// G_j from the terms of StochasticGradient::evaluate_terms, in its order:
// local restrict pointers to the terms from element `at` on, for the loop
// that follows (locals, so that the compiler keeps them in registers: stores
// to x and v cannot change them).
#define BNN_FORCE_LOCALS(terms, at)                                                                      \
  const float* __restrict f_diag = from((terms).diag, at);                                               \
  const float* __restrict f_offset = from((terms).offset, at);                                           \
  const float* __restrict f_grad = from((terms).grad, at);                                               \
  const float* __restrict f_anchor = from((terms).anchor_grad, at);                                      \
  const float* __restrict f_partial = from((terms).partial, at);                                         \
  const float f_scale = (terms).scale, f_minus_scale = (terms).minus_scale
#define BNN_FORCE(R, M, i, x) \
  force_at<R, M>(f_diag, f_offset, f_grad, f_anchor, f_partial, f_scale, f_minus_scale, i, x)

template <class F>
auto with_rounding(Rounding r, F f) {
  if (r == Rounding::kFma) return f(std::integral_constant<Rounding, Rounding::kFma>{});
  return f(std::integral_constant<Rounding, Rounding::kSeparate>{});
}

template <class F>
auto with_force(ForceMode m, F f) {
  switch (m) {
    case ForceMode::kStoredAnchors:
      return f(std::integral_constant<ForceMode, ForceMode::kStoredAnchors>{});
    case ForceMode::kPartial:
      return f(std::integral_constant<ForceMode, ForceMode::kPartial>{});
    case ForceMode::kPlain:
      break;
  }
  return f(std::integral_constant<ForceMode, ForceMode::kPlain>{});
}

template <Rounding R, ForceMode M, bool Kick>
bool ubu_pass(const PassSpan& s, const UbuHalf& c, const ForceTerms* kick, const float minus_h,
              const NoiseBuffer& noise) {
  NormalCursor first(noise, s.begin), second(noise, s.dim + s.begin);
  alignas(64) float xi1[kFusedTile];
  alignas(64) float xi2[kFusedTile];
  const UbuHalf k = c;  // a local copy: stores to x and v cannot change it
  const float w = s.w;
  unsigned out = 0;
  for (int64_t t = s.begin; t < s.end; t += kFusedTile) {
    const int64_t n = std::min(kFusedTile, s.end - t);
    first.draw(xi1, n);
    second.draw(xi2, n);
    float* __restrict x = s.x + t;
    float* __restrict v = s.v + t;
    const float* __restrict a = s.anchor + t;
    const float* __restrict z1 = xi1;
    const float* __restrict z2 = xi2;
    if constexpr (Kick) {
      BNN_FORCE_LOCALS(*kick, t);
      BNN_NO_LOOP_DEPENDENCE
      for (int64_t i = 0; i < n; ++i) {
        float xi = x[i], vi = v[i];
        kick_update<R>(vi, BNN_FORCE(R, M, i, xi), minus_h);
        ubu_update<R>(xi, vi, z1[i], z2[i], k);
        x[i] = xi;
        v[i] = vi;
        out |= outside(xi, a[i], w);
      }
    } else {
      BNN_NO_LOOP_DEPENDENCE
      for (int64_t i = 0; i < n; ++i) {
        float xi = x[i], vi = v[i];
        ubu_update<R>(xi, vi, z1[i], z2[i], k);
        x[i] = xi;
        v[i] = vi;
        out |= outside(xi, a[i], w);
      }
    }
  }
  return out != 0;
}

bool ubu(const PassSpan& s, Rounding r, const UbuHalf& c, const ForceTerms* kick, float minus_h,
         const NoiseBuffer& noise) {
  return with_rounding(r, [&](auto R) {
    if (kick == nullptr) return ubu_pass<R.value, ForceMode::kPlain, false>(s, c, nullptr, minus_h, noise);
    return with_force(kick->mode, [&](auto M) { return ubu_pass<R.value, M.value, true>(s, c, kick, minus_h, noise); });
  });
}

template <Rounding R>
bool kick_drift_pass(const PassSpan& s, const float* force, const float minus_half_h, const float half_h) {
  float* __restrict x = s.x;
  float* __restrict v = s.v;
  const float* __restrict a = s.anchor;
  const float* __restrict f = force;
  const float w = s.w;
  unsigned out = 0;
  BNN_NO_LOOP_DEPENDENCE
  for (int64_t i = s.begin; i < s.end; ++i) {
    float xi = x[i], vi = v[i];
    kick_update<R>(vi, f[i], minus_half_h);
    drift_update<R>(xi, vi, half_h);
    x[i] = xi;
    v[i] = vi;
    out |= outside(xi, a[i], w);
  }
  return out != 0;
}

bool kick_drift(const PassSpan& s, Rounding r, const float* force, float minus_half_h, float half_h) {
  return with_rounding(r, [&](auto R) { return kick_drift_pass<R.value>(s, force, minus_half_h, half_h); });
}

template <Rounding R, ForceMode M>
void kick_pass(const PassSpan& s, const ForceTerms& terms, float* force_out, const float minus_half_h) {
  BNN_FORCE_LOCALS(terms, 0);
  const float* __restrict x = s.x;
  float* __restrict v = s.v;
  float* __restrict f = force_out;
  BNN_NO_LOOP_DEPENDENCE
  for (int64_t i = s.begin; i < s.end; ++i) {
    const float gi = BNN_FORCE(R, M, i, x[i]);
    f[i] = gi;
    float vi = v[i];
    kick_update<R>(vi, gi, minus_half_h);
    v[i] = vi;
  }
}

void kick(const PassSpan& s, Rounding r, const ForceTerms& terms, float* force_out, float minus_half_h) {
  with_rounding(r, [&](auto R) {
    return with_force(terms.mode, [&](auto M) {
      kick_pass<R.value, M.value>(s, terms, force_out, minus_half_h);
      return 0;
    });
  });
}

// The one-stream passes: after a gradient (Euler, SGLD, SGNHT), and BAOAB's
// O+A, which has no force. Which update each makes:
enum class Update { kEuler, kSgld, kSgnht, kOuDrift };

template <Rounding R, ForceMode M, Update U>
bool update_pass(const PassSpan& s, const ForceTerms& terms, const Coefficients& c, const NoiseBuffer& noise) {
  NormalCursor normals(noise, s.begin);
  alignas(64) float xi[kFusedTile];
  const Coefficients k = c;  // a local copy: stores to x and v cannot change it
  const float w = s.w;
  unsigned out = 0;
  for (int64_t t = s.begin; t < s.end; t += kFusedTile) {
    const int64_t n = std::min(kFusedTile, s.end - t);
    normals.draw(xi, n);
    BNN_FORCE_LOCALS(terms, t);
    float* __restrict x = s.x + t;
    float* __restrict v = s.v + t;
    const float* __restrict a = s.anchor + t;
    const float* __restrict z = xi;
    BNN_NO_LOOP_DEPENDENCE
    for (int64_t i = 0; i < n; ++i) {
      float xi = x[i], vi = v[i];
      if constexpr (U == Update::kEuler) {
        euler_update<R>(xi, vi, BNN_FORCE(R, M, i, xi), z[i], k);
      } else if constexpr (U == Update::kSgld) {
        sgld_update<R>(xi, BNN_FORCE(R, M, i, xi), z[i], k);
      } else if constexpr (U == Update::kSgnht) {
        sgnht_update<R>(xi, vi, BNN_FORCE(R, M, i, xi), z[i], k);
      } else {
        ou_drift_update<R>(xi, vi, z[i], k);
      }
      x[i] = xi;
      if constexpr (U != Update::kSgld) v[i] = vi;
      out |= outside(xi, a[i], w);
    }
  }
  return out != 0;
}

template <Update U>
bool update(const PassSpan& s, Rounding r, const ForceTerms& terms, const Coefficients& c, const NoiseBuffer& noise) {
  return with_rounding(r, [&](auto R) {
    return with_force(terms.mode, [&](auto M) { return update_pass<R.value, M.value, U>(s, terms, c, noise); });
  });
}

bool ou_drift(const PassSpan& s, Rounding r, float eta, float sigma, float half_h, const NoiseBuffer& noise) {
  return with_rounding(r, [&](auto R) {
    return update_pass<R.value, ForceMode::kPlain, Update::kOuDrift>(s, ForceTerms{}, {half_h, eta, 0.0f, sigma},
                                                                      noise);
  });
}

bool euler(const PassSpan& s, Rounding r, const ForceTerms& terms, float h, float friction, float minus_h,
           float sigma, const NoiseBuffer& noise) {
  return update<Update::kEuler>(s, r, terms, {h, friction, minus_h, sigma}, noise);
}

bool sgld(const PassSpan& s, Rounding r, const ForceTerms& terms, float minus_h, float sigma,
          const NoiseBuffer& noise) {
  return update<Update::kSgld>(s, r, terms, {0.0f, 0.0f, minus_h, sigma}, noise);
}

bool sgnht(const PassSpan& s, Rounding r, const ForceTerms& terms, float thermostat, float minus_h, float sigma,
           float h, const NoiseBuffer& noise) {
  return update<Update::kSgnht>(s, r, terms, {h, thermostat, minus_h, sigma}, noise);
}

#undef BNN_FORCE
#undef BNN_FORCE_LOCALS
#undef BNN_NO_LOOP_DEPENDENCE

constexpr FusedKernels kKernels = {ubu, kick_drift, ou_drift, kick, euler, sgld, sgnht};

}  // namespace
}  // namespace bnn::samplers::detail
