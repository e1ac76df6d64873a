// Seeds and generators for samplers and members.
//
// Note [RNG streams]: randomness is never global. A run seed is split into
// independent 64-bit streams with derive_seed(seed, stream) (SplitMix64 of the
// pair); each member derives its own seed from the run seed and its index, and
// each chain owns two generators derived from the member seed: one for
// Gaussian noise (ChunkedNormal: bnn's own kernel for float32 on the CPU,
// LibTorch's generator of the parameters' device otherwise), one on the CPU
// for minibatch order. Same seed, same device: identical draws, whatever the
// thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "samplers/normal_kernel.h"

namespace bnn::samplers {

// A well-mixed 64-bit seed for stream `stream` of `seed`.
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// A fresh generator of the device's type, seeded with `seed`.
at::Generator make_generator(torch::Device device, uint64_t seed);

// Gaussian noise for a flat buffer, drawn in parallel on the CPU.
//
// The buffer is cut into fixed chunks of kChunk elements, each with its own
// generator (stream c of the seed), and the chunks are filled with
// at::parallel_for, so the draws depend on the seed and the buffer size only,
// not on the number of threads. For float32 buffers on the CPU each chunk's
// generator is bnn's own vectorised kernel (Note [CPU normal kernel] in
// samplers/normal_kernel.h, about 2.5x faster per core than LibTorch's CPU
// normal_, which for small networks cost more than the gradient); other
// dtypes on the CPU use LibTorch's CPU generator per chunk. On accelerators
// one LibTorch generator fills the whole buffer (the kernel is already
// parallel).
class ChunkedNormal {
 public:
  static constexpr int64_t kChunk = int64_t{1} << 16;

  // For buffers with the device, dtype and number of elements of `like`.
  ChunkedNormal(const torch::Tensor& like, uint64_t seed);

  // Overwrites `out` (contiguous, like the constructor's buffer) with N(0, 1) draws.
  void fill(torch::Tensor& out);

  // Every chunk generator's state (Note [Sampler checkpoints]).
  void save(torch::serialize::OutputArchive& archive, const std::string& prefix) const;
  void load(torch::serialize::InputArchive& archive, const std::string& prefix);

  // The generator of every chunk, for float32 buffers on the CPU (empty
  // otherwise): the fused sampler passes draw from them directly
  // (samplers/fused_step.h).
  std::vector<detail::NormalLanes>& chunk_generators() { return lanes_; }
  int64_t numel() const { return numel_; }

 private:
  int64_t numel_;
  torch::Device device_;
  torch::ScalarType dtype_;
  std::vector<detail::NormalLanes> lanes_;  // float32 on the CPU
  std::vector<at::Generator> gens_;         // otherwise
};

}  // namespace bnn::samplers
