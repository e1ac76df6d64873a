#include "samplers/sampler.h"

namespace bnn::samplers {

torch::Tensor Sampler::step() {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = do_step();
  ++steps_;
  return loss;
}

}  // namespace bnn::samplers
