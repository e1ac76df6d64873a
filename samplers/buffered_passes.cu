// The buffered passes as CUDA kernels (Note [Buffered passes] in
// samplers/buffered_passes.h): one thread per coordinate, in a grid-stride
// loop, on the stream the caller gives (the member's current stream).
// Built only with a CUDA compiler (cmake/cuda_kernels.cmake); no LibTorch
// header, so it does not depend on LibTorch's version.
#include <cuda_runtime.h>

#include <algorithm>

#include "samplers/buffered_passes_impl.h"

namespace bnn::samplers::detail {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

template <Rounding R, ForceMode M, BufferedPass P>
__global__ void __launch_bounds__(kThreads) buffered_kernel(const BufferedArgs args) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < args.n; i += stride) {
    buffered_coordinate<R, M, P>(args, i);
  }
}

}  // namespace

const char* launch_buffered_pass_cuda(const BufferedArgs& args, void* stream) {
  if (args.n <= 0) return nullptr;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((args.n + kThreads - 1) / kThreads, kMaxBlocks));
  with_variant(args, [&](auto r, auto m, auto p) {
    buffered_kernel<decltype(r)::value, decltype(m)::value, decltype(p)::value>
        <<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  });
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace bnn::samplers::detail
