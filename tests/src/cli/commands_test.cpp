// The command table (src/cli/commands.h) is the only list of commands: the
// usage text, the dispatch and the unknown-command error all come from it.
#include <gtest/gtest.h>

#include "src/cli/commands.h"
#include "src/io/atomic_file.h"
#include "tests/support/data_paths.h"
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

// `bnn` alone is a usage error: the usage on stderr and exit 2, as for an
// unknown command (a script that lost its arguments must not pass).
TEST(Commands, NoCommandIsAUsageError) {
  const auto work = bnn::testing::unique_temp_dir("bnn_commands_none_test");
  const auto r = bnn::testing::run_bnn("", work / "log.txt");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(r.output, bnn::cli::usage());
  const auto help = bnn::testing::run_bnn("--help", work / "help.txt");
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_EQ(help.output, bnn::cli::usage());
  std::filesystem::remove_all(work);
}

// A value holding a comma stays one value: `--set model.hidden=[8,4]` is one
// override (cxxopts splits vector options at ',' unless told otherwise), and
// a run directory may have a comma in its name.
TEST(Commands, ValuesWithCommasStayWhole) {
  const auto work = bnn::testing::unique_temp_dir("bnn_commands_comma_test");
  const std::string& tiny = bnn::testing::kTinyConfig;
  const auto run = work / "run,one";
  const auto ok = bnn::testing::run_bnn(
      "run --config " + tiny + " --out " + run.string() + " --threads 1 --set model.hidden=[8,4] --set run.members=1",
      work / "ok.txt");
  ASSERT_EQ(ok.code, 0) << ok.output;
  // 784*8+8 + 8*4+4 + 4*10+10 parameters.
  EXPECT_NE(ok.output.find("hidden=[8, 4], classes=10, batch_norm=false) (6366 parameters)"), std::string::npos)
      << ok.output;
  EXPECT_NE(bnn::io::read_file(run / "config.yaml").find("hidden:\n    - 8\n    - 4\n"), std::string::npos);

  const auto bad = bnn::testing::run_bnn("run --config " + tiny + " --out " + (work / "bad").string() +
                                             " --set model.hidden=[8,-4]",
                                         work / "bad.txt");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("config key 'model.hidden': invalid value '[8, -4]': every entry must be >= 1"),
            std::string::npos)
      << bad.output;

  const auto eval = bnn::testing::run_bnn("evaluate " + run.string() + " --no-figures --out " +
                                              (work / "eval,out").string(),
                                          work / "eval.txt");
  EXPECT_EQ(eval.code, 0) << eval.output;
  EXPECT_TRUE(std::filesystem::exists(work / "eval,out" / "metrics.json")) << eval.output;
  std::filesystem::remove_all(work);
}

}  // namespace
