#include "src/runtime/device_streams.h"

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

}  // namespace bnn::runtime
