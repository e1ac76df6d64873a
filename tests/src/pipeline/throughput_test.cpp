// Note [Members for a time limit] (src/pipeline/throughput.h): `bnn run
// --throughput FILE` reads bench/members_per_device.sh's table and takes
// the members at once that end the most whole members in the time left.
#include <fstream>

#include <gtest/gtest.h>

#include "src/config/config.h"
#include "src/pipeline/run.h"
#include "src/pipeline/throughput.h"
#include "tests/support/data_paths.h"
#include "tests/support/error_text.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn::pipeline {
namespace {
using bnn::testing::kTinyConfig;

constexpr const char* kHeader = "design,members,exit,wall_s,member_epochs_per_s,peak_gpu_mib,mib_per_member\n";

class Throughput : public ::testing::Test {
 protected:
  void SetUp() override { work_ = bnn::testing::unique_temp_dir("bnn_throughput_test"); }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(work_);
  }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto path = work_ / name;
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path work_;
};

// The rows a members_per_device.sh run writes: one design a row, a failed
// run's rate nan, the benchmark's other designs kept but never chosen.
TEST_F(Throughput, ReadsTheBenchmarksTable) {
  const auto file = write("table.csv", std::string(kHeader) +
                                           "streams,1,0,61.2,0.6125,1900,1400\n"
                                           "streams,2,0,70.4,1.0,3300,1400\n"
                                           "streams,16,1,12.0,nan,80000,4900\n"
                                           "stacked,16,0,90.0,3.0,30000,1800\n"
                                           "processes,4,0,80.0,1.2,7000,1600\n"
                                           "streams+cudnn_benchmark,8,0,50.0,2.5,9000,1000\n");
  const ThroughputTable table = read_throughput_table(file);
  EXPECT_EQ(table.file, file);
  ASSERT_EQ(table.rows.size(), 5u);
  EXPECT_EQ(table.rows[0].design, "streams");
  EXPECT_EQ(table.rows[0].members, 1);
  EXPECT_EQ(table.rows[0].member_epochs_per_s, 0.6125);
  EXPECT_EQ(table.rows[2].design, "stacked");
  EXPECT_EQ(table.rows[2].members, 16);
  EXPECT_EQ(table.rows[2].member_epochs_per_s, 3.0);
  EXPECT_TRUE(usable_for(table.rows[0], "streams"));
  EXPECT_TRUE(usable_for(table.rows[0], "stacked"));  // one member alone (in two slots, at twice the time)
  EXPECT_FALSE(usable_for(table.rows[1], "stacked"));
  EXPECT_FALSE(usable_for(table.rows[2], "streams"));
  EXPECT_FALSE(usable_for(table.rows[3], "streams"));
  EXPECT_FALSE(usable_for(table.rows[4], "streams"));

  // Columns found by name, in any order; a blank line and CRLF endings pass.
  const ThroughputTable moved =
      read_throughput_table(write("moved.csv", "member_epochs_per_s,exit,members,design\r\n2.5,0,4,streams\r\n\r\n"));
  ASSERT_EQ(moved.rows.size(), 1u);
  EXPECT_EQ(moved.rows[0].members, 4);
  EXPECT_EQ(moved.rows[0].member_epochs_per_s, 2.5);
  // Blanks around fields, an empty last field, a line of blanks.
  const ThroughputTable spaced =
      read_throughput_table(write("spaced.csv", std::string(kHeader) + " streams , 2 ,0,1, 1.5 ,1,\r\n \t \n"));
  ASSERT_EQ(spaced.rows.size(), 1u);
  EXPECT_EQ(spaced.rows[0].design, "streams");
  EXPECT_EQ(spaced.rows[0].members, 2);
  EXPECT_EQ(spaced.rows[0].member_epochs_per_s, 1.5);
}

TEST_F(Throughput, BadTablesAreNamed) {
  const auto message = [&](const std::string& name, const std::string& text) {
    const auto file = write(name, text);
    return bnn::testing::error_of([&] { read_throughput_table(file); });
  };
  const std::string w = work_.string() + "/";
  EXPECT_EQ(bnn::testing::error_of([&] { read_throughput_table(work_ / "none.csv"); }),
            "--throughput " + w + "none.csv: cannot be read");
  EXPECT_EQ(message("empty.csv", ""),
            "--throughput " + w + "empty.csv: is empty, not a members_per_device.csv of bench/members_per_device.sh");
  EXPECT_EQ(message("column.csv", "design,members,exit,rate\nstreams,1,0,0.5\n"),
            "--throughput " + w +
                "column.csv: has no column 'member_epochs_per_s' in its first line; not a members_per_device.csv "
                "of bench/members_per_device.sh");
  EXPECT_EQ(message("fields.csv", std::string(kHeader) + "streams,1,0,61.2,0.6\n"),
            "--throughput " + w + "fields.csv: line 2 has 5 fields, the header 7");
  EXPECT_EQ(message("rate.csv", std::string(kHeader) + "streams,1,0,61.2,0.6,1,1\nstreams,2,0,61.2,fast,1,1\n"),
            "--throughput " + w + "rate.csv: line 3: 'fast' in column member_epochs_per_s is not a number");
  EXPECT_EQ(message("exit.csv", std::string(kHeader) + "streams,1,,61.2,0.6,1,1\n"),
            "--throughput " + w + "exit.csv: line 2: '' in column exit is not a number");
  EXPECT_EQ(message("members.csv", std::string(kHeader) + "streams,2.5,0,61.2,0.6,1,1\n"),
            "--throughput " + w + "members.csv: line 2: '2.5' in column members is not a member count");
  EXPECT_EQ(message("zero.csv", std::string(kHeader) + "streams,0,0,61.2,0.6,1,1\n"),
            "--throughput " + w + "zero.csv: line 2: '0' in column members is not a member count");
  for (const std::string huge : {"1e19", "inf", "1000000"}) {
    EXPECT_EQ(message("huge.csv", std::string(kHeader) + "streams," + huge + ",0,61.2,0.6,1,1\n"),
              "--throughput " + w + "huge.csv: line 2: '" + huge + "' in column members is not a member count");
  }
  EXPECT_EQ(message("negative.csv", std::string(kHeader) + "streams,1,0,61.2,-5,1,1\n"),
            "--throughput " + w + "negative.csv: line 2: '-5' in column member_epochs_per_s is not a rate (0 or more)");
  EXPECT_EQ(message("twice.csv", std::string(kHeader) + "streams,1,0,61.2,0.6,1,1\nstacked,1,0,61.2,0.5,1,1\n"
                                                          "streams,1,0,61.2,60,1,1\n"),
            "--throughput " + w + "twice.csv: lines 2 and 4 are both a finished streams run of 1 members: keep one "
                                  "(tables of two machines or two runs are not merged)");
  // A failed run of the same K beside a finished one is no second finished run.
  EXPECT_EQ(read_throughput_table(write("retried.csv", std::string(kHeader) + "streams,2,1,61.2,nan,1,1\n"
                                                                              "streams,2,0,61.2,1.0,1,1\n"))
                .rows.size(),
            1u);
  EXPECT_EQ(message("blank.csv", "  \r\n"),
            "--throughput " + w + "blank.csv: is empty, not a members_per_device.csv of bench/members_per_device.sh");
  EXPECT_EQ(message("short.csv", std::string(kHeader) + "streams,1,0,61.2,0.6,1\r\n"),
            "--throughput " + w + "short.csv: line 2 has 6 fields, the header 7");
}

// Worked by hand, 60 epochs a member: r(1) = 0.6, r(2) = 1.0, r(4) = 1.6 and
// r(8) = 2.0 member-epochs/s make a member take t = 1.1 K 60 / r = 110, 132,
// 165 and 264 s.
TEST_F(Throughput, ChoosesTheMostWholeMembersInTheTimeLeft) {
  ThroughputTable table;
  table.rows = {{"streams", 1, 0.6}, {"streams", 2, 1.0}, {"streams", 4, 1.6}, {"streams", 8, 2.0},
                {"stacked", 8, 2.4}, {"stacked", 16, 3.0}};
  const auto choose = [&](std::string_view design, int64_t members, double seconds, int64_t most) {
    const auto choice = members_for_time(table, design, 60, members, seconds, most);
    EXPECT_TRUE(choice.has_value());
    return choice.value_or(MembersForTime{});
  };
  // 200 s: one round of each but 8 ends (1, 2, 4 and 0 members): 4.
  auto c = choose("streams", 48, 200, 48);
  EXPECT_EQ(c.members_per_device, 4);
  EXPECT_EQ(c.whole_members, 4);
  EXPECT_NEAR(c.member_seconds, 165.0, 1e-9);
  EXPECT_EQ(c.member_epochs_per_s, 1.6);
  // 540 s: 4, 4, 3 and 2 rounds: 4, 8, 12 and 16 members: 8 at once.
  c = choose("streams", 48, 540, 48);
  EXPECT_EQ(c.members_per_device, 8);
  EXPECT_EQ(c.whole_members, 16);
  // As many members as memory holds: 2 at once, 8 members.
  c = choose("streams", 48, 540, 2);
  EXPECT_EQ(c.members_per_device, 2);
  EXPECT_EQ(c.whole_members, 8);
  // Four members to run: every K up to 4 ends them all; 4 at once ends
  // them first (165 s against 264 and 440). 8 is not a candidate.
  c = choose("streams", 4, 540, 48);
  EXPECT_EQ(c.members_per_device, 4);
  EXPECT_EQ(c.whole_members, 4);
  // 100 s ends no member: the shortest member (one alone, 110 s).
  c = choose("streams", 48, 100, 48);
  EXPECT_EQ(c.members_per_device, 1);
  EXPECT_EQ(c.whole_members, 0);
  EXPECT_NEAR(c.member_seconds, 110.0, 1e-9);
  // Stacked: its own rows and one member alone. 8 (220 s) and 16 (352 s)
  // both end 16 members in 540 s; 16 at once ends them first.
  c = choose("stacked", 48, 540, 48);
  EXPECT_EQ(c.members_per_device, 16);
  EXPECT_EQ(c.whole_members, 16);
  EXPECT_NEAR(c.member_seconds, 352.0, 1e-9);
  // Nothing stacked ends in 150 s: one member alone runs in two slots, at
  // twice the streams row's 110 s, as quick as 8 at once: the fewer.
  c = choose("stacked", 48, 150, 48);
  EXPECT_EQ(c.members_per_device, 1);
  EXPECT_EQ(c.whole_members, 0);
  EXPECT_NEAR(c.member_seconds, 220.0, 1e-9);
  // Equal in members and time, the fewer at once: where two at once gain
  // nothing (r(1) = r(2) = 2), two members end at 66 s either way.
  ThroughputTable flat;
  flat.rows = {{"streams", 2, 2.0}, {"streams", 1, 2.0}};
  const auto f = members_for_time(flat, "streams", 60, 2, 100, 8);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->members_per_device, 1);
  EXPECT_EQ(f->whole_members, 2);
  // The same with 3 at once and 40 epochs, where three at once end in 26.4
  // s and one by one in 26.400000000000002.
  flat.rows = {{"streams", 3, 5.0}, {"streams", 1, 5.0}};
  const auto t = members_for_time(flat, "streams", 40, 3, 100, 8);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->members_per_device, 1);
  EXPECT_EQ(t->whole_members, 3);
  // A rate beyond any count does not overflow one.
  flat.rows = {{"streams", 1, 1e300}};
  EXPECT_EQ(members_for_time(flat, "streams", 60, 5, 1e6, 8)->whole_members, 5);
  // No row for the design, or none small enough: none.
  EXPECT_FALSE(members_for_time(table, "processes", 60, 48, 540, 48).has_value());
  ThroughputTable large;
  large.rows = {{"streams", 4, 1.6}};
  EXPECT_FALSE(members_for_time(large, "streams", 60, 48, 540, 2).has_value());
  EXPECT_FALSE(members_for_time(large, "streams", 60, 3, 540, 48).has_value());
}

// As a user runs it: the table's choice in the log, and the members trained
// that many at a time; what cannot work is refused before any work.
TEST_F(Throughput, CommandLine) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto table = write("table.csv", std::string(kHeader) + "streams,1,0,10,100,1,1\nstreams,2,0,10,1000,1,1\n");
  const auto dir = work_ / "run";
  const std::string run = "run --config " + kTinyConfig + " --out " + dir.string() + " --threads 2 ";
  auto r = bnn::testing::run_bnn(run + "--throughput " + table.string(), work_ / "log1.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: --throughput needs --time-limit: it chooses the members at once for the "
                          "time left"),
            std::string::npos)
      << r.output;
  r = bnn::testing::run_bnn(run + "--time-limit 1h --members-per-device 2 --throughput " + table.string(),
                            work_ / "log2.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: --throughput chooses the members per device; drop --members-per-device 2"),
            std::string::npos)
      << r.output;
  r = bnn::testing::run_bnn(run + "--time-limit 1h --member-design stacked --throughput " +
                                write("stacked.csv", std::string(kHeader) + "streams,2,0,10,1000,1,1\n").string(),
                            work_ / "log3.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: --throughput " + (work_ / "stacked.csv").string() +
                          ": no finished run of the stacked design to choose from"),
            std::string::npos)
      << r.output;
  r = bnn::testing::run_bnn(run + "--time-limit 1h --throughput " + (work_ / "none.csv").string(), work_ / "log4.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: --throughput " + (work_ / "none.csv").string() + ": cannot be read"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir));

  // tiny.yaml's 6 epochs a member: 0.066 s alone, 0.0132 s two at once;
  // both end the 3 members, two at once first.
  r = bnn::testing::run_bnn(run + "--set run.members=3 --time-limit 1h --throughput " + table.string(),
                            work_ / "log5.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: 2 member(s) at a time by --throughput " + table.string() +
                          ": each member about 0.013 s (6 epochs at 1000 member-epochs/s with 2 at once, +10%); 3 "
                          "whole member(s) expected in the "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu: 2 members at a time per device"), std::string::npos) << r.output;
  // With one thread, one at a time on the CPU, as auto keeps it.
  r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + (work_ / "one_thread").string() +
                                " --threads 1 --set run.members=3 --time-limit 1h --throughput " + table.string(),
                            work_ / "log8.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: 1 member(s) at a time by --throughput " + table.string()), std::string::npos)
      << r.output;

  // A list of CPU workers has chosen them already.
  r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + (work_ / "list").string() +
                                " --threads 2 --set run.members=2 --devices cpu,cpu --time-limit 1h --throughput " +
                                table.string(),
                            work_ / "log7.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 workers on cpu, cpu\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("by --throughput"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--throughput " + table.string() + ": not used, as the list of CPU workers (--devices) has "
                          "chosen them"),
            std::string::npos)
      << r.output;

  // Where no member is expected to end, the quickest, with a warning.
  const auto slow = write("slow.csv", std::string(kHeader) + "streams,1,0,10,1e-6,1,1\nstreams,2,0,10,1e-6,1,1\n");
  r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + (work_ / "slow").string() +
                                " --threads 2 --set run.members=1 --time-limit 1h --throughput " + slow.string(),
                            work_ / "log6.txt");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: 1 member(s) at a time by --throughput " + slow.string() +
                          ": each member about 6600000 s (6 epochs at 1e-06 member-epochs/s with 1 at once, +10%); "
                          "no member is expected to end in the "),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace bnn::pipeline
