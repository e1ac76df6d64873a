#include "samplers/batch_order.h"

#include "samplers/random.h"
#include "samplers/sampler.h"

namespace bnn::samplers {

BatchOrderKind parse_batch_order(const std::string& name) {
  if (name == "sms") return BatchOrderKind::kSymmetric;
  if (name == "rr") return BatchOrderKind::kReshuffle;
  if (name == "iid") return BatchOrderKind::kWithReplacement;
  TORCH_CHECK(false, "unknown batch order '", name, "'; valid: sms, rr, iid");
}

std::string to_string(BatchOrderKind kind) {
  switch (kind) {
    case BatchOrderKind::kSymmetric: return "sms";
    case BatchOrderKind::kReshuffle: return "rr";
    case BatchOrderKind::kWithReplacement: return "iid";
  }
  TORCH_INTERNAL_ASSERT(false, "unhandled BatchOrderKind");
}

BatchOrder::BatchOrder(BatchOrderKind kind, int64_t num_batches, uint64_t seed)
    : kind_(kind), num_batches_(num_batches), gen_(make_generator(torch::kCPU, seed)) {
  TORCH_CHECK(num_batches >= 1, "number of minibatches must be at least 1, got ", num_batches);
  cycle_length_ = kind == BatchOrderKind::kSymmetric ? 2 * num_batches : num_batches;
  position_ = cycle_length_;  // forces a fresh permutation on the first call
}

void BatchOrder::refill() {
  const torch::Tensor p = torch::randperm(num_batches_, gen_, torch::TensorOptions().dtype(torch::kLong));
  perm_.assign(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + num_batches_);
  position_ = 0;
}

int64_t BatchOrder::next() {
  if (position_ == cycle_length_) {
    if (kind_ == BatchOrderKind::kWithReplacement) {
      position_ = 0;  // a cycle of N_m draws, for the hook only
    } else {
      refill();
    }
    ++cycle_;
    if (hook_) hook_(cycle_);
  }
  const int64_t k = position_++;
  if (kind_ == BatchOrderKind::kWithReplacement) {
    return torch::randint(num_batches_, {1}, gen_, torch::TensorOptions().dtype(torch::kLong)).item<int64_t>();
  }
  return k < num_batches_ ? perm_[k] : perm_[2 * num_batches_ - 1 - k];
}

void BatchOrder::save(torch::serialize::OutputArchive& archive, const std::string& prefix) const {
  write_generator(archive, prefix + ".generator", gen_);
  archive.write(prefix + ".permutation",
                torch::tensor(std::vector<int64_t>(perm_.begin(), perm_.end()), torch::kLong));
  archive.write(prefix + ".position", torch::tensor(position_, torch::kLong));
  archive.write(prefix + ".cycle", torch::tensor(cycle_, torch::kLong));
}

void BatchOrder::load(torch::serialize::InputArchive& archive, const std::string& prefix) {
  read_generator(archive, prefix + ".generator", gen_);
  const torch::Tensor p = read_tensor(archive, prefix + ".permutation").contiguous();
  perm_.assign(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + p.numel());
  position_ = read_tensor(archive, prefix + ".position").item<int64_t>();
  TORCH_CHECK(position_ >= 0 && position_ <= cycle_length_ &&
                  (position_ == cycle_length_ || kind_ == BatchOrderKind::kWithReplacement ||
                   static_cast<int64_t>(perm_.size()) == num_batches_),
              "sampler checkpoint: batch order state does not match ", num_batches_, " minibatches");
  // Checkpoints of bnn before cycles were counted have none: the count
  // matters only to redrawn batches, which came with it.
  torch::Tensor cycle;
  cycle_ = archive.try_read(prefix + ".cycle", cycle) ? cycle.item<int64_t>() : (position_ == cycle_length_ ? -1 : 0);
  TORCH_CHECK(cycle_ >= -1, "sampler checkpoint: batch order cycle ", cycle_, " is negative");
}

}  // namespace bnn::samplers
