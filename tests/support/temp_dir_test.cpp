// unique_temp_dir's directories go when the test program ends, and stay when
// one of its tests failed, when BNN_KEEP_TEST_DIRS is set, or for a forked child.
#include "tests/support/temp_dir.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "src/io/atomic_file.h"
#include "tests/support/run_bnn.h"

namespace bnn::testing {
namespace {

namespace fs = std::filesystem;

// Run alone by the tests below, as its own test program: makes a directory
// and writes its path to $BNN_TEMP_DIR_PROBE, then fails if asked to.
TEST(TempDirs, ProbeMakesADirectory) {
  const auto dir = unique_temp_dir("bnn_temp_dir_probe");
  EXPECT_TRUE(fs::is_directory(dir));
  std::ofstream(dir / "result.txt") << "a result";
  if (const char* probe = std::getenv("BNN_TEMP_DIR_PROBE")) std::ofstream(probe) << dir.string();
  if (std::getenv("BNN_TEMP_DIR_PROBE_FAIL") != nullptr) ADD_FAILURE() << "failing as asked";
}

// This test program run with only the probe; the probe's directory.
fs::path probe_directory(const std::string& env, int expected_code) {
  const auto work = unique_temp_dir("bnn_temp_dir_test");
  const auto probe = work / "probe.txt";
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/exe";
  const auto result = run_logged("env " + env + " BNN_TEMP_DIR_PROBE=" + probe.string() + " " + self +
                                      " --gtest_filter=TempDirs.ProbeMakesADirectory",
                                  work / "log.txt");
  EXPECT_EQ(result.code, expected_code) << result.output;
  const fs::path dir = io::read_file(probe);
  EXPECT_FALSE(dir.empty());
  return dir;
}

TEST(TempDirs, RemovedWhenTheTestProgramPasses) {
  const auto dir = probe_directory("-u BNN_KEEP_TEST_DIRS", 0);
  EXPECT_FALSE(fs::exists(dir)) << dir;
}

TEST(TempDirs, KeptWhenATestFails) {
  const auto dir = probe_directory("-u BNN_KEEP_TEST_DIRS BNN_TEMP_DIR_PROBE_FAIL=1", 1);
  EXPECT_EQ(io::read_file(dir / "result.txt"), "a result");
  TempDirs::instance().add(dir);  // this program's own to remove
}

TEST(TempDirs, KeptWhenAskedTo) {
  const auto dir = probe_directory("BNN_KEEP_TEST_DIRS=1", 0);
  EXPECT_EQ(io::read_file(dir / "result.txt"), "a result");
  TempDirs::instance().add(dir);
}

TEST(TempDirs, AForkedChildLeavesItsParentsDirectories) {
  const auto dir = unique_temp_dir("bnn_temp_dir_fork");
  std::fflush(nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) std::exit(0);  // runs the registry's destructor in the child
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_TRUE(fs::is_directory(dir));
}

}  // namespace
}  // namespace bnn::testing
