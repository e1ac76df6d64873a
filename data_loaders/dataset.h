// In-memory datasets and the fixed minibatch partition of the training split.
//
// A Dataset holds both splits as device-resident tensors, already standardized,
// so training and sampling never touch the host for data. Partition cuts the
// training split once, with a seeded permutation, into N_m = floor(N_D / N_b)
// minibatches of N_b examples (DESIGN.md section 2); the remainder is dropped,
// as in the reference code. The partition is fixed because the control-variate
// gradient stores one g*_b per batch b, and the SMS order revisits each batch.
//
// Reproducibility: the permutation is drawn from a CPU generator seeded with
// the given seed, so the same seed gives the same batches on every device.
// Thread-safety: a Partition is immutable after construction; its const
// methods may be called concurrently.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace bnn::data_loaders {

struct Split {
  torch::Tensor images;  // N x C x H x W float32, standardized, on the dataset's device
  torch::Tensor labels;  // N int64, on the same device

  // The number of examples; 0 for a default-constructed split.
  int64_t size() const;
};

struct Dataset {
  std::string name;
  Split train, test;
  int64_t num_classes = 0;
  std::vector<int64_t> input_shape;  // {C, H, W}
};

// The training split partitioned into N_m fixed minibatches. The permuted
// copy of the used examples is made once, so batch(b) is a view (narrow) of
// one contiguous buffer: no gather and no allocation per step.
// Checks shared by the loaders: limits are >= 0 (0 keeps every example), and
// `dir` is an existing directory (the error names it and the data set).
void check_limits(int64_t train_limit, int64_t test_limit);
void require_directory(const std::filesystem::path& dir, const std::string& dataset_name);

class Partition {
 public:
  // Throws unless 1 <= batch_size <= train.size().
  Partition(const Split& train, int64_t batch_size, uint64_t seed);

  int64_t num_batches() const { return num_batches_; }
  int64_t batch_size() const { return batch_size_; }
  // N_m * N_b, the examples actually used.
  int64_t num_examples() const { return num_batches_ * batch_size_; }

  // Minibatch b, a view; throws unless 0 <= b < num_batches().
  Split batch(int64_t b) const;
  // The first min(k, N_m) batches as one contiguous view, for BatchNorm
  // recalibration; throws unless k >= 1.
  Split first_batches(int64_t k) const;

 private:
  int64_t batch_size_;
  int64_t num_batches_;
  Split examples_;  // the num_examples() used examples, in permuted order
};

}  // namespace bnn::data_loaders
