// scripts/paper-run.sh: the paper's run in slices that each end in time
// (Note [Time limit]), with what a results folder needs. Here on tiny.yaml:
// a first slice whose limit has passed before any member starts, then one
// that finishes.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/data_paths.h"
#include "tests/support/temp_dir.h"

namespace {


int paper_run(const std::filesystem::path& work, const std::string& options, const std::string& log,
              const std::string& out = "out") {
  const std::string cmd = "BNN_COMMIT=test-commit " + std::string(BNN_SOURCE_DIR) + "/scripts/paper-run.sh --config " +
                          BNN_SOURCE_DIR + "/configs/tiny.yaml " + BNN_BINARY + " " + (work / "run").string() + " " +
                          (work / out).string() + " --device cpu --threads 1 " + options + " > " +
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
  EXPECT_NE(readme.find("\nExit code 75: stopped by `--time-limit` at epoch ends; the next command resumed the run.\n"),
            std::string::npos)
      << readme;
  // The CUDA runtime and driver bnn read (Note [Why no CUDA]) are part of the record.
  EXPECT_NE(readme.find("; CUDA: "), std::string::npos) << readme;
  // What ran, from the run's config.yaml, and where, from the members' own records.
  EXPECT_EQ(readme.rfind("# fashion_mnist, mlp, 2 members: results of bnn\n", 0), 0U) << readme;
  EXPECT_NE(readme.find("cpu, 1 thread, own model [LibTorch "), std::string::npos) << readme;
  EXPECT_NE(readme.find("] (the members' records)\n"), std::string::npos) << readme;
  // tiny.yaml is Fashion-MNIST: its table beside the paper's (scripts/paper_comparison.py), read from the
  // results' config.yaml as not in the paper's setting, so without flags.
  const std::string comparison = read_file(out / "results" / "paper_comparison.md");
  EXPECT_NE(comparison.find("| SMS-UBU | nll | "), std::string::npos) << comparison;
  EXPECT_NE(comparison.find("so its differences are not marked: it differs in data.train_limit 1000 (the paper's 0); "
                            "data.test_limit 500 (the paper's 0); data.batch_size 100 (the paper's 200); "
                            "data.standardize true (the paper's false); model.name mlp (the paper's fmnist_cnn);"),
            std::string::npos)
      << comparison;
  EXPECT_EQ(comparison.find("differences are larger than our standard deviation."), std::string::npos) << comparison;
  // Results of one command that finished say nothing of exit code 75.
  EXPECT_EQ(paper_run(work, "", "log3.txt", "out_once"), 0) << read_file(work / "log3.txt");
  const std::string once = read_file(work / "out_once" / "results" / "README.md");
  EXPECT_NE(once.find("over 1 command(s)"), std::string::npos) << once;
  EXPECT_EQ(once.find("Exit code 75"), std::string::npos) << once;
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

// scripts/pack-members.sh: members trained in two run folders that share no
// filesystem (two lent machines, say) are packed, carried and unpacked into
// one folder, whose evaluation is that of the members trained side by side.
TEST(PackMembers, MembersTrainedApartAreEvaluatedTogether) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto work = bnn::testing::unique_temp_dir("bnn_pack_members");
  using bnn::io::read_file;
  const std::string script = std::string(BNN_SOURCE_DIR) + "/scripts/pack-members.sh ";
  auto sh = [&](const std::string& cmd) {
    const int code = WEXITSTATUS(std::system((cmd + " > " + (work / "log.txt").string() + " 2>&1").c_str()));
    return std::make_pair(code, read_file(work / "log.txt"));
  };
  auto train = [&](const std::string& dir, const std::string& flags) {
    return sh(std::string(BNN_BINARY) + " run --config " + BNN_SOURCE_DIR + "/configs/tiny.yaml --out " +
              (work / dir).string() + " --device cpu --threads 1 " + flags);
  };
  for (const auto& [dir, flags] : std::vector<std::pair<std::string, std::string>>{
           {"both", ""}, {"first", "--members 0"}, {"second", "--members 1"}, {"other", "--set run.seed=8"}}) {
    const auto [code, log] = train(dir, flags);
    ASSERT_EQ(code, 0) << dir << ": " << log;
  }
  // An archive of one tiny member with the run's files is 120 KiB, of two
  // about 230 KiB: at 300K one archive, at 150K two, each within the limit;
  // the second pack removes nothing of its own and the first's one archive
  // is replaced. At 60K a member alone does not fit: exit 1, saying so.
  auto [code, log] = sh(script + "pack " + (work / "both").string() + " " + (work / "packs" / "both").string() +
                        " 300K");
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("both_01.tar: 2 member(s) (member_000 member_001)"), std::string::npos) << log;
  std::tie(code, log) = sh(script + "pack " + (work / "both").string() + " " + (work / "packs" / "both").string() +
                           " 150K");
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("both_01.tar: 1 member(s) (member_000)"), std::string::npos) << log;
  EXPECT_NE(log.find("both_02.tar: 1 member(s) (member_001)"), std::string::npos) << log;
  EXPECT_EQ(log.find("over the"), std::string::npos) << log;
  for (const std::string name : {"both_01.tar", "both_02.tar"}) {
    EXPECT_LE(std::filesystem::file_size(work / "packs" / name), 150u * 1024) << name;
  }
  std::tie(code, log) = sh(script + "pack " + (work / "both").string() + " " + (work / "small" / "both").string() +
                           " 60K");
  EXPECT_EQ(code, 1) << log;
  EXPECT_NE(log.find("member_000 alone makes an archive of 120 KiB, over the 60K limit (60 KiB)"), std::string::npos)
      << log;
  std::tie(code, log) = sh(script + "pack " + (work / "both").string() + " " + (work / "small" / "both").string() +
                           " 300K");
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("removed " + (work / "small" / "both_02.tar").string() + ", left by an earlier pack"),
            std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(work / "small" / "both_02.tar"));
  for (const std::string name : {"first", "second", "other"}) {
    std::tie(code, log) = sh(script + "pack " + (work / name).string() + " " + (work / "packs" / name).string());
    ASSERT_EQ(code, 0) << log;
  }
  // What stays behind: the weights.
  std::tie(code, log) = sh("tar -tf " + (work / "packs" / "first_01.tar").string());
  EXPECT_EQ(log.find("_weights.npy"), std::string::npos) << log;
  EXPECT_NE(log.find("member_000/bayes_probs.npy"), std::string::npos) << log;

  const auto merged = work / "merged";
  std::tie(code, log) = sh(script + "unpack " + merged.string() + " " + (work / "packs" / "first_01.tar").string() +
                           " " + (work / "packs" / "second_01.tar").string());
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("2 member(s) added, 0 already there"), std::string::npos) << log;
  std::tie(code, log) = sh(std::string(BNN_BINARY) + " evaluate " + merged.string());
  ASSERT_EQ(code, 0) << log;
  const size_t count_after_evaluate = static_cast<size_t>(
      std::distance(std::filesystem::directory_iterator(merged), std::filesystem::directory_iterator()));
  for (const std::string file : {"metrics.json", "metrics.csv", "uncertainty.json"}) {
    EXPECT_EQ(read_file(merged / file), read_file(work / "both" / file)) << file;
  }
  // ... but not predicted with: the weights stayed behind, and bnn predict says so.
  bnn::io::write_npy(work / "images.npy", torch::zeros({2, 28, 28}, torch::kByte));
  std::tie(code, log) = sh(std::string(BNN_BINARY) + " predict --run " + merged.string() + " --images " +
                           (work / "images.npy").string() + " --method swa --threads 1");
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find((merged / "member_000").string() + " finished, but its folder holds none of its weights"),
            std::string::npos)
      << log;
  // The results folder for docs/results, from the members' slices tables
  // (written here as paper-run.sh writes them) and the evaluation here.
  bnn::io::write_file_atomically(work / "a.tsv", "started_utc\tseconds\texit_code\tcommand\n"
                                                 "2026-11-25T10:00:00Z\t61.5\t0\tbnn run --members 0\n");
  bnn::io::write_file_atomically(work / "b.tsv", "started_utc\tseconds\texit_code\tcommand\n"
                                                 "2026-11-25T10:05:00Z\t58.5\t0\tbnn run --members 1\n");
  const std::string paper_run = std::string(BNN_SOURCE_DIR) + "/scripts/paper-run.sh --assemble ";
  std::tie(code, log) = sh("BNN_COMMIT=test-commit " + paper_run + merged.string() + " " + (work / "out").string() +
                           " " + (work / "a.tsv").string() + " " + (work / "b.tsv").string());
  ASSERT_EQ(code, 0) << log;
  EXPECT_EQ(read_file(work / "out" / "results" / "metrics.json"), read_file(work / "both" / "metrics.json"));
  const std::string readme = read_file(work / "out" / "results" / "README.md");
  EXPECT_NE(readme.find("- wall time: 120 s (2.0 min) over 2 command(s)"), std::string::npos) << readme;
  EXPECT_NE(readme.find("| 2026-11-25T10:05:00Z | 58.5 | 0 | `bnn run --members 1` |"), std::string::npos) << readme;
  EXPECT_NE(readme.find("- device: cpu, 1 thread, own model [LibTorch "), std::string::npos) << readme;
  EXPECT_NE(readme.find("- bnn commit: `test-commit`"), std::string::npos) << readme;
  EXPECT_TRUE(std::filesystem::exists(work / "out" / "results" / "paper_comparison.md"));
  EXPECT_NE(readme.find("scripts/pack-members.sh carried the finished ones back"), std::string::npos) << readme;
  EXPECT_EQ(readme.rfind("# fashion_mnist, mlp, 2 members: results of bnn\n", 0), 0U) << readme;
  // The title counts the members scored, not the config's run.members; an
  // evaluation older than the members in the folder, and a results folder
  // that is not an earlier assembly, are refused.
  std::tie(code, log) = sh("cp -r " + merged.string() + " " + (work / "one").string() + " && rm -r " +
                           (work / "one" / "member_001").string() + " && " + BNN_BINARY + " evaluate " +
                           (work / "one").string() + " && BNN_COMMIT=c " + paper_run + (work / "one").string() + " " +
                           (work / "out_one").string() + " " + (work / "a.tsv").string());
  ASSERT_EQ(code, 0) << log;
  EXPECT_EQ(read_file(work / "out_one" / "results" / "README.md").rfind("# fashion_mnist, mlp, 1 of 2 members: ", 0),
            0U);
  std::tie(code, log) = sh("cp -r " + (merged / "member_001").string() + " " + (work / "one").string() +
                           " && BNN_COMMIT=c " + paper_run + (work / "one").string() + " " +
                           (work / "out_one").string());
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find("/metrics.json scores 1 member(s), but 2 are finished there: run bnn evaluate "),
            std::string::npos)
      << log;
  std::filesystem::create_directories(work / "mine" / "results");
  bnn::io::write_file_atomically(work / "mine" / "results" / "notes.md", "my notes\n");
  std::tie(code, log) = sh("BNN_COMMIT=c " + paper_run + merged.string() + " " + (work / "mine").string() + " " +
                           (work / "a.tsv").string());
  EXPECT_EQ(code, 2) << log;
  EXPECT_NE(log.find((work / "mine" / "results").string() + " is not results this script assembled"),
            std::string::npos)
      << log;
  EXPECT_EQ(read_file(work / "mine" / "results" / "notes.md"), "my notes\n");
  std::tie(code, log) = sh(paper_run + (work / "first" / "member_000").string() + " " + (work / "out").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("metrics.json is missing: run bnn evaluate "), std::string::npos) << log;
  std::tie(code, log) = sh("env -u BNN_COMMIT " + paper_run + merged.string() + " " + (work / "out").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("--assemble needs BNN_COMMIT=<the commit that trained the members>"), std::string::npos) << log;
  std::tie(code, log) = sh("BNN_COMMIT=c " + paper_run + merged.string() + " " + (work / "out").string() + " " +
                           (work / "a.tsv").string() + " " + (work / "both" / "metrics.csv").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find((work / "both" / "metrics.csv").string() + " is not a slices table of paper-run.sh"),
            std::string::npos)
      << log;
  bnn::io::write_file_atomically(work / "bad.tsv", "started_utc\tseconds\texit_code\tcommand\n"
                                                 "2026-11-25T10:00:00Z\tsoon\t0\tbnn run\n");
  std::tie(code, log) = sh("BNN_COMMIT=c " + paper_run + merged.string() + " " + (work / "out").string() + " " +
                           (work / "bad.tsv").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("bad.tsv line 2: not a slice (four fields, the seconds a number): "), std::string::npos) << log;
  std::tie(code, log) = sh("BNN_COMMIT=c " + paper_run + merged.string() + " " + (work / "empty_out").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("no " + (work / "empty_out").string() + "/slices.tsv and no SLICES_TSV given"),
            std::string::npos)
      << log;
  std::tie(code, log) = sh("BNN_COMMIT=c " + paper_run + merged.string() + " " + (work / "out").string() +
                           " " + (work / "none.tsv").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("no slices table " + (work / "none.tsv").string()), std::string::npos) << log;
  for (const auto& e : std::filesystem::directory_iterator(work / "out")) {
    EXPECT_NE(e.path().filename().string().rfind("results.tmp", 0), 0u) << e.path();  // no staging folder left
  }
  EXPECT_EQ(read_file(work / "out" / "results" / "README.md"), readme);  // the refusals left the results as they were

  // The same archive again changes nothing.
  std::tie(code, log) = sh(script + "unpack " + merged.string() + " " + (work / "packs" / "first_01.tar").string());
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("0 member(s) added, 1 already there"), std::string::npos) << log;

  // Refused before anything changes: another experiment, and a member trained
  // again (its status.json, with its wall time, differs).
  std::tie(code, log) = sh(script + "unpack " + merged.string() + " " + (work / "packs" / "other_01.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("pack-members: " + (work / "packs" / "other_01.tar").string() +
                     " holds members of another experiment than " + (merged / "bnn.json").string()),
            std::string::npos)
      << log;
  std::tie(code, log) = sh(script + "unpack " + (work / "fresh").string() + " " +
                           (work / "packs" / "second_01.tar").string() + " " +
                           (work / "packs" / "both_02.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("member_001 in " + (work / "packs" / "both_02.tar").string() +
                     " differs from the member_001 in an earlier archive"),
            std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(work / "fresh"));
  // A member the folder holds unfinished (being trained there, perhaps), and
  // a folder that is not a run.
  std::filesystem::create_directories(work / "partial" / "member_000");
  std::tie(code, log) = sh(script + "unpack " + (work / "partial").string() + " " +
                           (work / "packs" / "first_01.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("is neither empty nor a bnn run (no bnn.json); give a new folder"), std::string::npos) << log;
  std::filesystem::copy_file(merged / "bnn.json", work / "partial" / "bnn.json");
  std::tie(code, log) = sh(script + "unpack " + (work / "partial").string() + " " +
                           (work / "packs" / "first_01.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find((work / "partial" / "member_000").string() + " is not finished (or is being trained there)"),
            std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(work / "partial" / "member_000" / "status.json"));
  EXPECT_FALSE(std::filesystem::exists(work / "partial" / "config.yaml"));
  // A member trained again differs from the one the folder holds.
  std::tie(code, log) = sh(script + "unpack " + merged.string() + " " + (work / "packs" / "both_02.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("member_001 in " + (work / "packs" / "both_02.tar").string() + " differs from " +
                     (merged / "member_001").string() + " (their status.json differ)"),
            std::string::npos)
      << log;
  std::tie(code, log) = sh(script + "unpack " + merged.string() + " " + (work / "packs" / "none.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("pack-members: no archive " + (work / "packs" / "none.tar").string()), std::string::npos) << log;
  std::tie(code, log) = sh(script + "unpack " + (work / "a.tsv").string() + " " +
                           (work / "packs" / "first_01.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find((work / "a.tsv").string() + " is not a folder"), std::string::npos) << log;
  // What pack refuses: a run folder without its files, or without a finished member.
  std::tie(code, log) = sh(script + "pack " + (work / "partial").string() + " " + (work / "x").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find((work / "partial" / "config.yaml").string() + " is missing: not a finished bnn run"),
            std::string::npos)
      << log;
  for (const std::string f : {"config.yaml", "labels.npy", "preprocess.json"}) {
    std::filesystem::copy_file(merged / f, work / "partial" / f);
  }
  std::tie(code, log) = sh(script + "pack " + (work / "partial").string() + " " + (work / "x").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("pack-members: not finished, left out: member_000"), std::string::npos) << log;
  EXPECT_NE(log.find((work / "partial").string() + " has no finished member to pack"), std::string::npos) << log;
  // After every refusal, the merged folder holds what it held.
  EXPECT_EQ(static_cast<size_t>(std::distance(std::filesystem::directory_iterator(merged),
                                              std::filesystem::directory_iterator())),
            count_after_evaluate);
  bnn::io::write_file_atomically(work / "garbage.tar", "not an archive\n");
  std::tie(code, log) = sh(script + "unpack " + (work / "fresh").string() + " " + (work / "garbage.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find((work / "garbage.tar").string() + " is not a tar archive"), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(work / "fresh"));
  // A tar archive, but not one pack wrote.
  std::filesystem::create_directories(work / "stray");
  bnn::io::write_file_atomically(work / "stray" / "notes.txt", "not a run\n");
  std::tie(code, log) = sh("tar -cf " + (work / "stray.tar").string() + " -C " + (work / "stray").string() +
                           " notes.txt && " + script + "unpack " + (work / "fresh").string() + " " +
                           (work / "stray.tar").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find((work / "stray.tar").string() + " is not an archive of pack-members.sh (no bnn.json)"),
            std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(work / "fresh"));
  std::tie(code, log) = sh(script + "pack " + (work / "packs").string() + " " + (work / "x").string());
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("holds no bnn run (no bnn.json)"), std::string::npos) << log;
  std::tie(code, log) = sh(script + "pack " + (work / "both").string() + " " + (work / "x").string() + " 2G");
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("MAX must be a whole number of MiB (15) or of KiB (500K), got '2G'"), std::string::npos) << log;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(work);
}

}  // namespace
