// Standard normal draws into float buffers on the CPU, several times faster
// than LibTorch's CPU normal_ (see Note [CPU normal kernel]).
//
// Plain C++ with no LibTorch include, so that this translation unit can be
// compiled with its own flags (samplers/CMakeLists.txt): -fno-math-errno,
// without which GCC keeps sqrt's error branch and does not vectorise the
// transform, and -ffp-contract=off.
#pragma once

#include <cstdint>

#include "samplers/normal_lanes.h"

namespace bnn::samplers::detail {

// Note [CPU normal kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// kNormalLanes independent xoshiro256** generators (Blackman and Vigna),
// stored as a structure of arrays so that one step of all of them is a few
// vector instructions. Each step of lane l yields one 64-bit word w, and w
// yields two N(0, 1) draws by the Box-Muller transform:
//
//   u     = (int(hi32(w) >> 1) + 1/2) 2^-31, rounded to float, in (0, 1]
//   r     = sqrt(-2 log u)
//   q     = lo32(w) >> 30                      (a quadrant, 0..3)
//   a     = ((int(lo32(w) & (2^30 - 1)) + 1/2) 2^-30 - 1/2) pi/2, in (-pi/4, pi/4)
//   theta = q pi/2 + a                          (uniform on the circle)
//   z1    = r cos(theta),  z2 = r sin(theta)
//
// log, sin and cos are short polynomials that are accurate to a few float
// ulps on these ranges (log through t = (m - 1)/(m + 1) with the mantissa m
// in [sqrt(1/2), sqrt(2)]; sin and cos by their Taylor series on |a| <= pi/4),
// written without branches so that GCC vectorises them. The smallest u is
// 2^-32, so |z| <= sqrt(64 log 2) = 6.66 (LibTorch's float normal_ stops
// at 5.77).
//
// A block is 2 kNormalLanes outputs: z1 of lanes 0..7, then z2 of lanes 0..7.
// A buffer of n values takes ceil(n / 16) steps of every lane; a partial last
// block discards its tail. The kernel is built twice on x86-64 Linux with GCC
// (AVX2 and baseline, chosen at load time). The file is compiled with
// -ffp-contract=off, so no build fuses a * b + c into an FMA (not even with
// -march=native), and vectorising does not reorder elementwise IEEE
// operations: every build gives the same bits (NormalKernel.* compares an
// unoptimised scalar build, a baseline one and one for AVX2 with FMA).
// Seeds every lane from `seed` by SplitMix64 (the seeding xoshiro's authors
// recommend): lane l's words are outputs 4 l .. 4 l + 3 of SplitMix64 started
// at `seed`.
void seed_normal_lanes(NormalLanes& lanes, uint64_t seed);

// Writes n standard normal draws to out and advances the lanes.
void fill_standard_normal(NormalLanes& lanes, float* out, int64_t n);

// Note [Lane jumps]
// ~~~~~~~~~~~~~~~~~
// xoshiro256**'s state transition is linear over GF(2): one step maps the
// 256-bit state s to M s for a fixed 256 x 256 bit matrix M (the ** scrambler
// only shapes the output). So k steps are the matrix M^k, which
// make_lane_jump builds by repeated squaring, and apply_lane_jump moves a
// generator k steps ahead in 256 column XORs, without making the draws in
// between. The fused sampler passes (samplers/fused_kernels.h) use it to
// start drawing in the middle of a chunk: a thread that handles coordinates
// from j on jumps to the block holding element j, and gets exactly the draws
// a sequential fill would have given there.
struct LaneJump {
  uint64_t column[256][4];  // column i: M^k applied to the state with only bit i set
};
void make_lane_jump(int64_t steps, LaneJump& out);
// Moves every lane of `lanes` the jump's number of steps ahead.
void apply_lane_jump(const LaneJump& jump, NormalLanes& lanes);

}  // namespace bnn::samplers::detail
