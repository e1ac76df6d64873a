#include "samplers/batch_order.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

namespace bnn::samplers {
namespace {

TEST(BatchOrder, SymmetricCyclesAreAPermutationThenItsReverse) {
  const int64_t n = 7;
  BatchOrder order(BatchOrderKind::kSymmetric, n, /*seed=*/3);
  std::set<std::vector<int64_t>> distinct;
  for (int cycle = 0; cycle < 20; ++cycle) {
    std::vector<int64_t> steps;
    for (int64_t k = 0; k < 2 * n; ++k) steps.push_back(order.next());
    std::vector<int64_t> forward(steps.begin(), steps.begin() + n);
    std::vector<int64_t> backward(steps.begin() + n, steps.end());
    std::vector<int64_t> sorted = forward;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
    std::reverse(backward.begin(), backward.end());
    ASSERT_EQ(forward, backward);
    ASSERT_EQ(steps[n - 1], steps[n]);  // the turning batch twice in a row
    distinct.insert(forward);
  }
  EXPECT_GT(distinct.size(), 15u);  // fresh permutation per cycle
}

TEST(BatchOrder, ReshuffleIsAPermutationPerEpoch) {
  const int64_t n = 5;
  BatchOrder order(BatchOrderKind::kReshuffle, n, /*seed=*/4);
  for (int epoch = 0; epoch < 10; ++epoch) {
    std::set<int64_t> seen;
    for (int64_t k = 0; k < n; ++k) seen.insert(order.next());
    ASSERT_EQ(seen.size(), static_cast<size_t>(n));
  }
}

TEST(BatchOrder, WithReplacementIsUniform) {
  const int64_t n = 4, draws = 40000;
  BatchOrder order(BatchOrderKind::kWithReplacement, n, /*seed=*/5);
  std::vector<int64_t> counts(n, 0);
  for (int64_t i = 0; i < draws; ++i) {
    const int64_t b = order.next();
    ASSERT_GE(b, 0);
    ASSERT_LT(b, n);
    ++counts[b];
  }
  // Binomial sd = sqrt(40000 * 1/4 * 3/4) ~ 87; allow 5 sd.
  for (int64_t c : counts) EXPECT_NEAR(static_cast<double>(c), draws / 4.0, 5 * 87.0);
}

TEST(BatchOrder, SameSeedSameOrder) {
  BatchOrder a(BatchOrderKind::kSymmetric, 9, 11), b(BatchOrderKind::kSymmetric, 9, 11);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next(), b.next());
}

TEST(BatchOrder, NamesRoundTripAndUnknownNamesAreListed) {
  for (auto k : {BatchOrderKind::kSymmetric, BatchOrderKind::kReshuffle, BatchOrderKind::kWithReplacement}) {
    EXPECT_EQ(parse_batch_order(to_string(k)), k);
  }
  try {
    parse_batch_order("forward");
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown batch order 'forward'; valid: sms, rr, iid"), std::string::npos);
  }
}

}  // namespace
}  // namespace bnn::samplers
