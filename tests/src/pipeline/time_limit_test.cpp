// Note [Time limit] (src/runtime/deadline.h): `bnn run --time-limit` stops
// members at epoch ends with their checkpoints, and `bnn run --resume` ends
// where a run never stopped ends, bit for bit.
//
// The stopping runs are driven in this process with a clock that moves 10 s
// each time the deadline reads it: once before a member starts and once after
// each epoch, so where the deadline falls is known exactly (the real epochs
// of tiny.yaml take milliseconds, far below the 5 s margins).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>

#include "samplers/sampler.h"
#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/run.h"
#include "src/runtime/deadline.h"
#include "src/runtime/stop_signal.h"
#include "tests/support/data_paths.h"
#include "tests/support/error_text.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn::pipeline {
namespace {
using bnn::testing::kTinyConfig;


class TimeLimit : public ::testing::Test {
 protected:
  void SetUp() override {
    BNN_SKIP_WITHOUT_FASHION_MNIST();
    work_ = bnn::testing::unique_temp_dir("bnn_time_limit_test");
    at::set_num_threads(1);
  }
  void TearDown() override {
    if (!work_.empty() && !HasFailure()) std::filesystem::remove_all(work_);
  }

  // tiny.yaml (2 members of 2 Adam + 1 SWA + 3 sampling epochs) into `dir`;
  // with `limit`, under a deadline of that many seconds on the 10 s clock,
  // which has seen an epoch of `seen_epoch` seconds (its real epochs take
  // milliseconds), and --whole-members where `whole_members`.
  static int run_tiny(const std::filesystem::path& dir, bool resume, std::optional<double> limit = std::nullopt,
                      bool whole_members = false, double seen_epoch = 0.0) {
    const config::Config config = config::load_config(kTinyConfig, {"run.device=cpu"});
    RunOptions options;
    options.run_dir = dir;
    options.resume = resume;
    auto t = runtime::Deadline::Clock::time_point{};
    std::optional<runtime::Deadline> deadline;
    if (limit) {
      deadline.emplace(*limit, [&t] { return t += std::chrono::seconds(10); });
      deadline->epoch_took(seen_epoch);
      options.deadline = &*deadline;
      options.whole_members = whole_members;
    }
    return run(config, options);
  }
  static std::string read(const std::filesystem::path& p) { return io::read_file(p); }
  // Phase and epochs done of a member checkpoint (Note [Member checkpoints]).
  static std::pair<int64_t, int64_t> checkpoint_position(const std::filesystem::path& path) {
    torch::serialize::InputArchive a;
    a.load_from(path.string());
    return {samplers::read_tensor(a, "member.phase").item<int64_t>(),
            samplers::read_tensor(a, "member.epochs_done").item<int64_t>()};
  }
  static size_t trace_rows(const std::filesystem::path& member) {
    const std::string trace = read(member / "trace.csv");
    return static_cast<size_t>(std::count(trace.begin(), trace.end(), '\n')) - 1;  // less the header
  }

  std::filesystem::path work_;
};

// The clock reads 10 s since the deadline was set before member 0 starts and
// 10 (k + 1) s after its epoch k, so a limit of 10 N + 5 s passes after
// epoch N: the member stops there, at the end of Adam (N = 2), of
// SWA (3) and inside sampling (4); member 1 does not start. Resumed without
// a limit, both end as the run that was never stopped.
TEST_F(TimeLimit, StoppedMembersResumeBitIdentically) {
  const auto full = work_ / "full";
  ASSERT_EQ(run_tiny(full, false), 0);
  for (const int stop_after : {2, 3, 4}) {
    SCOPED_TRACE("stopped after epoch " + std::to_string(stop_after));
    const auto cut = work_ / ("cut" + std::to_string(stop_after));
    ASSERT_EQ(run_tiny(cut, false, 10.0 * stop_after + 5.0), runtime::kExitTimeLimit);
    const auto m0 = cut / "member_000";
    EXPECT_EQ(trace_rows(m0), static_cast<size_t>(stop_after));
    // The checkpoint holds the last epoch: adam 2, swa 1, sampling 1.
    const std::pair<int64_t, int64_t> position = stop_after == 2   ? std::pair<int64_t, int64_t>{0, 2}
                                                 : stop_after == 3 ? std::pair<int64_t, int64_t>{1, 1}
                                                                   : std::pair<int64_t, int64_t>{2, 1};
    EXPECT_EQ(checkpoint_position(m0 / "checkpoint.pt"), position);
    EXPECT_FALSE(std::filesystem::exists(m0 / "status.json"));
    EXPECT_EQ(std::filesystem::exists(m0 / "adam_probs.npy"), stop_after > 2);
    EXPECT_FALSE(std::filesystem::exists(cut / "member_001"));
    EXPECT_FALSE(std::filesystem::exists(cut / "metrics.json"));

    ASSERT_EQ(run_tiny(cut, true), 0);
    for (const std::string member : {"member_000", "member_001"}) {
      for (const std::string file : {"adam_probs.npy", "swa_probs.npy", "swa_weights.npy", "bayes_probs.npy",
                                     "samples/step_00000020.npy", "samples/step_00000030.npy"}) {
        EXPECT_EQ(read(full / member / file), read(cut / member / file)) << member << "/" << file;
      }
    }
    EXPECT_EQ(read(full / "metrics.json"), read(cut / "metrics.json"));
  }
}

// Note [Stop signals]: a stop requested before the members start (a signal
// while the data load) starts none, with or without a deadline; the command
// exits as a time limit does.
TEST_F(TimeLimit, AStopRequestedBeforeTheMembersStartsNone) {
  for (const bool limit : {false, true}) {
    SCOPED_TRACE(limit ? "with a time limit" : "without");
    const auto dir = work_ / (limit ? "limit" : "none");
    int code = 0;
    {
      struct Requested {  // cleared however the run ends
        Requested() { runtime::request_stop(SIGTERM); }
        ~Requested() { runtime::clear_stop(); }
      } requested;
      code = limit ? run_tiny(dir, false, 1000.0) : run_tiny(dir, false);
    }
    EXPECT_EQ(code, runtime::kExitTimeLimit);
    EXPECT_FALSE(std::filesystem::exists(dir / "member_000"));
    EXPECT_FALSE(std::filesystem::exists(dir / "metrics.json"));
    ASSERT_EQ(run_tiny(dir, true), 0);
    EXPECT_TRUE(std::filesystem::exists(dir / "metrics.json"));
  }
}

// A member whose last epoch ends past the deadline is finished, not stopped:
// its status is written and its checkpoint removed. The next member does not
// start.
TEST_F(TimeLimit, TheLastEpochFinishesTheMember) {
  const auto cut = work_ / "cut";
  ASSERT_EQ(run_tiny(cut, false, 65.0), runtime::kExitTimeLimit);  // 70 s after epoch 6, the last
  EXPECT_TRUE(std::filesystem::exists(cut / "member_000" / "status.json"));
  EXPECT_FALSE(std::filesystem::exists(cut / "member_000" / "checkpoint.pt"));
  EXPECT_FALSE(std::filesystem::exists(cut / "member_001"));
}

// Without --whole-members, 10 s epochs as the estimate and a limit of
// 100 s: member 0 starts at 10 s and finishes, its checks reading 20 to
// 60 s. Member 1 would start at 70 s: one epoch fits (80 s), so it starts
// and is stopped after 3 epochs (the check at 100 s), its work lost on a
// machine that keeps nothing.
//
// With it, the member is also timed on the deadline's clock (two more
// reads): member 0 starts at 10 s, where its 6 epochs would end at 70 s
// (none has finished yet), begins at 20 s, checks at 30 to 70 s and ends at
// 80 s: a member takes 60 s. Member 1 would start at 90 s and end at 150 s:
// it does not start. The same without an epoch seen (the estimate from
// epochs alone would be milliseconds, the real epochs'): the finished
// member's 60 s decide. At a limit of 160 s it starts and finishes.
TEST_F(TimeLimit, WholeMembersStartOnlyWhereAWholeMemberFits) {
  ASSERT_EQ(member_epochs(config::load_config(kTinyConfig, {})), 6);
  const auto part = work_ / "part";
  ASSERT_EQ(run_tiny(part, false, 100.0, /*whole_members=*/false, /*seen_epoch=*/10.0), runtime::kExitTimeLimit);
  EXPECT_TRUE(std::filesystem::exists(part / "member_000" / "status.json"));
  EXPECT_EQ(trace_rows(part / "member_001"), 3u);
  EXPECT_TRUE(std::filesystem::exists(part / "member_001" / "checkpoint.pt"));

  for (const double seen_epoch : {10.0, 0.0}) {
    SCOPED_TRACE(seen_epoch);
    const auto whole = work_ / ("whole" + std::to_string(static_cast<int>(seen_epoch)));
    ASSERT_EQ(run_tiny(whole, false, 100.0, /*whole_members=*/true, seen_epoch), runtime::kExitTimeLimit);
    EXPECT_TRUE(std::filesystem::exists(whole / "member_000" / "status.json"));
    EXPECT_FALSE(std::filesystem::exists(whole / "member_001"));
    EXPECT_EQ(read(part / "member_000" / "bayes_probs.npy"), read(whole / "member_000" / "bayes_probs.npy"));
  }
  const auto both = work_ / "both";
  ASSERT_EQ(run_tiny(both, false, 160.0, /*whole_members=*/true, /*seen_epoch=*/10.0), 0);
  EXPECT_TRUE(std::filesystem::exists(both / "member_001" / "status.json"));
}

TEST(TimeLimitOption, DurationsInSecondsMinutesOrHours) {
  EXPECT_EQ(parse_time_limit("540"), 540.0);
  EXPECT_EQ(parse_time_limit("540s"), 540.0);
  EXPECT_EQ(parse_time_limit("9m"), 540.0);
  EXPECT_EQ(parse_time_limit("1.5h"), 5400.0);
  EXPECT_EQ(parse_time_limit(" .5 m "), 30.0);
  EXPECT_EQ(parse_time_limit("11h45m"), 42300.0);
  EXPECT_EQ(parse_time_limit("1h 2m 3.5s"), 3723.5);
  EXPECT_EQ(parse_time_limit("2m30s"), 150.0);
  EXPECT_EQ(parse_time_limit("999999999"), 999999999.0);
  EXPECT_EQ(parse_time_limit("0.0000000001s"), 1e-10);  // ten digits of a fraction are no long duration
  for (const std::string big : {"1234567890", "99999999999999999999", "5h 1234567890s"}) {
    EXPECT_EQ(bnn::testing::error_of([&] { parse_time_limit(big); }),
              "--time-limit: '" + big + "' is longer than bnn counts (at most 9 digits a unit, 999999999 s: about "
              "31 years)");
  }
  for (const std::string bad : {"", "0", "0m", "-5", "9x", "m", "1e3", "1h30", "30m1h", "5 5"}) {
    EXPECT_EQ(bnn::testing::error_of([&] { parse_time_limit(bad); }),
              "--time-limit: '" + bad + "' is not a positive duration: seconds, or hours, minutes and seconds with "
              "h, m and s (540, 9m, 1.5h, 11h45m)");
  }
}

// As a user runs it: a limit that has passed by the time the data are loaded
// starts no member and says how to go on; a bad value is refused before any
// work.
TEST_F(TimeLimit, CommandLine) {
  const auto dir = work_ / "run";
  auto r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + dir.string() + " --time-limit 9x",
                                 work_ / "log1.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: --time-limit: '9x' is not a positive duration"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir));
  r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + dir.string() + " --whole-members",
                            work_ / "log0.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: --whole-members needs --time-limit: without a limit every member is whole"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir));

  r = bnn::testing::run_bnn(
      "run --config " + kTinyConfig + " --out " + dir.string() + " --threads 1 --time-limit 0.001",
      work_ / "log2.txt");
  EXPECT_EQ(r.code, runtime::kExitTimeLimit) << r.output;
  EXPECT_NE(r.output.find("time limit of 0.001 s reached after"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 member(s) left unfinished, 0 finished in " + dir.string() +
                          "; continue with: bnn run --resume " + dir.string()),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "member_000"));

  // The line to go on with carries what the resume needs to continue alike:
  // the members of this command and the stacked design.
  const auto slice = work_ / "slice";
  r = bnn::testing::run_bnn("run --config " + kTinyConfig + " --out " + slice.string() +
                                " --threads 1 --time-limit 0.001 --members 0-1 --member-design stacked",
                            work_ / "log4.txt");
  EXPECT_EQ(r.code, runtime::kExitTimeLimit) << r.output;
  EXPECT_NE(r.output.find("; continue with: bnn run --resume " + slice.string() +
                          " --members 0-1 --member-design stacked (the metrics"),
            std::string::npos)
      << r.output;

  r = bnn::testing::run_bnn("run --resume " + dir.string() + " --threads 1 --time-limit 1h", work_ / "log3.txt");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "metrics.json"));
}

}  // namespace
}  // namespace bnn::pipeline
