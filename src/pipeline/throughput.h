// Note [Members for a time limit]: how many members to train at once on a
// device when the command has a time limit, from a measured table.
//
// `--members-per-device auto` fills the device's memory (at most
// kMaxAutoMembersPerDevice). Under a time limit on a machine that keeps
// nothing, that can lose everything: K members at once each take K / s(K)
// times as long as one alone, where s(K) is what sharing the device gains,
// and if that is longer than the time left, none of the first K ends whole
// (they start before any member has been timed; --whole-members can only
// hold back the later ones). bench/members_per_device.sh measures a
// device's member-epochs per second r(K) for K members at once into its
// members_per_device.csv; given that table, `bnn run --throughput FILE
// --time-limit T` chooses K for the most members that end whole in the time
// left. With E epochs a member, K at a time, each member takes
//
//   t(K) = kThroughputMargin x K x E / r(K)
//
// seconds (the margin covers what the benchmark leaves out: a member's first
// epoch, which carries the device's warm-up, and its final evaluation), and
// floor(T / t(K)) rounds of K end in T, at most the members to run. The most
// whole members wins; among equals, the K whose members are all done first
// (fewer rounds of shorter members), then the smaller K. Rows for more
// members than will run are left out: they measured a sharing that will not
// happen. Where no K ends a member in time, the K with the shortest member
// is taken, and the log says so. The table may choose more than auto's cap
// of kMaxAutoMembersPerDevice (a guess the table replaces), never more
// than memory holds by estimate_member_memory. A table is a device's and a
// config's (the benchmark runs configs/fashion_mnist_paper.yaml): bnn
// cannot tell, and applies it to whatever it is given. Members resuming
// from a checkpoint are counted as whole (the choice errs towards fewer).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bnn::pipeline {

// One finished run of members_per_device.csv: `members` trained at once with
// `design` ("streams", "stacked"; the benchmark's other designs are kept
// and never chosen) made `member_epochs_per_s` member-epochs a second.
struct ThroughputRow {
  std::string design;
  int64_t members = 0;
  double member_epochs_per_s = 0.0;
};

struct ThroughputTable {
  std::filesystem::path file;
  std::vector<ThroughputRow> rows;  // finished runs only (exit 0, a rate > 0)
};

// Reads a members_per_device.csv: a header naming at least the columns
// design, members, exit and member_epochs_per_s, then one row per run; rows
// of failed runs (exit not 0, rate nan) are skipped. Throws ConfigError
// naming the file, and the line and column of a bad value.
ThroughputTable read_throughput_table(const std::filesystem::path& file);

inline constexpr double kThroughputMargin = 1.1;

struct MembersForTime {
  int64_t members_per_device = 0;  // K
  int64_t whole_members = 0;       // expected to end in the time given
  double member_seconds = 0.0;     // t(K), margin included
  double member_epochs_per_s = 0.0;
};

// The rows `design` may use: its own, and for "stacked" also the streams
// row of one member, for want of a better: a stacked design at one member
// at a time runs in two slots, one free, so as to keep a stacked pass's
// bits (src/pipeline/run.cpp), so members_for_time counts twice that row's
// time.
bool usable_for(const ThroughputRow& row, std::string_view design);

// Throws ConfigError naming the table's file where it has no row usable
// for `design` (nothing to choose from).
void require_usable(const ThroughputTable& table, std::string_view design);

// K for `members_to_run` members of `epochs` epochs each in `seconds`, from
// the rows usable for `design` with K <= min(most, members_to_run) (`most`:
// what the device's memory holds). None where no row qualifies.
std::optional<MembersForTime> members_for_time(const ThroughputTable& table, std::string_view design, int64_t epochs,
                                               int64_t members_to_run, double seconds, int64_t most);

}  // namespace bnn::pipeline
