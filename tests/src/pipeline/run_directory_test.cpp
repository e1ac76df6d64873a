// Note [Run ownership]: what a run directory and an evaluation folder accept.
#include "src/pipeline/run_directory.h"

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/io/atomic_file.h"
#include "tests/support/error_text.h"
#include "tests/support/temp_dir.h"

namespace bnn::pipeline {
namespace {

namespace fs = std::filesystem;

config::Config tiny(const std::vector<std::string>& more = {}) {
  std::vector<std::string> o = {"model.name=mlp", "model.hidden=[32]", "run.seed=7"};
  o.insert(o.end(), more.begin(), more.end());
  return config::load_config("", o);
}

nlohmann::json manifest(const fs::path& dir) { return nlohmann::json::parse(io::read_file(dir / kManifestFile)); }

void expect_config_error(const std::function<void()>& f, const std::string& text) {
  testing::expect_error<config::ConfigError>(f, text);
}

TEST(RunOwnership, ANewDirectoryGetsAManifestOfItsExperiment) {
  const auto dir = testing::unique_temp_dir("bnn_own") / "run";
  claim_run_directory(dir, tiny(), false);
  const auto m = manifest(dir);
  EXPECT_EQ(m["bnn"], "run");
  EXPECT_EQ(m["format"], 1);
  // Every experiment key, none of the operational ones.
  EXPECT_EQ(m["settings"]["model.hidden"], "[32]");
  EXPECT_EQ(m["settings"]["sampler.step_size"], "0.000125");
  EXPECT_FALSE(m["settings"].contains("run.threads"));
  EXPECT_FALSE(m["settings"].contains("sampler.max_loss_increase"));
  EXPECT_EQ(m["experiment"].get<std::string>().size(), 16u);
  EXPECT_TRUE(fs::exists(dir / kConfigFile));
  // Operational keys may differ between the processes of one run.
  claim_run_directory(dir, tiny({"run.threads=3", "run.device=cpu", "sampler.max_loss_increase=5"}), false);
  EXPECT_EQ(manifest(dir)["experiment"], m["experiment"]);
}

TEST(RunOwnership, AnotherExperimentIsRefusedOnceAMemberStarted) {
  const auto dir = testing::unique_temp_dir("bnn_own");
  claim_run_directory(dir, tiny({"sampler.step_size=0.002"}), false);
  expect_config_error([&] { claim_run_directory(dir, tiny(), false); },
                      "holds the configuration of another experiment (sampler.step_size: 0.002 there, 0.000125 now); "
                      "give --out a new folder, or delete it (no member has started there)");
  fs::create_directories(dir / "member_000");
  expect_config_error([&] { claim_run_directory(dir, tiny(), false); },
                      "holds members of another experiment (sampler.step_size: 0.002 there, 0.000125 now)");
  expect_config_error([&] { claim_run_directory(dir, tiny(), true); },
                      "the options given change the experiment");
  // Numbers the manifest keeps to 17 digits are shown in their shortest exact form.
  const auto other = testing::unique_temp_dir("bnn_own_digits");
  claim_run_directory(other, tiny({"sampler.step_size=0.0002"}), false);
  fs::create_directories(other / "member_000");
  expect_config_error([&] { claim_run_directory(other, tiny({"sampler.step_size=0.0003"}), false); },
                      "(sampler.step_size: 0.0002 there, 0.0003 now)");
  fs::remove_all(other);
  // Without config.yaml the manifest still knows.
  fs::remove(dir / kConfigFile);
  expect_config_error([&] { claim_run_directory(dir, tiny({"run.seed=8"}), false); },
                      "run.seed: 7 there, 8 now");
}

// A key a later bnn adds is absent from older manifests: it agrees while it
// has its default.
TEST(RunOwnership, KeysAManifestLacksAgreeAtTheirDefault) {
  const auto dir = testing::unique_temp_dir("bnn_own");
  claim_run_directory(dir, tiny(), false);
  fs::create_directories(dir / "member_000");
  auto m = manifest(dir);
  m["settings"].erase("sampler.temperature");
  m["settings"]["sampler.retired_key"] = "3";  // a key this bnn no longer has
  io::write_file_atomically(dir / kManifestFile, m.dump());
  EXPECT_NO_THROW(check_run_directory(dir, tiny(), true));
  expect_config_error([&] { check_run_directory(dir, tiny({"sampler.temperature=2"}), true); },
                      "sampler.temperature: the default 1 there, 2 now");
}

// data.dir is absolute, so runs started in different working directories
// with one relative data.dir are different experiments; a manifest of an
// older bnn that kept data.dir relative still matches the folder it names
// from here.
TEST(RunOwnership, DataDirsAreFoldersNotSpellings) {
  const auto dir = testing::unique_temp_dir("bnn_own");
  const config::Config here = tiny({"data.dir=data"});
  EXPECT_EQ(here.data.dir, (fs::current_path() / "data").string());
  claim_run_directory(dir, here, false);
  fs::create_directories(dir / "member_000");
  EXPECT_NO_THROW(check_run_directory(dir, tiny({"data.dir=./data/"}), true));
  expect_config_error([&] { check_run_directory(dir, tiny({"data.dir=other/data"}), true); },
                      "data.dir: " + here.data.dir + " there, " + (fs::current_path() / "other" / "data").string() +
                          " now");
  auto m = manifest(dir);
  m["settings"]["data.dir"] = "data";  // as an older bnn wrote it
  io::write_file_atomically(dir / kManifestFile, m.dump());
  EXPECT_NO_THROW(check_run_directory(dir, here, true));
  expect_config_error([&] { check_run_directory(dir, tiny({"data.dir=other/data"}), true); },
                      "data.dir: data there, ");
}

TEST(RunOwnership, ForeignFoldersAreRefusedAndOldRunsAdopted) {
  const auto user = testing::unique_temp_dir("bnn_own");
  std::ofstream(user / "report.md") << "mine\n";
  expect_config_error([&] { claim_run_directory(user, tiny(), false); },
                      "is not empty and is not a bnn run directory (no bnn.json)");
  EXPECT_EQ(io::read_file(user / "report.md"), "mine\n");
  EXPECT_FALSE(fs::exists(user / kManifestFile));
  // A run of a bnn before manifests: config.yaml and members, no bnn.json.
  const auto old = testing::unique_temp_dir("bnn_own");
  io::write_file_atomically(old / kConfigFile, config::to_yaml(tiny()));
  fs::create_directories(old / "member_000");
  expect_config_error([&] { claim_run_directory(old, tiny({"run.seed=9"}), false); }, "run.seed: 7 there, 9 now");
  claim_run_directory(old, tiny(), false);
  EXPECT_EQ(manifest(old)["bnn"], "run");
}

// A second `bnn run` started together with the first may see only the first's
// temporary bnn.json.tmp.*, before its rename: that folder is still empty (also
// with the name bnn wrote before, bnn.json.tmp.<pid>), while a user's file that
// merely looks similar is not.
TEST(RunOwnership, AnAtomicWriteInFlightDoesNotMakeAFolderForeign) {
  const auto dir = testing::unique_temp_dir("bnn_own");
  std::ofstream(io::temporary_path(dir / "bnn.json")) << "{";
  std::ofstream(dir / "config.yaml.tmp.4242") << "run:";
  claim_run_directory(dir, tiny(), false);
  EXPECT_EQ(manifest(dir)["bnn"], "run");
  const auto user = testing::unique_temp_dir("bnn_own");
  std::ofstream(user / "notes.tmp.txt") << "mine\n";
  expect_config_error([&] { claim_run_directory(user, tiny(), false); }, "is not empty and is not a bnn run directory");
}

TEST(RunOwnership, EvaluationFoldersHoldOneExperiment) {
  const auto root = testing::unique_temp_dir("bnn_own");
  const auto run = root / "run", other = root / "other", out = root / "eval";
  claim_run_directory(run, tiny(), false);
  claim_run_directory(other, tiny({"run.seed=8"}), false);
  claim_evaluation_directory(run, {run}, tiny());  // a run's own tables
  EXPECT_EQ(manifest(run)["bnn"], "run");
  // The merged tables of two runs never go into one of them.
  expect_config_error([&] { claim_evaluation_directory(run, {run, other}, tiny()); }, "is another bnn run directory");
  claim_evaluation_directory(out, {run}, tiny());
  EXPECT_EQ(manifest(out)["bnn"], "evaluation");
  claim_evaluation_directory(out, {run}, tiny());  // again: the same experiment
  expect_config_error([&] { claim_evaluation_directory(out, {other}, tiny({"run.seed=8"})); },
                      "holds the evaluation of another experiment");
  expect_config_error([&] { claim_evaluation_directory(other, {run}, tiny()); }, "is another bnn run directory");
  expect_config_error([&] { claim_run_directory(out, tiny(), false); }, "holds the tables of `bnn evaluate`");
}

// `bnn rhat --out` writes config.yaml and member_NNN/ as a run does; it once
// overwrote a run's. An rhat folder now holds one experiment with one set of
// rhat options, written by one process at a time, and nothing else takes it.
TEST(RunOwnership, RhatFoldersHoldOneExperimentAndOneWriter) {
  const auto root = testing::unique_temp_dir("bnn_own");
  const auto run = root / "run", rhat = root / "rhat", eval = root / "eval";
  const std::map<std::string, std::string> chains4 = {{"rhat.chains", "4"}, {"rhat.repeats", "16"}};
  claim_run_directory(run, tiny(), false);
  claim_evaluation_directory(eval, {run}, tiny());
  {
    const io::FileLock lock = claim_rhat_directory(rhat, tiny(), chains4);
    const auto m = manifest(rhat);
    EXPECT_EQ(m["bnn"], "rhat");
    EXPECT_EQ(m["settings"]["rhat.chains"], "4");
    EXPECT_EQ(m["settings"]["model.hidden"], "[32]");
    EXPECT_NE(m["experiment"], manifest(run)["experiment"]);  // the rhat options name it too
    expect_config_error([&] { claim_rhat_directory(rhat, tiny(), chains4); },
                        "--out " + rhat.string() + ": another bnn rhat is writing there (" +
                            (rhat / kRhatLockFile).string() + " is locked); wait for it to finish, or give another "
                            "--out");
  }
  EXPECT_NO_THROW(claim_rhat_directory(rhat, tiny({"run.threads=2"}), chains4));  // the writer has gone
  // Without a result (its bnn rhat failed) another experiment may take the folder over ...
  EXPECT_NO_THROW(claim_rhat_directory(rhat, tiny({"run.seed=8"}), chains4));
  EXPECT_NO_THROW(claim_rhat_directory(rhat, tiny(), chains4));
  // ... with one, only the same experiment and options.
  io::write_file_atomically(rhat / "summary.json", "{}\n");
  expect_config_error([&] { claim_rhat_directory(rhat, tiny(), {{"rhat.chains", "8"}, {"rhat.repeats", "16"}}); },
                      "holds R-hat chains of this experiment with other options (rhat.chains: 4 there, 8 now); give "
                      "--out a new folder to keep both");
  expect_config_error([&] { claim_rhat_directory(rhat, tiny({"run.seed=8"}), chains4); },
                      "holds the R-hat chains of another experiment (run.seed: 7 there, 8 now)");
  EXPECT_NO_THROW(claim_rhat_directory(rhat, tiny(), chains4));

  // Nothing else goes into an rhat folder, and rhat goes into nothing else.
  expect_config_error([&] { claim_run_directory(rhat, tiny(), false); },
                      "holds the R-hat chains of `bnn rhat`, not a run; give --out a new folder");
  expect_config_error([&] { claim_run_directory(rhat, tiny(), true); },
                      "bnn run --resume " + rhat.string() + " holds the R-hat chains of `bnn rhat`, not a run; give "
                      "the run directory to resume");
  expect_config_error([&] { claim_evaluation_directory(rhat, {run}, tiny()); },
                      "holds the R-hat chains of `bnn rhat`; give --out a new folder");
  const std::string run_config = io::read_file(run / kConfigFile);
  expect_config_error([&] { claim_rhat_directory(run, tiny(), chains4); },
                      "holds the members of a bnn run; bnn rhat would write its own config.yaml and member_NNN/ "
                      "there: give --out a new folder");
  expect_config_error([&] { claim_rhat_directory(eval, tiny(), chains4); }, "holds the tables of `bnn evaluate`");
  EXPECT_EQ(manifest(run)["bnn"], "run");
  EXPECT_EQ(io::read_file(run / kConfigFile), run_config);
  EXPECT_FALSE(fs::exists(run / kRhatLockFile));
  const auto user = root / "user";
  fs::create_directories(user);
  std::ofstream(user / "chains.csv") << "mine\n";
  expect_config_error([&] { claim_rhat_directory(user, tiny(), chains4); },
                      "is not empty and is not a bnn rhat folder (no bnn.json)");
  EXPECT_FALSE(fs::exists(user / kManifestFile));
  std::ofstream(root / "file") << "x";
  expect_config_error([&] { claim_rhat_directory(root / "file", tiny(), chains4); }, "is a file; give a folder");
  // A second rhat may find only the first's lock, before its manifest: it
  // waits for nothing and is refused by the lock.
  const auto starting = root / "starting";
  fs::create_directories(starting);
  {
    const io::FileLock first = io::FileLock::acquire(starting / kRhatLockFile);
    expect_config_error([&] { claim_rhat_directory(starting, tiny(), chains4); }, "another bnn rhat is writing there");
  }
  EXPECT_FALSE(fs::exists(starting / kManifestFile));
  EXPECT_NO_THROW(claim_rhat_directory(starting, tiny(), chains4));  // a lock file nobody holds
  // The folder of a bnn rhat before manifests: its config.yaml and summary.json say what it holds.
  const auto older = root / "older";
  fs::create_directories(older);
  io::write_file_atomically(older / kConfigFile, config::to_yaml(tiny()));
  io::write_file_atomically(older / "chains.csv", "repeat,chain,epoch,loss\n");
  io::write_file_atomically(older / "summary.json",
                            R"({"chains": 4, "repeats": 16, "rho": 0.5, "loss_every": 0, "per_repeat": []})");
  expect_config_error([&] { claim_rhat_directory(older, tiny(), {{"rhat.chains", "2"}}); },
                      "(rhat.chains: 4 there, 2 now)");
  expect_config_error([&] { claim_rhat_directory(older, tiny({"run.seed=8"}), chains4); }, "run.seed: 7 there, 8 now");
  EXPECT_NO_THROW(claim_rhat_directory(older, tiny(), {{"rhat.chains", "4"}, {"rhat.rho", "0.5"}}));
  EXPECT_EQ(manifest(older)["bnn"], "rhat");
  fs::remove_all(root);
}

// Commands started together on one new folder may all find it empty; one
// manifest stands and the others are checked against it (without the
// exclusive create, both of two experiments' runs went on in one folder).
TEST(RunOwnership, CommandsThatFindAFolderEmptyTogetherAgreeOnOneManifest) {
  const auto root = testing::unique_temp_dir("bnn_own_race");
  // Claims `commands` (each returns whether it claimed the folder) at the same moment; how many succeeded.
  const auto together = [](const std::vector<std::function<bool()>>& commands) {
    std::atomic<int> ready{0};
    std::vector<int> won(commands.size(), 0);
    std::vector<std::thread> threads;
    for (size_t c = 0; c < commands.size(); ++c) {
      threads.emplace_back([&, c] {
        ++ready;
        while (ready < static_cast<int>(commands.size())) {
        }
        try {
          won[c] = commands[c]() ? 1 : 0;
        } catch (const config::ConfigError&) {
        }
      });
    }
    for (auto& t : threads) t.join();
    return won;
  };
  const auto run = [](const fs::path& dir, const config::Config& c) {
    return [dir, c] { return claim_run_directory(dir, c, false), true; };
  };
  for (int round = 0; round < 20; ++round) {
    // Two runs of one experiment share the folder.
    const auto same = root / fmt::format("same_{}", round);
    EXPECT_EQ(together({run(same, tiny()), run(same, tiny())}), (std::vector<int>{1, 1})) << round;
    // Runs of two experiments, or a run and an rhat: one alone.
    const auto two = root / fmt::format("two_{}", round);
    const auto won = together({run(two, tiny()), run(two, tiny({"run.seed=8"}))});
    EXPECT_EQ(won[0] + won[1], 1) << round;
    EXPECT_EQ(manifest(two)["settings"]["run.seed"], won[0] == 1 ? "7" : "8") << round;
    const auto mixed = root / fmt::format("mixed_{}", round);
    const auto rhat = [&] {
      const io::FileLock lock = claim_rhat_directory(mixed, tiny(), {{"rhat.chains", "4"}});
      return true;
    };
    const auto kinds = together({run(mixed, tiny()), rhat});
    EXPECT_EQ(kinds[0] + kinds[1], 1) << round;
    EXPECT_EQ(manifest(mixed)["bnn"], kinds[0] == 1 ? "run" : "rhat") << round;
  }
  fs::remove_all(root);
}

// Note [Output files]: a one-file output is overwritten only when it is the
// same command's earlier output.
TEST(OutputFiles, OnlyTheCommandsOwnEarlierOutputIsOverwritten) {
  const auto dir = testing::unique_temp_dir("bnn_output_files");
  const std::vector<std::string> keys = {"images", "run_members"};
  EXPECT_NO_THROW(check_output_file(dir / "new.csv", "bnn x", "a,b\n"));
  io::write_file_atomically(dir / "empty.csv", "");  // mktemp's: nothing to keep
  EXPECT_NO_THROW(check_output_file(dir / "empty.csv", "bnn x", "a,b\n"));
  io::write_file_atomically(dir / "ours.csv", "a,b\n1,2\n");
  EXPECT_NO_THROW(check_output_file(dir / "ours.csv", "bnn x", "a,b\n"));
  io::write_file_atomically(dir / "theirs.csv", "a,bc\n1,2\n");
  expect_config_error([&] { check_output_file(dir / "theirs.csv", "bnn x", "a,b\n"); },
                      "bnn x --out " + (dir / "theirs.csv").string() + ": the file exists and is not an earlier output "
                      "of bnn x, so it is not overwritten; give another file name, or move it away first");
  io::write_file_atomically(dir / "short.csv", "a,");
  expect_config_error([&] { check_output_file(dir / "short.csv", "bnn x", "a,b\n"); }, "not an earlier output");
  io::write_file_atomically(dir / "ours.json", R"({"images": [], "run_members": 2, "more": 1})");
  EXPECT_NO_THROW(check_output_file(dir / "ours.json", "bnn x", "a,b\n", keys));
  io::write_file_atomically(dir / "partial.json", R"({"images": []})");
  expect_config_error([&] { check_output_file(dir / "partial.json", "bnn x", "a,b\n", keys); },
                      "not an earlier output");
  io::write_file_atomically(dir / "broken.json", R"({"images": [)");
  expect_config_error([&] { check_output_file(dir / "broken.json", "bnn x", "a,b\n", keys); },
                      "not an earlier output");
  io::write_file_atomically(dir / "array.json", R"(["images", "run_members"])");
  expect_config_error([&] { check_output_file(dir / "array.json", "bnn x", "a,b\n", keys); },
                      "not an earlier output");
  expect_config_error([&] { check_output_file(dir, "bnn x", "a,b\n"); }, "is a folder; give a file name");
  EXPECT_EQ(io::read_file(dir / "theirs.csv"), "a,bc\n1,2\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace bnn::pipeline
