#include "samplers/random.h"

#include <mutex>

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

}  // namespace bnn::samplers
