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
#include <string>
#include <vector>

#include <torch/torch.h>

namespace bnn::samplers {

// A well-mixed 64-bit seed for stream `stream` of `seed`.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// A fresh generator of the device's type, seeded with `seed`.
at::Generator make_generator(torch::Device device, uint64_t seed);

// Gaussian noise for a flat buffer, drawn in parallel on the CPU.
//
// LibTorch's CPU normal_ runs on one thread, and for small networks the
// sampler's 4 d normals per step cost more than the gradient. The buffer is
// cut into fixed chunks of kChunk elements, each with its own generator
// (stream c of the seed), and the chunks are filled with at::parallel_for.
// The draws depend on the seed and the buffer size only, not on the number of
// threads. On accelerators one generator fills the whole buffer (the kernel
// is already parallel).
class ChunkedNormal {
 public:
  static constexpr int64_t kChunk = int64_t{1} << 16;

  ChunkedNormal(torch::Device device, uint64_t seed, int64_t numel);

  // Overwrites `out` (contiguous, numel as constructed) with N(0, 1) draws.
  void fill(torch::Tensor& out);

  // Every chunk generator's state (Note [Sampler checkpoints]).
  void save(torch::serialize::OutputArchive& archive, const std::string& prefix) const;
  void load(torch::serialize::InputArchive& archive, const std::string& prefix);

 private:
  int64_t numel_;
  std::vector<at::Generator> gens_;
};

}  // namespace bnn::samplers
