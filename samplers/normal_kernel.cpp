#include "samplers/normal_kernel.h"

#include <cstring>

#include "samplers/normal_block.h"
#include "samplers/splitmix64.h"

namespace bnn::samplers::detail {

void seed_normal_lanes(NormalLanes& lanes, uint64_t seed) {
  uint64_t state = seed;
  for (int l = 0; l < kNormalLanes; ++l) {
    for (int w = 0; w < 4; ++w) {
      lanes.s[w][l] = splitmix64(state);
      state += kSplitMix64Gamma;
    }
  }
}

namespace {

using State = uint64_t[4];

// The state transition of one lane (Note [Lane jumps]): the same update as
// normal_block, without the output.
void step_state(const State in, State out) {
  const uint64_t t = in[1] << 17;
  const uint64_t n2 = in[2] ^ in[0], n3 = in[3] ^ in[1];
  out[0] = in[0] ^ n3;
  out[1] = in[1] ^ n2;
  out[2] = n2 ^ t;
  out[3] = (n3 << 45) | (n3 >> 19);
}

void apply(const LaneJump& jump, const State in, State out) {
  uint64_t acc[4] = {0, 0, 0, 0};
  for (int i = 0; i < 256; ++i) {
    const uint64_t mask = 0 - ((in[i >> 6] >> (i & 63)) & 1u);
    for (int w = 0; w < 4; ++w) acc[w] ^= jump.column[i][w] & mask;
  }
  std::memcpy(out, acc, sizeof acc);
}

// out = a b (apply b, then a). out may not alias a or b.
void compose(const LaneJump& a, const LaneJump& b, LaneJump& out) {
  for (int i = 0; i < 256; ++i) apply(a, b.column[i], out.column[i]);
}

void identity(LaneJump& out) {
  std::memset(&out, 0, sizeof out);
  for (int i = 0; i < 256; ++i) out.column[i][i >> 6] = uint64_t{1} << (i & 63);
}

}  // namespace

void make_lane_jump(int64_t steps, LaneJump& out) {
  LaneJump power, scratch;  // M^(2^i) and a temporary
  for (int i = 0; i < 256; ++i) {
    State unit = {0, 0, 0, 0};
    unit[i >> 6] = uint64_t{1} << (i & 63);
    step_state(unit, power.column[i]);
  }
  identity(out);
  for (uint64_t k = static_cast<uint64_t>(steps); k != 0; k >>= 1) {
    if (k & 1u) {
      compose(power, out, scratch);
      out = scratch;
    }
    if (k > 1) {
      compose(power, power, scratch);
      power = scratch;
    }
  }
}

void apply_lane_jump(const LaneJump& jump, NormalLanes& lanes) {
  for (int l = 0; l < kNormalLanes; ++l) {
    const State in = {lanes.s[0][l], lanes.s[1][l], lanes.s[2][l], lanes.s[3][l]};
    State out;
    apply(jump, in, out);
    for (int w = 0; w < 4; ++w) lanes.s[w][l] = out[w];
  }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(BNN_NORMAL_KERNEL_NO_CLONES)
__attribute__((target_clones("avx2", "default")))
#endif
void fill_standard_normal(NormalLanes& lanes, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + kNormalBlock <= n; i += kNormalBlock) normal_block(lanes, out + i);
  if (i < n) {
    float tail[kNormalBlock];
    normal_block(lanes, tail);
    std::memcpy(out + i, tail, sizeof(float) * static_cast<size_t>(n - i));
  }
}

}  // namespace bnn::samplers::detail
