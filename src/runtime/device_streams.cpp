#include "src/runtime/device_streams.h"

#include "src/runtime/cgroups.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <torch/cuda.h>

#if defined(BNN_HAVE_C10_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace bnn::runtime {

#if defined(BNN_HAVE_C10_CUDA)
struct WorkerStream::Impl {
  Impl(c10::DeviceIndex index, bool own) {
    if (own) {
      stream.emplace(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index));
    } else {
      device.emplace(index);
    }
  }
  ~Impl() {
    if (!stream) return;
    try {
      stream->current_stream().synchronize();
    } catch (const std::exception&) {
      // A failed device: the member's own error has been reported already.
    }
  }
  std::optional<c10::cuda::CUDAStreamGuard> stream;
  std::optional<c10::cuda::CUDAGuard> device;
};

WorkerStream::WorkerStream(torch::Device device, bool own_stream) {
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(device.has_index() ? device.index() : 0, own_stream);
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

std::optional<std::string> device_model(torch::Device device) {
  if (!device.is_cuda()) return std::nullopt;
  cudaDeviceProp properties{};
  const int index = device.has_index() ? device.index() : c10::cuda::current_device();
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ")";
}
#else
struct WorkerStream::Impl {};

WorkerStream::WorkerStream(torch::Device, bool) {}

bool has_worker_streams() { return false; }

std::optional<DeviceMemory> device_memory(torch::Device) { return std::nullopt; }

std::optional<std::string> device_model(torch::Device) { return std::nullopt; }
#endif

WorkerStream::~WorkerStream() = default;

bool WorkerStream::own_stream() const {
#ifdef BNN_HAVE_C10_CUDA
  return impl_ != nullptr && impl_->stream.has_value();
#else
  return false;
#endif
}

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
  const auto left = cgroup_memory_left(read_self_cgroup());
  if (left && (!available || *left < *available)) available = left;
  return available;
}

}  // namespace bnn::runtime
