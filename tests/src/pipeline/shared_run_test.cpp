// Processes sharing one run directory, as the members of a Slurm array or an
// Indexed Job do: each its own pid namespace's pid 1 (as in a container), all
// started at once. Every process finishes, no temporary file is left, and the
// tables the last one wrote are those of the finished run (Note [Atomic
// writes], Note [Evaluation lock]). Run against the bnn before both, it failed
// 2 of 3 times: 2 and 3 of the 8 processes died ("cannot write .../bnn.json:
// No such file or directory"), and the tables had no row of 8 members.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/io/atomic_file.h"
#include "tests/support/data_paths.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kMembers = 8;

TEST(SharedRun, ProcessesThatAreEachPid1AllFinishAndTheLastTablesCoverEveryMember) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  if (std::system("unshare --pid --fork true > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "needs `unshare --pid --fork` (root, util-linux) to give each process pid 1";
  }
  const auto dir = unique_temp_dir("bnn_shared_run");
  const auto run = dir / "run";
  std::vector<CommandResult> results(kMembers);
  std::vector<std::thread> processes;
  for (int m = 0; m < kMembers; ++m) {
    processes.emplace_back([&, m] {
      results[m] = run_logged("unshare --pid --fork " + std::string(BNN_BINARY) + " run --config " + kTinyConfig +
                                  " --out " + run.string() + " --threads 1 --device cpu --set run.members=" +
                                  std::to_string(kMembers) + " --members " + std::to_string(m),
                              dir / ("member_" + std::to_string(m) + ".txt"));
    });
  }
  for (auto& p : processes) p.join();
  for (int m = 0; m < kMembers; ++m) EXPECT_EQ(results[m].code, 0) << "member " << m << ":\n" << results[m].output;
  for (const auto& entry : fs::recursive_directory_iterator(run)) {
    EXPECT_FALSE(io::is_temporary_name(entry.path().filename().string())) << entry.path();
  }
  const auto again = run_bnn("evaluate " + run.string() + " --out " + (dir / "again").string() + " --no-figures",
                             dir / "again.txt");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(io::read_file(run / "metrics.json"), io::read_file(dir / "again" / "metrics.json"));
  EXPECT_FALSE(ensemble_row(run, "bayes", kMembers).empty());
}

}  // namespace
}  // namespace bnn::testing
