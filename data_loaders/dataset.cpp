#include "data_loaders/dataset.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace bnn::data_loaders {

int64_t Split::size() const { return labels.defined() ? labels.size(0) : 0; }

Partition::Partition(const Split& train, int64_t batch_size, uint64_t seed)
    : batch_size_(batch_size), num_batches_(0) {
  TORCH_CHECK(train.images.defined() && train.labels.defined(),
              "Partition needs a training split with images and labels");
  const int64_t n = train.size();
  TORCH_CHECK(train.images.dim() >= 1 && train.images.size(0) == n,
              "Partition: the training split has ", train.images.size(0), " images but ", n,
              " labels");
  TORCH_CHECK(batch_size >= 1 && batch_size <= n, "batch size ", batch_size,
              " must be between 1 and the number of training examples, ", n);
  num_batches_ = n / batch_size;

  // The permutation comes from its own CPU generator so that it depends on
  // the seed alone, not on the device or on anyone else's use of the global
  // generator. Only the examples that land in a batch are copied.
  auto generator = at::detail::createCPUGenerator(seed);
  const torch::Tensor order = torch::randperm(n, generator, torch::kLong)
                                  .narrow(0, 0, num_examples())
                                  .to(train.labels.device());
  examples_.images = train.images.index_select(0, order);
  examples_.labels = train.labels.index_select(0, order);
}

Split Partition::batch(int64_t b) const {
  TORCH_CHECK(b >= 0 && b < num_batches_, "batch index ", b, " out of range [0, ", num_batches_,
              ")");
  return Split{examples_.images.narrow(0, b * batch_size_, batch_size_),
               examples_.labels.narrow(0, b * batch_size_, batch_size_)};
}

Split Partition::first_batches(int64_t k) const {
  TORCH_CHECK(k >= 1, "first_batches needs at least one batch, got k = ", k);
  const int64_t count = std::min(k, num_batches_) * batch_size_;
  return Split{examples_.images.narrow(0, 0, count), examples_.labels.narrow(0, 0, count)};
}

void check_limits(int64_t train_limit, int64_t test_limit) {
  TORCH_CHECK(train_limit >= 0, "train_limit must be >= 0 (0 keeps every example), got ", train_limit);
  TORCH_CHECK(test_limit >= 0, "test_limit must be >= 0 (0 keeps every example), got ", test_limit);
}

void require_directory(const std::filesystem::path& dir, const std::string& dataset_name) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error(fmt::format("{}: {} directory does not exist", dir.string(), dataset_name));
  }
}

}  // namespace bnn::data_loaders
