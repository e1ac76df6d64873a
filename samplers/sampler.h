// The stepper interface every sampler implements.
//
// Like torch::optim::LRScheduler, the public step() is not virtual: it holds a
// NoGradGuard and the bookkeeping (step counter) and calls the protected
// do_step() hook that a sampler overrides. A sampler owns its state (velocity,
// anchor x*, generators, batch order, step counter) and moves the oracle's
// flat parameter vector in place.
//
// Thread-safety: a sampler is used by one thread at a time.
// Reproducibility: same seed, same device, same thread count -> identical
// chains (Note [RNG streams] in samplers/random.h).
#pragma once

#include <string>

#include <torch/torch.h>

namespace bnn::samplers {

class Sampler {
 public:
  virtual ~Sampler() = default;

  // One step. Returns the summed cross-entropy of the minibatch that the step
  // evaluated (0-dim tensor on device; reading it synchronises, so callers
  // accumulate and read once per epoch).
  torch::Tensor step();

  int64_t steps_taken() const { return steps_; }
  virtual double step_size() const = 0;
  virtual std::string pretty_string() const = 0;
  // Velocity (for diagnostics and tests).
  virtual const torch::Tensor& velocity() const = 0;

 protected:
  virtual torch::Tensor do_step() = 0;

 private:
  int64_t steps_ = 0;
};

}  // namespace bnn::samplers
