// Tests for Partition: the fixed, seeded split of the training set into
// N_m = floor(N_D / N_b) minibatches.
#include "data_loaders/dataset.h"

#include "tests/support/error_text.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace bnn::data_loaders {
namespace {

constexpr int64_t kNumExamples = 1003;

// Example i has label i and every pixel equal to i, so a batch's labels
// identify its examples and the pixels check that images stay with labels.
Split numbered_split(int64_t n) {
  Split split;
  split.labels = torch::arange(n, torch::kLong);
  split.images = split.labels.to(torch::kFloat32).view({n, 1, 1, 1}).expand({n, 1, 2, 2}).contiguous();
  return split;
}

using testing::error_of;

torch::Tensor all_batch_labels(const Partition& partition) {
  std::vector<torch::Tensor> labels;
  for (int64_t b = 0; b < partition.num_batches(); ++b) labels.push_back(partition.batch(b).labels);
  return torch::cat(labels);
}

TEST(PartitionTest, DropsTheRemainder) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  EXPECT_EQ(partition.num_batches(), 10);
  EXPECT_EQ(Partition::batches_in(kNumExamples, 100), 10);  // the count without the copy
  EXPECT_EQ(Partition::batches_in(kNumExamples, kNumExamples + 1), 0);
  EXPECT_EQ(partition.batch_size(), 100);
  EXPECT_EQ(partition.num_examples(), 1000);
  for (int64_t b = 0; b < partition.num_batches(); ++b) {
    const Split batch = partition.batch(b);
    EXPECT_EQ(batch.size(), 100);
    EXPECT_EQ(batch.images.sizes(), torch::IntArrayRef({100, 1, 2, 2}));
  }
}

TEST(PartitionTest, BatchesAreDisjointAndKeepImagesWithLabels) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  const torch::Tensor labels = all_batch_labels(partition);
  EXPECT_EQ(std::get<0>(torch::_unique(labels)).numel(), 1000);
  EXPECT_TRUE(labels.ge(0).all().item<bool>());
  EXPECT_TRUE(labels.lt(kNumExamples).all().item<bool>());
  for (int64_t b = 0; b < partition.num_batches(); ++b) {
    const Split batch = partition.batch(b);
    const torch::Tensor expected =
        batch.labels.to(torch::kFloat32).view({-1, 1, 1, 1}).expand_as(batch.images);
    EXPECT_TRUE(torch::equal(batch.images, expected)) << "batch " << b;
  }
}

// Note [Redrawn batches]: a redrawn order cuts the same used examples into
// other batches, each example once, images still with their labels; the
// order depends on its seed alone, and no order is the partition's own.
TEST(PartitionTest, RedrawnBatchesCutTheSameExamplesAfresh) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  const torch::Tensor order = partition.redrawn_order(21);
  std::vector<torch::Tensor> labels;
  int64_t same_as_before = 0;
  for (int64_t b = 0; b < partition.num_batches(); ++b) {
    const Split batch = partition.batch(b, order);
    ASSERT_EQ(batch.size(), 100);
    const torch::Tensor pixels = batch.labels.to(torch::kFloat32).view({-1, 1, 1, 1}).expand_as(batch.images);
    EXPECT_TRUE(torch::equal(batch.images, pixels)) << "batch " << b;
    // Of 100 examples, about 10 were in this batch before (each is with probability 1/10).
    same_as_before += torch::isin(batch.labels, partition.batch(b).labels).sum().item<int64_t>();
    labels.push_back(batch.labels);
    EXPECT_TRUE(torch::equal(partition.batch(b, torch::Tensor()).labels, partition.batch(b).labels));
  }
  EXPECT_TRUE(torch::equal(std::get<0>(torch::sort(torch::cat(labels))),
                           std::get<0>(torch::sort(all_batch_labels(partition)))));
  EXPECT_GT(same_as_before, 50);  // mean 100, sd about 9
  EXPECT_LT(same_as_before, 150);
  EXPECT_TRUE(torch::equal(order, partition.redrawn_order(21)));
  EXPECT_FALSE(torch::equal(order, partition.redrawn_order(22)));
  EXPECT_EQ(error_of([&] { partition.batch(0, order.narrow(0, 0, 999)); }).rfind(
                "a batch order must list the 1000 used examples, got [999]", 0),
            0u);
}

TEST(PartitionTest, ShufflesTheExamples) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  EXPECT_FALSE(torch::equal(partition.batch(0).labels, torch::arange(100, torch::kLong)));
}

TEST(PartitionTest, DeterministicForASeed) {
  const Split train = numbered_split(kNumExamples);
  const Partition first(train, /*batch_size=*/64, /*seed=*/123);
  const Partition again(train, /*batch_size=*/64, /*seed=*/123);
  const Partition other(train, /*batch_size=*/64, /*seed=*/124);
  EXPECT_TRUE(torch::equal(all_batch_labels(first), all_batch_labels(again)));
  EXPECT_FALSE(torch::equal(all_batch_labels(first), all_batch_labels(other)));
}

TEST(PartitionTest, BatchesAreViewsOfOneBuffer) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  const Split first = partition.batch(0);
  const Split third = partition.batch(2);
  EXPECT_TRUE(third.images.is_contiguous());
  EXPECT_EQ(third.images.data_ptr<float>(), first.images.data_ptr<float>() + 2 * 100 * 4);
  EXPECT_EQ(third.labels.data_ptr<int64_t>(), first.labels.data_ptr<int64_t>() + 2 * 100);
}

TEST(PartitionTest, CopiesTheTrainingSplit) {
  Split train = numbered_split(kNumExamples);
  const Partition partition(train, /*batch_size=*/100, /*seed=*/7);
  const torch::Tensor before = partition.batch(0).labels.clone();
  train.labels.fill_(-1);
  EXPECT_TRUE(torch::equal(partition.batch(0).labels, before));
}

TEST(PartitionTest, BatchIndexOutOfRange) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  EXPECT_NE(error_of([&] { partition.batch(10); }).find("batch index 10 out of range [0, 10)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { partition.batch(-1); }).find("batch index -1 out of range [0, 10)"),
            std::string::npos);
}

TEST(PartitionTest, BatchSizeBounds) {
  const Split train = numbered_split(kNumExamples);
  const std::string too_big = error_of([&] { Partition(train, /*batch_size=*/1004, /*seed=*/0); });
  EXPECT_NE(too_big.find("batch size 1004"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find("1003"), std::string::npos) << too_big;
  const std::string zero = error_of([&] { Partition(train, /*batch_size=*/0, /*seed=*/0); });
  EXPECT_NE(zero.find("batch size 0"), std::string::npos) << zero;

  const Partition whole(train, /*batch_size=*/kNumExamples, /*seed=*/0);
  EXPECT_EQ(whole.num_batches(), 1);
  EXPECT_EQ(std::get<0>(torch::_unique(whole.batch(0).labels)).numel(), kNumExamples);
  const Partition single(train, /*batch_size=*/1, /*seed=*/0);
  EXPECT_EQ(single.num_batches(), kNumExamples);
}

TEST(PartitionTest, MismatchedSplitIsRejected) {
  Split train = numbered_split(kNumExamples);
  train.labels = train.labels.narrow(0, 0, 1000);
  EXPECT_THROW(Partition(train, /*batch_size=*/100, /*seed=*/0), c10::Error);
  EXPECT_THROW(Partition(Split{}, /*batch_size=*/1, /*seed=*/0), c10::Error);
}

TEST(PartitionTest, FirstBatches) {
  const Partition partition(numbered_split(kNumExamples), /*batch_size=*/100, /*seed=*/7);
  const Split three = partition.first_batches(3);
  EXPECT_EQ(three.size(), 300);
  EXPECT_TRUE(three.images.is_contiguous());
  EXPECT_TRUE(torch::equal(three.labels, torch::cat({partition.batch(0).labels,
                                                     partition.batch(1).labels,
                                                     partition.batch(2).labels})));
  EXPECT_EQ(three.images.data_ptr<float>(), partition.batch(0).images.data_ptr<float>());

  const Split all = partition.first_batches(20);
  EXPECT_EQ(all.size(), partition.num_examples());
  EXPECT_TRUE(torch::equal(all.labels, all_batch_labels(partition)));

  EXPECT_NE(error_of([&] { partition.first_batches(0); }).find("at least one batch, got k = 0"),
            std::string::npos);
}

}  // namespace
}  // namespace bnn::data_loaders
