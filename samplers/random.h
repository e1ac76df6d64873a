// Seeds and generators for samplers and members.
//
// Note [RNG streams]: randomness is never global. A run seed is split into
// independent 64-bit streams with derive_seed(seed, stream) (SplitMix64 of the
// pair); each member derives its own seed from the run seed and its index, and
// each chain owns two generators derived from the member seed: one on the
// parameters' device for Gaussian noise, one on the CPU for minibatch order.
// Same seed, same device, same thread count: identical draws.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace bnn::samplers {

// A well-mixed 64-bit seed for stream `stream` of `seed`.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// A fresh generator of the device's type, seeded with `seed`.
at::Generator make_generator(torch::Device device, uint64_t seed);

}  // namespace bnn::samplers
