// What the process's loaded shared objects say about it: where its
// std::filesystem calls land (Note [libstdc++ before LibTorch],
// cmake/libstdcxx_first.cmake), and which CUDA it has (Note [Why no CUDA]).
#pragma once

#include <string>

#include <torch/torch.h>

namespace bnn::runtime {

// The path of the shared object whose std::filesystem::remove_all(const
// path&) is found first in the global search order (the one bnn's calls bind
// to), or a short reason when it cannot be told.
std::string filesystem_library();

// Note [Why no CUDA]
// ~~~~~~~~~~~~~~~~~~
// torch::cuda::is_available() is false for four different reasons that a
// user fixes in four different ways: a CPU build of LibTorch; CUDA_VISIBLE_
// DEVICES hiding the GPUs; no NVIDIA driver; a driver older than the CUDA
// runtime LibTorch was built with (a CUDA 13 wheel on a node whose driver
// stops at CUDA 12, the usual case on a cluster). LibTorch's C++ API says
// none of this, so bnn reads it from the loaded objects: a libtorch_cuda
// library (present in every CUDA build), and the CUDA runtime's own
// cudaRuntimeGetVersion and cudaDriverGetVersion, plain C functions found by
// name, so no CUDA header is needed and a CPU build answers too.
struct CudaLinkage {
  std::string torch_cuda;       // the loaded libtorch_cuda library's path; empty for a CPU build
  std::string runtime_library;  // the object defining cudaRuntimeGetVersion; empty if none is loaded
  int runtime_version = 0;      // as CUDART_VERSION: 1000 * major + 10 * minor (13000 is 13.0); 0 unknown
  int driver_version = 0;       // the newest CUDA the driver runs, the same form; 0 when no driver answers
};

CudaLinkage cuda_linkage();

// "12.8" from 12080.
std::string cuda_version_text(int version);

// `bnn version`'s line: "runtime 13.0 (PATH), driver for CUDA 13.0" or
// "none: a CPU build of LibTorch", with a warning when the driver is older.
std::string describe_cuda(const CudaLinkage& linkage);

// The likeliest reason no CUDA device is visible, one clause for an error
// line; visible_devices is CUDA_VISIBLE_DEVICES (nullptr when unset).
std::string why_no_cuda_device(const CudaLinkage& linkage, const char* visible_devices);

// Note [Arithmetic platform]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A member's bits depend on more than its device, threads and design
// (Note [Member checkpoints]): on the kernels that do the arithmetic. Those
// are chosen by the LibTorch version; on a CPU by the x86 vector extensions
// ATen dispatches on (AVX-512 with VL, BW, DQ and FMA; else AVX2 with FMA;
// else neither; ATEN_CPU_CAPABILITY=default, avx2 or avx512 forces one), by
// OpenBLAS, which picks its kernels by the CPU's core type, and by oneDNN,
// which runs LibTorch's CPU convolutions with the widest instruction set it
// finds (ONEDNN_MAX_CPU_ISA caps it; recorded as oneDNN's own number); on a
// GPU by the card's model and compute capability (cuDNN and cuBLAS choose
// algorithms by it) and the CUDA runtime. arithmetic_platform names them,
// e.g. "LibTorch 1.13.0, x86-64 AVX-512, OpenBLAS Cooperlake, oneDNN 2.6.3
// ISA 0x27" or "LibTorch 2.11.0, NVIDIA H100 80GB HBM3 (sm_90), CUDA 13.0".
// A library whose symbols LibTorch hides (the oneDNN inside a pip wheel) is
// left out. Two equal descriptions do not promise the same bits (a driver
// or a cuDNN wheel may differ beneath them); two different ones say the
// rounding may differ.
std::string arithmetic_platform(torch::Device device);

// ATen's CPU kernel set as arithmetic_platform names it: "x86-64 AVX-512",
// "x86-64 AVX2" or "x86-64 without AVX2" (the architecture's name off x86),
// from ATEN_CPU_CAPABILITY as ATen read it at the process's start.
std::string cpu_vector_unit();

// The same for a given value of ATEN_CPU_CAPABILITY (nullptr: unset); a
// value ATen ignores is ignored.
std::string cpu_vector_unit_for(const char* capability);

}  // namespace bnn::runtime
