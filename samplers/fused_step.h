// The fused passes of a sampler step, on the CPU (samplers/fused_kernels.h,
// Note [Fused steps]: split between threads, with the generator jumps, the
// build of the kernels and the rounding that match ATen) and on a GPU
// (samplers/buffered_passes.h, Note [Buffered passes]).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "samplers/fused_kernels.h"
#include "samplers/random.h"

namespace bnn::samplers {

// How ATen's CPU `a.add_(b, alpha)` rounds a + alpha b in float32 on this
// machine: kFma where every element is fma(b, alpha, a) (ATen's vectorised
// kernels on CPUs with FMA), kSeparate where every element is the rounded
// product plus a, nothing when the elements disagree (the fused path is then
// off). Measured once, on a vector long enough for ATen's vectorised loop and
// its scalar tail.
std::optional<detail::Rounding> aten_add_rounding();

// How ATen's `a.add_(b, alpha)` rounds on `device` (the CPU: as above; a
// GPU: measured once per device type on that device).
std::optional<detail::Rounding> aten_add_rounding(torch::Device device);

// The kernels' build this CPU runs ("avx2+fma" or "baseline"), ATen's
// rounding, whether BNN_FUSED_STEPS turns the fused path off or to the
// buffered passes, and whether bnn's CUDA kernels are built, for `bnn version`.
std::string fused_step_description();

// Which fused path a chain takes (BNN_FUSED_STEPS in the environment).
enum class FusedChoice {
  kAuto,      // unset or "1": the CPU passes on the CPU, the buffered passes on a GPU
  kOff,       // "0": the tensor operations everywhere
  kBuffered,  // "buffered": the buffered passes on the CPU too (to check the GPU's code)
};
// Throws std::invalid_argument naming the variable for any other value.
FusedChoice fused_choice_from_environment();

// The parts of a sampler step that lie between two gradients, each as one
// pass over the vectors (Note [Fused steps], Note [Buffered passes]). Each
// pass updates x and v of `span` in place (the whole vectors) and returns
// whether the caller must bounce: the CPU passes report a coordinate outside
// the box, the buffered passes reflect inside the pass and return false.
// Passes that draw take their normals from the sampler's generator, which
// moves on as one fill of the sampler's noise buffer would move it.
class FusedPasses {
 public:
  virtual ~FusedPasses() = default;
  // UBU's U(h/2), after the kick by G (the terms) with minus_h where `kick` is set.
  virtual bool ubu(const detail::PassSpan& span, const detail::UbuHalf& c, const detail::ForceTerms* kick,
                   float minus_h) = 0;
  // BAOAB's B(h/2) A(h/2) from the stored force.
  virtual bool kick_drift(const detail::PassSpan& span, const float* force, float minus_half_h, float half_h) = 0;
  // BAOAB's O A(h/2).
  virtual bool ou_drift(const detail::PassSpan& span, float eta, float sigma, float half_h) = 0;
  // BAOAB's closing B(h/2); writes G to force_out.
  virtual void kick(const detail::PassSpan& span, const detail::ForceTerms& terms, float* force_out,
                    float minus_half_h) = 0;
  virtual bool euler(const detail::PassSpan& span, const detail::ForceTerms& terms, float h, float friction,
                     float minus_h, float sigma) = 0;
  virtual bool sgld(const detail::PassSpan& span, const detail::ForceTerms& terms, float minus_h, float sigma) = 0;
  // `thermostat`: one float on the chain's device, the factor v is multiplied by.
  virtual bool sgnht(const detail::PassSpan& span, const detail::ForceTerms& terms, const torch::Tensor& thermostat,
                     float minus_h, float sigma, float h) = 0;
  // "cpu passes" or "buffered passes on cpu" / "on cuda:0", for messages and tests.
  virtual std::string name() const = 0;
};

// The fused passes for a chain with parameters `x`, velocity `v`, anchor
// `anchor`, the oracle's gradient `gradient` and the estimator's force
// `force`, whose generator `normal` draws into `noise` (1 or 2 times x's
// size), in the box of half-width rho_max (inf: no box). Null where no fused
// path can run it: not all float32, contiguous and on one device, ATen's
// rounding there unknown, a GPU without bnn's CUDA kernels, or kOff.
std::unique_ptr<FusedPasses> make_fused_passes(FusedChoice choice, ChunkedNormal& normal, const torch::Tensor& noise,
                                               const torch::Tensor& x, const torch::Tensor& v,
                                               const torch::Tensor& anchor, const torch::Tensor& gradient,
                                               const torch::Tensor& force, double rho_max);

// Whether this build has bnn's CUDA kernels (cmake/cuda_kernels.cmake).
bool cuda_kernels_built();

// The largest float <= w (+inf for w = inf), so that comparing a float with
// it is comparing with w.
float box_width(double w);

}  // namespace bnn::samplers
