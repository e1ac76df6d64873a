// Note [Run ownership]: what a run directory and an evaluation folder accept.
#include "src/pipeline/run_directory.h"

#include <fstream>

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
  // Only the settings that differ from the defaults, so that a key a later
  // bnn adds with a default leaves the identity alone.
  EXPECT_EQ(m["settings"], (nlohmann::json{{"model.hidden", "[32]"}, {"model.name", "mlp"}, {"run.seed", "7"}}));
  EXPECT_EQ(m["experiment"].get<std::string>().size(), 16u);
  EXPECT_TRUE(fs::exists(dir / kConfigFile));
  // Operational keys may differ between the processes of one run.
  claim_run_directory(dir, tiny({"run.threads=3", "run.device=cpu", "sampler.max_loss_increase=5"}), false);
  EXPECT_EQ(manifest(dir)["experiment"], m["experiment"]);
}

TEST(RunOwnership, AnotherExperimentIsRefusedOnceAMemberStarted) {
  const auto dir = testing::unique_temp_dir("bnn_own");
  claim_run_directory(dir, tiny(), false);
  // No member yet (a run that failed while loading data): replaced.
  claim_run_directory(dir, tiny({"sampler.step_size=0.002"}), false);
  EXPECT_EQ(manifest(dir)["settings"]["sampler.step_size"], "0.002");
  fs::create_directories(dir / "member_000");
  expect_config_error([&] { claim_run_directory(dir, tiny(), false); },
                      "holds members of another experiment (sampler.step_size: 0.002 there, 0.000125 now)");
  expect_config_error([&] { claim_run_directory(dir, tiny(), true); },
                      "the --set options change the experiment");
  // Without config.yaml the manifest still knows.
  fs::remove(dir / kConfigFile);
  expect_config_error([&] { claim_run_directory(dir, tiny({"run.seed=8"}), false); },
                      "run.seed: 7 there, 8 now");
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

TEST(RunOwnership, EvaluationFoldersHoldOneExperiment) {
  const auto root = testing::unique_temp_dir("bnn_own");
  const auto run = root / "run", other = root / "other", out = root / "eval";
  claim_run_directory(run, tiny(), false);
  claim_run_directory(other, tiny({"run.seed=8"}), false);
  claim_evaluation_directory(run, {run}, tiny());  // a run's own tables
  EXPECT_EQ(manifest(run)["bnn"], "run");
  claim_evaluation_directory(out, {run}, tiny());
  EXPECT_EQ(manifest(out)["bnn"], "evaluation");
  claim_evaluation_directory(out, {run}, tiny());  // again: the same experiment
  expect_config_error([&] { claim_evaluation_directory(out, {other}, tiny({"run.seed=8"})); },
                      "holds the evaluation of another experiment");
  expect_config_error([&] { claim_evaluation_directory(other, {run}, tiny()); }, "is another bnn run directory");
  expect_config_error([&] { claim_run_directory(out, tiny(), false); }, "holds the tables of `bnn evaluate`");
}

}  // namespace
}  // namespace bnn::pipeline
