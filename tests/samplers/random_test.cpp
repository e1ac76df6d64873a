#include "samplers/random.h"

#include <gtest/gtest.h>

namespace bnn::samplers {
namespace {

TEST(ChunkedNormal, DrawsDoNotDependOnTheThreadCount) {
  const int64_t n = 5 * ChunkedNormal::kChunk + 123;
  const int threads = torch::get_num_threads();
  auto draw = [&](int t) {
    torch::set_num_threads(t);
    ChunkedNormal normal(torch::kCPU, 17, n);
    torch::Tensor out = torch::empty({n});
    normal.fill(out);
    normal.fill(out);  // second draw: the generators advance
    return out;
  };
  const torch::Tensor one = draw(1), two = draw(2);
  torch::set_num_threads(threads);
  EXPECT_TRUE(one.equal(two));
}

TEST(ChunkedNormal, IsStandardNormalAndChunksAreIndependent) {
  const int64_t n = 4 * ChunkedNormal::kChunk;
  ChunkedNormal normal(torch::kCPU, 5, n);
  torch::Tensor out = torch::empty({n}, torch::kDouble);
  normal.fill(out);
  // n = 262144: sd of the mean 0.002, of the variance 0.0028.
  EXPECT_NEAR(out.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(out.var().item<double>(), 1.0, 0.014);
  const auto k = ChunkedNormal::kChunk;
  const double corr = (out.narrow(0, 0, k) * out.narrow(0, k, k)).mean().item<double>();
  EXPECT_NEAR(corr, 0.0, 0.02);  // sd 1/sqrt(65536) = 0.004
}

TEST(DeriveSeed, StreamsDiffer) {
  EXPECT_NE(derive_seed(1, 0), derive_seed(1, 1));
  EXPECT_NE(derive_seed(1, 0), derive_seed(2, 0));
  EXPECT_EQ(derive_seed(3, 4), derive_seed(3, 4));
}

}  // namespace
}  // namespace bnn::samplers
