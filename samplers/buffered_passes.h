// The fused sampler passes for chains whose noise is drawn into a buffer
// first: on a GPU, and on the host to check the GPU's code (Note [Buffered
// passes]). Plain C++ that nvcc also compiles; samplers/fused_step.h drives it.
#pragma once

#include <cstdint>

#include "samplers/fused_kernels.h"

namespace bnn::samplers::detail {

// Note [Buffered passes]
// ~~~~~~~~~~~~~~~~~~~~~~
// On a GPU a sampler step written with tensor operations launches a kernel
// per operation: UBU's step is two noise draws, ten updates and two bounces of
// about eighteen operations each, some fifty kernels, which a small network's
// step (launch-bound on an H100) pays for. The buffered passes make the same
// parts of a step as the CPU's fused passes (Note [Fused steps]), with two
// differences:
//
// - the noise: a pass's normals are drawn into the sampler's noise buffer
//   first, by the chain's own generator (ChunkedNormal, LibTorch's Philox on
//   CUDA), exactly as the tensor path draws them, so the two paths see the
//   same normals and checkpoints do not depend on the path;
// - the bounce: each coordinate is reflected inside the pass, with the
//   operations of reflect_into_box (samplers/bounce.h) on that coordinate
//   (coordinate_updates.h, `reflect`), instead of a report and a second pass:
//   on a GPU, asking whether any coordinate left the box would make the host
//   wait.
//
// So a UBU step is four kernels (a draw and a pass, twice) besides the
// gradient, and every other sampler's two to four. The arithmetic is that of
// samplers/coordinate_updates.h, shared with the CPU passes; `pass` below
// says which update a pass makes. The same code runs on the host
// (BNN_FUSED_STEPS=buffered, one thread), where it gives the tensor path's
// bits: FusedSteps.BufferedPassesGiveTheTensorPathsBits checks on a machine
// without a GPU which normals each pass reads, the order of its operations
// and the bounce. What only a GPU runs is the device branch of
// coordinate_updates.h (the rounding intrinsics, the device's fmodf and
// floorf, the division as ATen's CUDA kernel makes it);
// CudaSamplers.BufferedPassesAgreeWithTheTensorOperations compares the two
// paths there. The kernels round each operation as ATen's CUDA kernels are
// written to, but ATen does not promise that, so the GPU test asks for
// agreement to float rounding, not for the same bits.
enum class BufferedPass {
  kUbu,        // U(h/2): ubu, noise[j] and noise[n + j]
  kUbuKick,    // the kick by G with minus_h, then U(h/2)
  kKickDrift,  // BAOAB's B(h/2) A(h/2): v kicked by force[j] with minus_h, x drifts by h
  kOuDrift,    // BAOAB's O A(h/2): friction = e^{-gamma h}, sigma, h = h/2
  kKick,       // BAOAB's closing B(h/2): force_out[j] = G, v kicked with minus_h; no bounce
  kEuler,      // Euler-Maruyama: h, friction = 1 - h gamma, minus_h, sigma
  kSgld,       // SGLD: minus_h, sigma
  kSgnht,      // SGNHT: h, friction = the thermostat factor, minus_h, sigma
};

struct BufferedArgs {
  BufferedPass pass = BufferedPass::kUbu;
  Rounding rounding = Rounding::kFma;
  float* x = nullptr;
  float* v = nullptr;
  const float* anchor = nullptr;
  int64_t n = 0;                // coordinates
  const float* noise = nullptr;  // this pass's normals (2n for UBU)
  ForceTerms terms;             // G's terms, whole vectors, for the passes that form G
  const float* force = nullptr;
  float* force_out = nullptr;
  UbuHalf ubu{};
  float h = 0, friction = 0, minus_h = 0, sigma = 0;
  const float* friction_from = nullptr;  // where set, the friction is read here (SGNHT's thermostat, on the device)
  // The box as reflect_into_box sees it (coordinate_updates.h, Reflection);
  // no bounce when !bounded.
  bool bounded = false;
  float w = 0, two_w = 0, four_w = 0, inv_two_w = 0;
};

// Runs the pass on the host, one coordinate after another.
void run_buffered_pass_host(const BufferedArgs& args);

// Launches the pass on `stream` (a cudaStream_t of the device that holds the
// vectors) and returns nullptr, or CUDA's error message. Defined only where
// bnn is built with its CUDA kernels (cmake/cuda_kernels.cmake).
const char* launch_buffered_pass_cuda(const BufferedArgs& args, void* stream);

}  // namespace bnn::samplers::detail
