// The command table (src/cli/commands.h) is the only list of commands: the
// usage text, the dispatch and the unknown-command error all come from it.
#include <gtest/gtest.h>

#include "src/cli/commands.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

TEST(Commands, EveryCommandIsInTheUsageAndAnswersHelp) {
  const auto work = bnn::testing::unique_temp_dir("bnn_commands_test");
  const std::string usage = bnn::cli::usage();
  ASSERT_GE(bnn::cli::commands().size(), 10u);
  for (const auto& c : bnn::cli::commands()) {
    const std::string name = c.name;
    EXPECT_NE(usage.find("  bnn " + name + " "), std::string::npos) << name;
    // `bnn NAME --help` reaches the command's own parser (or, for the
    // commands without options, the command itself), never the unknown-command error.
    const auto r = bnn::testing::run_bnn(name + " --help", work / (name + ".txt"));
    EXPECT_EQ(r.code, 0) << name << "\n" << r.output;
    EXPECT_EQ(r.output.find("unknown command"), std::string::npos) << name << "\n" << r.output;
  }
  std::filesystem::remove_all(work);
}

TEST(Commands, UnknownCommandListsTheTable) {
  const auto work = bnn::testing::unique_temp_dir("bnn_commands_unknown_test");
  std::string names;
  for (const auto& c : bnn::cli::commands()) names += (names.empty() ? "" : ", ") + std::string(c.name);
  const auto r = bnn::testing::run_bnn("frobnicate", work / "log.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("bnn: error: unknown command 'frobnicate' (commands: " + names + "; see bnn --help)"),
            std::string::npos)
      << r.output;
  std::filesystem::remove_all(work);
}

}  // namespace
