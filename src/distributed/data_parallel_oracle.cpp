#include "src/distributed/data_parallel_oracle.h"

namespace bnn::distributed {

DataParallelOracle::DataParallelOracle(samplers::GradientOracle& shard, ProcessGroup& group)
    : shard_(shard), group_(group) {}

torch::Tensor DataParallelOracle::evaluate(int64_t b) {
  const torch::Tensor shard_loss = shard_.evaluate(b);
  torch::NoGradGuard no_grad;
  torch::Tensor grad = shard_.gradient();
  const int64_t d = grad.numel();
  if (!packed_.defined()) packed_ = torch::empty({d + 1}, grad.options());
  packed_.narrow(0, 0, d).copy_(grad);
  packed_.narrow(0, d, 1).copy_(shard_loss.reshape({1}));
  group_.all_reduce_sum(packed_);
  grad.copy_(packed_.narrow(0, 0, d));
  return packed_[d].clone();
}

torch::Tensor DataParallelOracle::loss(int64_t b) {
  torch::Tensor total = shard_.loss(b).reshape({1}).clone();
  group_.all_reduce_sum(total);
  return total[0];
}

torch::Tensor DataParallelOracle::evaluate_per_example(int64_t b) {
  (void)b;
  TORCH_CHECK(false, "per-example gradients (sampler nogin) are not available in a data-parallel chain "
                     "(--distributed): the rows are not gathered across ranks");
}

}  // namespace bnn::distributed
