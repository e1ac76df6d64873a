// One flat contiguous buffer for all of a module's parameters, and one for
// their gradients, with the module's parameters and gradients re-pointed to be
// views into them. Samplers and SWA then update d floats with a few
// whole-vector operations instead of looping over parameter tensors.
//
// Autograd accumulates into an existing .grad in place, so after zero_grad()
// a backward pass writes straight into grads(). Never call an optimizer's
// zero_grad() with set_to_none on these parameters: it would detach them.
#pragma once

#include <torch/torch.h>

namespace bnn::models {

class FlatParameters {
 public:
  // Moves every trainable parameter of `module` (in named_parameters order)
  // into the flat buffers. The module must outlive this object.
  explicit FlatParameters(torch::nn::Module& module);

  torch::Tensor& values() { return values_; }
  torch::Tensor& grads() { return grads_; }
  // 1 for parameters whose name does not end in "bias" (the prior's x_w).
  const torch::Tensor& prior_mask() const { return prior_mask_; }
  // Puts the prior on every parameter, biases included (prior.biases).
  void include_biases_in_prior() { prior_mask_.fill_(1.0); }
  int64_t numel() const { return values_.numel(); }
  void zero_grad() { grads_.zero_(); }

 private:
  torch::Tensor values_;
  torch::Tensor grads_;
  torch::Tensor prior_mask_;
};

}  // namespace bnn::models
