#include "samplers/batch_order.h"

#include <algorithm>
#include <set>
#include <sstream>

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

// Every kind announces its cycles (2 N_m batches for SMS, N_m otherwise)
// before their first batch, without changing the batches; a checkpoint taken
// mid-cycle carries the cycle on.
TEST(BatchOrder, CyclesAreAnnouncedBeforeTheirFirstBatchAndSurviveACheckpoint) {
  const int64_t n = 3;
  for (const auto kind : {BatchOrderKind::kSymmetric, BatchOrderKind::kReshuffle, BatchOrderKind::kWithReplacement}) {
    SCOPED_TRACE(to_string(kind));
    const int64_t length = kind == BatchOrderKind::kSymmetric ? 2 * n : n;
    BatchOrder heard(kind, n, /*seed=*/8), plain(kind, n, /*seed=*/8);
    std::vector<std::pair<int64_t, int64_t>> calls;  // (batches given before, cycle)
    int64_t given = 0;
    heard.on_new_cycle([&](int64_t c) { calls.emplace_back(given, c); });
    EXPECT_EQ(heard.cycle(), -1);
    for (; given < 3 * length + 1; ++given) {
      ASSERT_EQ(heard.next(), plain.next());
      EXPECT_EQ(heard.cycle(), given / length);
    }
    EXPECT_EQ(calls, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {length, 1}, {2 * length, 2}, {3 * length, 3}}));

    torch::serialize::OutputArchive out;
    heard.save(out, "order");
    std::stringstream bytes;
    out.save_to(bytes);
    torch::serialize::InputArchive in;
    in.load_from(bytes);
    BatchOrder resumed(kind, n, /*seed=*/99);
    resumed.load(in, "order");
    EXPECT_EQ(resumed.cycle(), 3);
    std::vector<int64_t> cycles;
    resumed.on_new_cycle([&](int64_t c) { cycles.push_back(c); });
    for (int64_t i = 0; i < length; ++i) ASSERT_EQ(resumed.next(), heard.next());
    EXPECT_EQ(cycles, std::vector<int64_t>{4});
  }
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
