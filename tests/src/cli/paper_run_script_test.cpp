// scripts/paper-run.sh: the paper's run in slices that each end in time
// (Note [Time limit]), with what a results folder needs. Here on tiny.yaml:
// a first slice whose limit has passed before any member starts, then one
// that finishes.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>

#include <gtest/gtest.h>

#include "src/io/atomic_file.h"
#include "tests/support/data_paths.h"
#include "tests/support/temp_dir.h"

namespace {


int paper_run(const std::filesystem::path& work, const std::string& options, const std::string& log) {
  const std::string cmd = "BNN_COMMIT=test-commit " + std::string(BNN_SOURCE_DIR) + "/scripts/paper-run.sh --config " +
                          BNN_SOURCE_DIR + "/configs/tiny.yaml " + BNN_BINARY + " " + (work / "run").string() + " " +
                          (work / "out").string() + " --device cpu --threads 1 " + options + " > " +
                          (work / log).string() + " 2>&1";
  return WEXITSTATUS(std::system(cmd.c_str()));
}

TEST(PaperRunScript, SlicesUntilTheRunFinishesThenAssemblesTheResults) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_paper_run_script");
  const auto out = work / "out";
  using bnn::io::read_file;

  EXPECT_EQ(paper_run(work, "--time-limit 0.001", "log1.txt"), 75) << read_file(work / "log1.txt");
  EXPECT_NE(read_file(work / "log1.txt").find("paper-run: not finished; call again with the same arguments"),
            std::string::npos)
      << read_file(work / "log1.txt");
  EXPECT_FALSE(std::filesystem::exists(out / "results"));

  EXPECT_EQ(paper_run(work, "", "log2.txt"), 0) << read_file(work / "log2.txt");
  const std::string slices = read_file(out / "slices.tsv");
  EXPECT_NE(slices.find("\t75\t" + std::string(BNN_BINARY) + " run --config "), std::string::npos) << slices;
  EXPECT_NE(slices.find("\t0\t" + std::string(BNN_BINARY) + " run --resume " + (work / "run").string()),
            std::string::npos)
      << slices;
  EXPECT_TRUE(std::filesystem::exists(out / "slice_1.log"));
  EXPECT_TRUE(std::filesystem::exists(out / "members" / "member_001" / "status.json"));
  for (const std::string file : {"metrics.json", "metrics.csv", "report.md", "config.yaml"}) {
    EXPECT_EQ(read_file(out / "results" / file), read_file(work / "run" / file)) << file;
  }
  const std::string readme = read_file(out / "results" / "README.md");
  EXPECT_NE(readme.find("- bnn commit: `test-commit`"), std::string::npos) << readme;
  EXPECT_NE(readme.find("over 2 command(s)"), std::string::npos) << readme;
  // The CUDA runtime and driver bnn read (Note [Why no CUDA]) are part of the record.
  EXPECT_NE(readme.find("; CUDA: "), std::string::npos) << readme;
  // tiny.yaml is Fashion-MNIST: its table beside the paper's (scripts/paper_comparison.py).
  const std::string comparison = read_file(out / "results" / "paper_comparison.md");
  EXPECT_NE(comparison.find("| SMS-UBU | nll | "), std::string::npos) << comparison;
  EXPECT_NE(comparison.find("differences are larger than our standard deviation."), std::string::npos) << comparison;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(work);
}

// Its refusals name what is wrong and leave nothing behind.
TEST(PaperRunScript, RefusesAMissingBnnOrConfig) {
  const auto work = bnn::testing::unique_temp_dir("bnn_paper_run_refusals");
  const std::string script = std::string(BNN_SOURCE_DIR) + "/scripts/paper-run.sh ";
  // Appended, not " " + string: GCC 12 at -O3 under C++20 warns falsely on that (-Wstringop-overflow).
  std::string dirs = " ";
  dirs += (work / "run").string() + " " + (work / "out").string();
  auto run = [&](const std::string& args) {
    const std::string cmd = script + args + " > " + (work / "log.txt").string() + " 2>&1";
    const int code = WEXITSTATUS(std::system(cmd.c_str()));
    return std::make_pair(code, bnn::io::read_file(work / "log.txt"));
  };
  auto [code, log] = run((work / "no_bnn").string() + dirs);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("paper-run: " + (work / "no_bnn").string() + " is not an executable bnn"), std::string::npos)
      << log;
  std::tie(code, log) = run("--config " + (work / "none.yaml").string() + " " + BNN_BINARY + dirs);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("paper-run: no config file " + (work / "none.yaml").string()), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(work / "out"));
  EXPECT_FALSE(std::filesystem::exists(work / "run"));
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(work);
}

}  // namespace
