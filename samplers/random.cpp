#include "samplers/random.h"

#include <mutex>

#include <ATen/Parallel.h>

#include "samplers/sampler.h"

namespace bnn::samplers {
namespace {

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  return splitmix64(splitmix64(seed) ^ splitmix64(stream + 0x632be59bd9b4e019ULL));
}

at::Generator make_generator(torch::Device device, uint64_t seed) {
  at::Generator gen = at::globalContext().defaultGenerator(device).clone();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
  return gen;
}

ChunkedNormal::ChunkedNormal(torch::Device device, uint64_t seed, int64_t numel) : numel_(numel) {
  const int64_t chunks = device.is_cpu() ? std::max<int64_t>(1, (numel + kChunk - 1) / kChunk) : 1;
  for (int64_t c = 0; c < chunks; ++c) gens_.push_back(make_generator(device, derive_seed(seed, c)));
}

void ChunkedNormal::fill(torch::Tensor& out) {
  TORCH_CHECK(out.numel() == numel_ && out.is_contiguous(), "ChunkedNormal: expected a contiguous buffer of ",
              numel_, " elements, got ", out.sizes());
  if (gens_.size() == 1) {
    out.normal_(0.0, 1.0, gens_[0]);
    return;
  }
  torch::Tensor flat = out.view({-1});
  at::parallel_for(0, static_cast<int64_t>(gens_.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t start = c * kChunk;
      flat.narrow(0, start, std::min(kChunk, numel_ - start)).normal_(0.0, 1.0, gens_[c]);
    }
  });
}

void ChunkedNormal::save(torch::serialize::OutputArchive& archive, const std::string& prefix) const {
  archive.write(prefix + ".chunks", torch::tensor(static_cast<int64_t>(gens_.size()), torch::kLong));
  for (size_t c = 0; c < gens_.size(); ++c) write_generator(archive, prefix + "." + std::to_string(c), gens_[c]);
}

void ChunkedNormal::load(torch::serialize::InputArchive& archive, const std::string& prefix) {
  const int64_t chunks = read_tensor(archive, prefix + ".chunks").item<int64_t>();
  TORCH_CHECK(chunks == static_cast<int64_t>(gens_.size()), "sampler checkpoint: ", chunks,
              " noise generators saved but this sampler has ", gens_.size());
  for (size_t c = 0; c < gens_.size(); ++c) read_generator(archive, prefix + "." + std::to_string(c), gens_[c]);
}

}  // namespace bnn::samplers
