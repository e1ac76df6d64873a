// Tests for uint8 splits (Note [Pixel storage] in data_loaders/dataset.h):
// exact channel statistics, the per-batch conversion, and that a Partition
// keeps the pixel map.
#include "data_loaders/dataset.h"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace bnn::data_loaders {
namespace {

TEST(PixelStorage, ChannelStatsAreExact) {
  // Channel 0 holds 0 and 255 equally often, channel 1 is constant 51.
  torch::Tensor images = torch::zeros({2, 2, 1, 2}, torch::kByte);
  images.select(1, 0).index_put_({0}, 255);
  images.select(1, 1).fill_(51);
  const ChannelStats s = channel_stats(images);
  ASSERT_EQ(s.mean.size(), 2u);
  EXPECT_DOUBLE_EQ(s.mean[0], 0.5);
  EXPECT_DOUBLE_EQ(s.std[0], 0.5);
  EXPECT_DOUBLE_EQ(s.mean[1], 0.2);
  EXPECT_DOUBLE_EQ(s.std[1], 1.0);  // constant channel
}

TEST(PixelStorage, InputsStandardizePerChannel) {
  const torch::Tensor images = torch::randint(256, {5, 3, 4, 4}, torch::kLong).to(torch::kByte);
  const ChannelStats stats{{0.1, 0.5, 0.9}, {0.2, 0.25, 0.3}};
  const Split split = uint8_split(images, torch::arange(5, torch::kLong), stats, torch::kCPU);
  const torch::Tensor x = split.inputs();
  ASSERT_EQ(x.scalar_type(), torch::kFloat);
  for (int64_t c = 0; c < 3; ++c) {
    const torch::Tensor expected = (images.select(1, c).to(torch::kDouble) / 255.0 - stats.mean[c]) / stats.std[c];
    EXPECT_TRUE(torch::allclose(x.select(1, c).to(torch::kDouble), expected, 1e-6, 1e-6)) << c;
  }
  EXPECT_TRUE(torch::equal(split.slice(2, 2).inputs(), x.narrow(0, 2, 2)));
}

TEST(PixelStorage, FloatImagesPassThroughUnchanged) {
  Split split;
  split.images = torch::randn({4, 1, 2, 2});
  split.labels = torch::arange(4, torch::kLong);
  EXPECT_TRUE(split.inputs().is_same(split.images));
}

TEST(PixelStorage, PartitionBatchesKeepThePixelMap) {
  const int64_t n = 40;
  const torch::Tensor images = torch::arange(n, torch::kLong).to(torch::kByte).view({n, 1, 1, 1}).expand({n, 1, 2, 2});
  const Split train = uint8_split(images.contiguous(), torch::arange(n, torch::kLong), {{0.0}, {1.0}}, torch::kCPU);
  const Partition partition(train, /*batch_size=*/8, /*seed=*/3);
  const Split batch = partition.batch(2);
  EXPECT_EQ(batch.images.scalar_type(), torch::kByte);
  const torch::Tensor x = batch.inputs();
  // Pixel value i / 255 for example i, which is also its label.
  EXPECT_TRUE(torch::allclose(x.flatten(1).select(1, 0), batch.labels.to(torch::kFloat) / 255.0, 1e-6, 1e-7));
  EXPECT_EQ(partition.first_batches(2).inputs().size(0), 16);
}

}  // namespace
}  // namespace bnn::data_loaders
