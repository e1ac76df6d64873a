// `bnn run` and `bnn predict` on TorchScript modules (model.name torchscript)
// as a user runs them: a scripted CNN with BatchNorm and a traced MLP learn a
// separable array data set through Adam, SWA and SMS-UBU; the run keeps its
// module; a resume finishes nothing twice; a different module under the same
// path, and config mistakes, are refused before anything is written.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/array_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn {
namespace {

namespace fs = std::filesystem;

fs::path scripted_module(const std::string& name) { return fs::path(BNN_TORCHSCRIPT_DIR) / name; }

std::string run_args(const fs::path& data, const fs::path& module, const fs::path& out) {
  return "run --config " + std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml --out " + out.string() +
         " --threads 1 --set data.dataset=arrays --set data.dir=" + data.string() +
         " --set model.name=torchscript --set model.path=" + module.string() +
         " --set data.batch_size=50 --set data.train_limit=0 --set data.test_limit=0 --set run.members=1"
         " --set evaluation.bn_batches=2 --set evaluation.save_sample_weights=true";
}

TEST(TorchScriptEndToEnd, ScriptedAndTracedModulesRunPredictAndResume) {
  ASSERT_TRUE(fs::exists(scripted_module("cnn_bn_scripted.pt")))
      << scripted_module("cnn_bn_scripted.pt") << " missing: the build makes it with a python3 that has torch";
  const auto work = bnn::testing::unique_temp_dir("bnn_torchscript_run");
  const auto data = work / "data";
  bnn::testing::write_dark_and_bright(data, 11);
  const auto module = work / "my_net.pt";
  fs::copy_file(scripted_module("cnn_bn_scripted.pt"), module);

  const auto out = work / "cnn";
  const auto run = bnn::testing::run_bnn(run_args(data, module, out), work / "cnn.txt");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("TorchScript my_net.pt: torch.nn.modules.container.Sequential, 1 BatchNorm layer (338 "
                            "parameters)"),
            std::string::npos)
      << run.output;
  EXPECT_GT(bnn::testing::ensemble_row(out, "bayes", 1)["accuracy"]["mean"].get<double>(), 0.9);
  EXPECT_EQ(io::read_file(out / "model.pt"), io::read_file(module));

  // predict reads the run's copy: it works with the user's file gone.
  fs::rename(module, work / "elsewhere.pt");
  const auto csv = work / "predictions.csv";
  const auto predict = bnn::testing::run_bnn(
      "predict --run " + out.string() + " --images " + (data / "test_x.npy").string() + " --out " + csv.string(),
      work / "predict.txt");
  ASSERT_EQ(predict.code, 0) << predict.output;
  EXPECT_NE(io::read_file(csv).find("test_x.npy[99]"), std::string::npos);
  // So does hessian, on uint8 pixels standardised as in training (it once fed
  // the module the raw bytes).
  const auto hessian = bnn::testing::run_bnn("hessian --checkpoint " + (out / "member_000").string() +
                                                 " --examples 100 --iterations 20 --threads 1",
                                             work / "hessian.txt");
  ASSERT_EQ(hessian.code, 0) << hessian.output;
  const auto points = nlohmann::json::parse(io::read_file(out / "member_000" / "hessian.json"))["points"];
  ASSERT_EQ(points.size(), 4u) << points;
  for (const auto& p : points) EXPECT_GT(p["spectral_norm"].get<double>(), 0.0) << p;
  fs::rename(work / "elsewhere.pt", module);

  // A resume has nothing left to do; the same path with other contents is refused.
  const auto again = bnn::testing::run_bnn("run --resume " + out.string() + " --threads 1", work / "again.txt");
  EXPECT_EQ(again.code, 0) << again.output;
  fs::copy_file(scripted_module("mlp_scripted.pt"), module, fs::copy_options::overwrite_existing);
  for (const std::string& args : {run_args(data, module, out), "run --resume " + out.string()}) {
    const auto other = bnn::testing::run_bnn(args, work / "other.txt");
    EXPECT_EQ(other.code, 2) << other.output;
    EXPECT_NE(other.output.find("config key 'model.path': " + module.string() + " is not the module run directory " +
                                out.string() + " was started with"),
              std::string::npos)
        << other.output;
  }
  EXPECT_EQ(io::read_file(out / "model.pt"), io::read_file(scripted_module("cnn_bn_scripted.pt")));

  // A traced module without BatchNorm, keeping the file's weights.
  const auto traced = bnn::testing::run_bnn(
      run_args(data, scripted_module("mlp_traced.pt"), work / "traced") + " --set model.init=file", work / "traced.txt");
  ASSERT_EQ(traced.code, 0) << traced.output;
  EXPECT_GT(bnn::testing::ensemble_row(work / "traced", "bayes", 1)["accuracy"]["mean"].get<double>(), 0.9);
  fs::remove_all(work);
}

// A module that passes the checks at load and raises in training fails each
// member (status.json says why), not the run: every member is tried.
TEST(TorchScriptEndToEnd, ErrorsOfTheModulesCodeFailTheMembers) {
  const auto work = bnn::testing::unique_temp_dir("bnn_torchscript_fails");
  const auto data = work / "data";
  bnn::testing::write_dark_and_bright(data, 11);
  const auto module = scripted_module("fails_on_batches.pt");
  const auto out = work / "out";
  const auto run = bnn::testing::run_bnn(run_args(data, module, out) + " --set run.members=2", work / "run.txt");
  EXPECT_EQ(run.code, 3) << run.output;
  const std::string why = "model file " + module.string() +
                          ": forward fails on a batch of shape [50, 1, 6, 6]: this test module takes at most 2 inputs";
  for (const char* member : {"member_000", "member_001"}) {
    const auto status = nlohmann::json::parse(io::read_file(out / member / "status.json"));
    EXPECT_EQ(status["status"], "failed") << member;
    EXPECT_EQ(status["error"], why) << member;
  }
  EXPECT_NE(run.output.find("member 1 failed: " + why), std::string::npos) << run.output;
  fs::remove_all(work);
}

TEST(TorchScriptEndToEnd, MistakesAreRefusedBeforeTheRunDirectoryIsMade) {
  const auto work = bnn::testing::unique_temp_dir("bnn_torchscript_refused");
  const auto data = work / "data";
  bnn::testing::write_dark_and_bright(data, 11);
  struct Case {
    std::string args;
    std::string expected;
  };
  const std::string base = run_args(data, scripted_module("mlp_scripted.pt"), work / "out");
  const std::vector<Case> cases = {
      {run_args(data, scripted_module("wrong_classes.pt"), work / "out"),
       "config key 'model.path': model file " + scripted_module("wrong_classes.pt").string() +
           ": forward returns shape [2, 5] for a batch of shape [2, 1, 6, 6]; bnn needs [2, 2]"},
      {run_args(data, work / "nothing.pt", work / "out"),
       "config key 'model.path': model file " + (work / "nothing.pt").string() + ": no such file"},
      {base + " --set \"model.path=''\"",
       "config key 'model.path': model.name torchscript needs the file of your module"},
      {base + " --set model.name=mlp", "config key 'model.path': invalid value '" +
                                           scripted_module("mlp_scripted.pt").string() +
                                           "': only model.name torchscript reads it (model.name is mlp)"},
      {base + " --set data.batch_size=5000", "config key 'data.batch_size': invalid value '5000': larger than the "},
      {base + " --member-design stacked --members-per-device 2",
       "bnn: error: --member-design stacked: model.name torchscript cannot be stacked (only bnn's own models can); "
       "use --member-design streams"},
  };
  for (const auto& c : cases) {
    const auto result = bnn::testing::run_bnn(c.args, work / "refused.txt");
    EXPECT_EQ(result.code, 2) << result.output;
    EXPECT_NE(result.output.find(c.expected), std::string::npos) << result.output;
    EXPECT_FALSE(fs::exists(work / "out")) << c.args;
  }
  fs::remove_all(work);
}

}  // namespace
}  // namespace bnn
