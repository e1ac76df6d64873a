#include "src/runtime/device_streams.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include <torch/cuda.h>

#if defined(BNN_HAVE_C10_CUDA)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace bnn::runtime {

#if defined(BNN_HAVE_C10_CUDA)
struct WorkerStream::Impl {
  explicit Impl(c10::DeviceIndex index)
      : guard(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index)) {}
  ~Impl() {
    try {
      guard.current_stream().synchronize();
    } catch (const std::exception&) {
      // A failed device: the member's own error has been reported already.
    }
  }
  c10::cuda::CUDAStreamGuard guard;
};

WorkerStream::WorkerStream(torch::Device device) {
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(device.has_index() ? device.index() : 0);
}

bool has_worker_streams() { return true; }

std::optional<DeviceMemory> device_memory(torch::Device device) {
  if (!device.is_cuda()) return std::nullopt;
  c10::cuda::CUDAGuard guard(device.has_index() ? device.index() : 0);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return DeviceMemory{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}
#else
struct WorkerStream::Impl {};

WorkerStream::WorkerStream(torch::Device) {}

bool has_worker_streams() { return false; }

std::optional<DeviceMemory> device_memory(torch::Device) { return std::nullopt; }
#endif

WorkerStream::~WorkerStream() = default;

bool WorkerStream::own_stream() const { return impl_ != nullptr; }

void synchronize_device(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

std::optional<int64_t> parse_mem_available(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kib) == 1) return static_cast<int64_t>(kib) * 1024;
  }
  return std::nullopt;
}

std::optional<int64_t> host_available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::optional<int64_t> available =
      meminfo ? parse_mem_available(std::string(std::istreambuf_iterator<char>(meminfo), {})) : std::nullopt;
  // cgroup v2: memory.max ("max" or bytes) less memory.current.
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  long long current = 0;
  if (max_file >> max_text && max_text != "max" && current_file >> current) {
    try {
      const int64_t left = std::max<int64_t>(0, static_cast<int64_t>(std::stoll(max_text)) - current);
      if (!available || left < *available) available = left;
    } catch (const std::exception&) {
    }
  }
  return available;
}

}  // namespace bnn::runtime
