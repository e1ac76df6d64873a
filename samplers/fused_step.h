// Runs the fused passes of samplers/fused_kernels.h for one sampler: splits
// the coordinates between threads, prepares the generator jumps, and picks
// the build of the kernels and the rounding that match ATen
// (Note [Fused steps] in samplers/fused_kernels.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
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

// The kernels' build this CPU runs ("avx2+fma" or "baseline"), and whether the
// fused path is on by default (BNN_FUSED_STEPS=0 in the environment turns it
// off), for `bnn version`.
std::string fused_step_description();

class FusedPasses {
 public:
  // The fused path can run on `x` (the sampler's parameters) with noise from
  // `noise`: both float32, contiguous, on the CPU, and ATen's rounding known.
  static bool supported(const torch::Tensor& x, const torch::Tensor& noise);
  // BNN_FUSED_STEPS is not "0".
  static bool enabled_by_default();

  // `normal` is the sampler's noise generator, its buffer 1 or 2 times dim
  // elements (UBU draws elements j and dim + j for coordinate j).
  FusedPasses(ChunkedNormal& normal, int64_t dim);

  using Pass = std::function<bool(const detail::PassSpan&, const detail::NoiseBuffer&)>;
  // Runs `pass` on every piece of [0, dim) in parallel, `span` giving x, v,
  // the anchor and the box; with `draws`, the pass draws from the generator,
  // which then moves on as one fill of the buffer would have moved it.
  // Returns whether some piece reported a coordinate outside the box.
  bool run(const detail::PassSpan& span, bool draws, const Pass& pass);

  const detail::FusedKernels& kernels() const { return kernels_; }
  detail::Rounding rounding() const { return rounding_; }

 private:
  void prepare_jump(int64_t position);

  ChunkedNormal& normal_;
  int64_t dim_;
  const detail::FusedKernels& kernels_;
  detail::Rounding rounding_;
  std::vector<detail::NormalLanes> next_;
  std::vector<std::unique_ptr<detail::LaneJump>> jumps_;
  std::vector<const detail::LaneJump*> jump_table_;
  std::vector<int64_t> bounds_;
  std::vector<char> flags_;
};

// The largest float <= w (+inf for w = inf), so that comparing a float with
// it is comparing with w.
float box_width(double w);

}  // namespace bnn::samplers
