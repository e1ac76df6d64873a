#include "samplers/random.h"

#include <cstring>
#include <mutex>

#include <ATen/Parallel.h>

#include "samplers/fused_kernels.h"
#include "samplers/sampler.h"
#include "samplers/splitmix64.h"

namespace bnn::samplers {
uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  return splitmix64(splitmix64(seed) ^ splitmix64(stream + 0x632be59bd9b4e019ULL));
}

at::Generator make_generator(torch::Device device, uint64_t seed) {
  at::Generator gen = at::globalContext().defaultGenerator(device).clone();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
  return gen;
}

static_assert(ChunkedNormal::kChunk == detail::kNoiseChunk, "the fused passes assume ChunkedNormal's chunks");

ChunkedNormal::ChunkedNormal(const torch::Tensor& like, uint64_t seed)
    : numel_(like.numel()), device_(like.device()), dtype_(like.scalar_type()) {
  const bool on_cpu = device_.is_cpu();
  const int64_t chunks = on_cpu ? std::max<int64_t>(1, (numel_ + kChunk - 1) / kChunk) : 1;
  if (on_cpu && dtype_ == torch::kFloat) {
    lanes_.resize(static_cast<size_t>(chunks));
    for (int64_t c = 0; c < chunks; ++c) {
      detail::seed_normal_lanes(lanes_[static_cast<size_t>(c)], derive_seed(seed, c));
    }
  } else {
    for (int64_t c = 0; c < chunks; ++c) gens_.push_back(make_generator(device_, derive_seed(seed, c)));
  }
}

void ChunkedNormal::fill(torch::Tensor& out) {
  TORCH_CHECK(out.numel() == numel_ && out.is_contiguous() && out.device() == device_ && out.scalar_type() == dtype_,
              "ChunkedNormal: expected a contiguous ", dtype_, " buffer of ", numel_, " elements on ", device_,
              ", got ", out.scalar_type(), " ", out.sizes(), " on ", out.device());
  if (!device_.is_cpu()) {
    out.normal_(0.0, 1.0, gens_[0]);
    return;
  }
  torch::Tensor flat = out.view({-1});
  const int64_t chunks = static_cast<int64_t>(lanes_.empty() ? gens_.size() : lanes_.size());
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t start = c * kChunk, length = std::min(kChunk, numel_ - start);
      if (lanes_.empty()) {
        flat.narrow(0, start, length).normal_(0.0, 1.0, gens_[static_cast<size_t>(c)]);
      } else {
        detail::fill_standard_normal(lanes_[static_cast<size_t>(c)], flat.data_ptr<float>() + start, length);
      }
    }
  });
}

// Lane states are stored bit for bit as int64: {chunks, 4, kNormalLanes}.
static_assert(sizeof(detail::NormalLanes) == 4 * detail::kNormalLanes * sizeof(int64_t),
              "NormalLanes must be exactly its 4 x kNormalLanes state words");
void ChunkedNormal::save(torch::serialize::OutputArchive& archive, const std::string& prefix) const {
  if (!lanes_.empty()) {
    const auto chunks = static_cast<int64_t>(lanes_.size());
    torch::Tensor state = torch::empty({chunks, 4, detail::kNormalLanes}, torch::kLong);
    std::memcpy(state.data_ptr<int64_t>(), lanes_.data(), lanes_.size() * sizeof(detail::NormalLanes));
    archive.write(prefix + ".xoshiro256", state);
    return;
  }
  archive.write(prefix + ".chunks", torch::tensor(static_cast<int64_t>(gens_.size()), torch::kLong));
  for (size_t c = 0; c < gens_.size(); ++c) write_generator(archive, prefix + "." + std::to_string(c), gens_[c]);
}

namespace {

// The noise state of a checkpoint written where the noise came from the other
// kind of generator (float32 on the CPU: xoshiro256 lanes; elsewhere: LibTorch's
// generators, CUDA's Philox on a GPU) cannot go on here: a member sampled on a
// GPU and resumed on the CPU, or the other way. Refused, naming both and what
// to do, rather than as a key missing from the archive.
void refuse_other_noise(torch::serialize::InputArchive& archive, const std::string& prefix, bool lanes_here,
                        const torch::Device& device, torch::ScalarType dtype) {
  torch::Tensor probe;
  if (archive.try_read(prefix + (lanes_here ? ".xoshiro256" : ".chunks"), probe)) return;
  if (!archive.try_read(prefix + (lanes_here ? ".chunks" : ".xoshiro256"), probe)) return;  // the usual error
  TORCH_CHECK(false, "sampler checkpoint: its noise state is ",
              lanes_here ? "LibTorch's generators' (a chain sampled on a GPU, in float64, or by a bnn older than its "
                           "own float32 generator)"
                         : "bnn's float32 generator's (a chain sampled on the CPU in float32)",
              ", and this chain goes on on ", device, " in ", dtype,
              ", whose noise comes from the other kind, so it cannot continue; resume it where it was sampled "
              "(--device), or delete its checkpoint.pt to train the member again");
}

}  // namespace

void ChunkedNormal::load(torch::serialize::InputArchive& archive, const std::string& prefix) {
  refuse_other_noise(archive, prefix, !lanes_.empty(), device_, dtype_);
  if (!lanes_.empty()) {
    const torch::Tensor state = read_tensor(archive, prefix + ".xoshiro256");
    const auto chunks = static_cast<int64_t>(lanes_.size());
    TORCH_CHECK(state.scalar_type() == torch::kLong && state.sizes().equals({chunks, 4, detail::kNormalLanes}),
                "sampler checkpoint: noise generator state '", prefix, ".xoshiro256' has shape ", state.sizes(),
                " but this sampler's noise needs [", chunks, ", 4, ", detail::kNormalLanes, "]");
    const torch::Tensor cpu = state.to(torch::kCPU).contiguous();
    std::memcpy(lanes_.data(), cpu.data_ptr<int64_t>(), lanes_.size() * sizeof(detail::NormalLanes));
    return;
  }
  const int64_t chunks = read_tensor(archive, prefix + ".chunks").item<int64_t>();
  TORCH_CHECK(chunks == static_cast<int64_t>(gens_.size()), "sampler checkpoint: ", chunks,
              " noise generators saved but this sampler has ", gens_.size());
  for (size_t c = 0; c < gens_.size(); ++c) read_generator(archive, prefix + "." + std::to_string(c), gens_[c]);
}

}  // namespace bnn::samplers
