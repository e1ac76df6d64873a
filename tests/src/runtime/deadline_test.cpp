// Note [Time limit]: when the deadline lets an epoch start, on a clock the
// test moves by hand.
#include "src/runtime/deadline.h"

#include <gtest/gtest.h>

namespace bnn::runtime {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

TEST(Deadline, AnEpochStartsOnlyIfTheLongestEpochSoFarWouldEndInTime) {
  Deadline::Clock::time_point t{};
  const Deadline::Clock::time_point zero = t;
  auto at = [&](double seconds) {
    t = zero + duration_cast<Deadline::Clock::duration>(milliseconds(static_cast<int64_t>(seconds * 1000)));
  };
  Deadline d(10.0, [&] { return t; });
  EXPECT_EQ(d.seconds(), 10.0);
  // No epoch yet: an epoch may start until the limit itself.
  at(9.9);
  EXPECT_TRUE(d.allows_an_epoch());
  EXPECT_DOUBLE_EQ(d.elapsed(), 9.9);
  at(10.0);
  EXPECT_TRUE(d.allows_an_epoch());
  at(10.001);
  EXPECT_FALSE(d.allows_an_epoch());
  // With a 4 s epoch seen, the last start that ends in time is at 6 s.
  d.epoch_took(4.0);
  at(6.0);
  EXPECT_TRUE(d.allows_an_epoch());
  at(6.001);
  EXPECT_FALSE(d.allows_an_epoch());
  // The estimate is the longest epoch, not the last one.
  d.epoch_took(1.0);
  EXPECT_FALSE(d.allows_an_epoch());
  at(5.0);
  EXPECT_TRUE(d.allows_an_epoch());
  d.epoch_took(5.5);
  EXPECT_FALSE(d.allows_an_epoch());
  at(4.5);
  EXPECT_TRUE(d.allows_an_epoch());
}

TEST(Deadline, AWholeScheduleStartsOnlyIfAllItsEpochsWouldEndInTime) {
  Deadline::Clock::time_point t{};
  const Deadline::Clock::time_point zero = t;
  Deadline d(100.0, [&] { return t; });
  // No epoch yet: any schedule may start until the limit.
  t = zero + std::chrono::seconds(100);
  EXPECT_TRUE(d.allows_epochs(60));
  // Epochs of 1.5 s: 60 of them take 90 s, so a member may start until 10 s, and one epoch until 98.5 s.
  d.epoch_took(1.5);
  t = zero + std::chrono::seconds(10);
  EXPECT_TRUE(d.allows_epochs(60));
  EXPECT_FALSE(d.allows_epochs(61));
  t = zero + std::chrono::milliseconds(10001);
  EXPECT_FALSE(d.allows_epochs(60));
  EXPECT_TRUE(d.allows_epochs(59));
  EXPECT_TRUE(d.allows_an_epoch());
  EXPECT_EQ(d.allows_an_epoch(), d.allows_epochs(1));
  t = zero + std::chrono::milliseconds(98501);
  EXPECT_FALSE(d.allows_epochs(1));
  EXPECT_TRUE(d.allows_epochs(0));
}

TEST(Deadline, AMemberIsAsLongAsTheLongestFinishedOne) {
  Deadline::Clock::time_point t{};
  const Deadline::Clock::time_point zero = t;
  Deadline d(100.0, [&] { return t; });
  // A first epoch of 4 s (a GPU's warm-up, say): by epochs, 60 of them would not fit after 0 s.
  d.epoch_took(4.0);
  EXPECT_FALSE(d.allows_a_member(60));
  EXPECT_TRUE(d.allows_a_member(25));
  // Once a member has taken 45 s from start to end, that is the estimate, whatever its epochs.
  d.member_took(45.0);
  d.member_took(30.0);
  t = zero + std::chrono::seconds(55);
  EXPECT_TRUE(d.allows_a_member(60));
  t = zero + std::chrono::milliseconds(55001);
  EXPECT_FALSE(d.allows_a_member(60));
  EXPECT_FALSE(d.allows_a_member(1));
  EXPECT_TRUE(d.allows_an_epoch());  // an epoch's own check is unchanged
}

TEST(Deadline, CountsFromItsConstructionOnTheRealClock) {
  const Deadline d(3600.0);
  EXPECT_GE(d.elapsed(), 0.0);
  EXPECT_LT(d.elapsed(), 60.0);
  EXPECT_TRUE(d.allows_an_epoch());
  const Deadline gone(1e-9);
  while (gone.elapsed() <= 1e-9) {
  }
  EXPECT_FALSE(gone.allows_an_epoch());
}

}  // namespace
}  // namespace bnn::runtime
