// OOD detection as a user runs it (Note [Out-of-distribution sets] in
// src/pipeline/ood.h): `bnn run` with evaluation.ood predicts an OOD set at
// every point estimate and retained sample, and `bnn evaluate` reports
// AUROC, AUPR and FPR95, which are recomputed here from the member's files.
// Sets the model cannot take are refused before anything is written.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "data_loaders/npy.h"
#include "src/evaluation/ood.h"
#include "src/evaluation/uncertainty.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/array_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn {
namespace {

namespace fs = std::filesystem;

// An OOD set (test split only): half dark, half bright pixels in a checkerboard, `side` x `side`.
void write_ood(const fs::path& dir, int64_t side, int64_t n = 60) {
  fs::create_directories(dir);
  const torch::Tensor rows = torch::arange(side).view({side, 1}), cols = torch::arange(side).view({1, side});
  const torch::Tensor board = (rows + cols).remainder(2).to(torch::kByte) * 200 + 25;
  const torch::Tensor x = board.view({1, 1, side, side}).repeat({n, 1, 1, 1}).contiguous();
  io::write_npy(dir / "test_x.npy", x);
  io::write_npy(dir / "test_y.npy", torch::zeros({n}, torch::kLong));
}

std::string ood_run_args(const fs::path& data, const std::string& ood, const fs::path& out) {
  return "run --config " + std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml --out " + out.string() +
         " --threads 1 --set data.dataset=arrays --set data.dir=" + data.string() +
         " --set data.batch_size=50 --set data.train_limit=0 --set data.test_limit=0 --set run.members=2"
         " --set sampler.epochs=4 --set evaluation.ood=" + ood;
}

torch::Tensor npy(const fs::path& path) { return data_loaders::read_npy(path).to(torch::kDouble); }

TEST(OodEndToEnd, RunPredictsTheSetAndEvaluateScoresIt) {
  const auto work = bnn::testing::unique_temp_dir("bnn_ood_run");
  bnn::testing::write_dark_and_bright(work / "data", 5);
  write_ood(work / "board", 6);
  const auto out = work / "run";
  const std::string ood = "[{dataset: arrays, dir: " + (work / "board").string() + ", name: board, limit: 40}]";
  const auto run = bnn::testing::run_bnn(ood_run_args(work / "data", "'" + ood + "'", out), work / "run.txt");
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("OOD set board: 40 examples"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("OOD set board: AUROC / AUPR / FPR95"), std::string::npos) << run.output;

  // The member mirrors its own files for the set: points and the same sample steps.
  const auto member = out / "member_000";
  const auto board = member / "ood" / "board";
  for (const char* point : {"adam", "swa"}) {
    const torch::Tensor p = data_loaders::read_npy(board / (std::string(point) + "_probs.npy"));
    EXPECT_EQ(p.sizes(), (std::vector<int64_t>{40, 2})) << point;
    EXPECT_EQ(p.scalar_type(), torch::kFloat);
  }
  std::vector<std::string> test_samples, ood_samples;
  for (const auto& e : fs::directory_iterator(member / "samples")) test_samples.push_back(e.path().filename());
  for (const auto& e : fs::directory_iterator(board / "samples")) ood_samples.push_back(e.path().filename());
  std::sort(test_samples.begin(), test_samples.end());
  std::sort(ood_samples.begin(), ood_samples.end());
  ASSERT_EQ(test_samples.size(), 3u);  // 4 epochs, burn-in 1
  EXPECT_EQ(ood_samples, test_samples);

  // metrics.json's bayes row of size 1 (two groups, one member each) recomputed from the files.
  const auto metrics = nlohmann::json::parse(io::read_file(out / "metrics.json"));
  ASSERT_TRUE(metrics.contains("ood"));
  std::vector<double> auroc;
  for (const char* name : {"member_000", "member_001"}) {
    evaluation::MixtureAccumulator in, ood_mix;
    for (const auto& file : test_samples) {
      in.add(npy(out / name / "samples" / file));
      ood_mix.add(npy(out / name / "ood" / "board" / "samples" / file));
    }
    auroc.push_back(evaluation::detection_metrics(evaluation::row_entropy(in.mean()),
                                                  evaluation::row_entropy(ood_mix.mean()))
                        .auroc);
  }
  bool found = false;
  for (const auto& row : metrics["ood"]) {
    EXPECT_EQ(row["set"], "board");
    if (row["method"] == "bayes" && row["size"] == 1 && row["score"] == "entropy") {
      found = true;
      EXPECT_NEAR(row["auroc"]["mean"].get<double>(), (auroc[0] + auroc[1]) / 2, 1e-12);
      // Checkerboards of dark and bright pixels sit between the two classes: the ensemble is unsure there.
      EXPECT_GT(row["auroc"]["mean"].get<double>(), 0.9);
    }
    if (row["size"] == 1 && row["method"] != "bayes") {
      EXPECT_NE(row["score"], "mutual_information");
    }
  }
  EXPECT_TRUE(found) << metrics["ood"].dump();
  EXPECT_EQ(metrics["ood"].size(), 3u * (3 + 3) - 2);  // 3 methods x sizes 1, 2 x 3 scores, no MI for single nets
  EXPECT_NE(io::read_file(out / "metrics_ood.csv").find("board,bayes,2,1,mutual_information,"), std::string::npos);
  const std::string report = io::read_file(out / "report.md");
  EXPECT_NE(report.find("## Out-of-distribution detection"), std::string::npos);
  EXPECT_NE(report.find("### board (40 examples against 100 test examples)"), std::string::npos);

  // --burn-in selects the same samples of the OOD set as of the test set.
  const auto later = bnn::testing::run_bnn("evaluate " + out.string() + " --burn-in 3 --no-figures --out " +
                                               (work / "later").string(),
                                           work / "later.txt");
  ASSERT_EQ(later.code, 0) << later.output;
  const auto later_metrics = nlohmann::json::parse(io::read_file(work / "later" / "metrics.json"));
  EXPECT_NE(later_metrics["ood"].dump(), metrics["ood"].dump());

  // A member whose prediction of the set is gone cannot be scored: the error names the file.
  const auto gone = board / "samples" / ood_samples.back();
  fs::remove(gone);
  const auto missing = bnn::testing::run_bnn("evaluate " + out.string() + " --no-figures --out " +
                                                 (work / "missing").string(),
                                             work / "missing.txt");
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find(gone.string() + " missing: the member did not predict this OOD set"), std::string::npos)
      << missing.output;
  fs::remove_all(work);
}

TEST(OodEndToEnd, SetsTheModelCannotTakeAreRefusedBeforeAnythingIsWritten) {
  const auto work = bnn::testing::unique_temp_dir("bnn_ood_bad");
  bnn::testing::write_dark_and_bright(work / "data", 5);
  write_ood(work / "big", 8);
  fs::create_directories(work / "rgb");  // three channels where the model takes one
  io::write_npy(work / "rgb" / "test_x.npy", torch::zeros({4, 3, 6, 6}, torch::kByte));
  io::write_npy(work / "rgb" / "test_y.npy", torch::zeros({4}, torch::kLong));
  fs::create_directories(work / "features");  // feature rows where the model takes images
  io::write_npy(work / "features" / "test_x.npy", torch::zeros({4, 20}, torch::kFloat));
  io::write_npy(work / "features" / "test_y.npy", torch::zeros({4}, torch::kLong));
  const auto out = work / "run";
  const auto expect_refused = [&](const std::string& ood, const std::string& message) {
    const auto r = bnn::testing::run_bnn(ood_run_args(work / "data", "'" + ood + "'", out), work / "bad.txt");
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out)) << ood;
  };
  expect_refused("[{dataset: arrays, dir: " + (work / "big").string() + "}]",
                 "config key 'evaluation.ood': set 'arrays' (arrays in " + (work / "big").string() +
                     "): its images have shape (1 x 8 x 8), but the model takes the training data's (1 x 6 x 6)");
  expect_refused("[{dataset: arrays, dir: " + (work / "rgb").string() + ", name: rgb}]",
                 "set 'rgb' (arrays in " + (work / "rgb").string() +
                     "): images of 3 channel(s), but standardization statistics for 1; an OOD set needs the training "
                     "data's input shape (1 x 6 x 6)");
  expect_refused("[{dataset: arrays, dir: " + (work / "big").string() + ", name: few, limit: 61}]",
                 "set 'few' (arrays in " + (work / "big").string() + "): " + (work / "big" / "test_x.npy").string() +
                     ": limit = 61 exceeds its 60 examples");
  expect_refused("[{dataset: arrays, dir: " + (work / "features").string() + ", name: feat}]",
                 "set 'feat' (arrays in " + (work / "features").string() +
                     "): features of shape [4, 20], but the training data's standardization has 1 mean(s) and "
                     "standard deviation(s), one per channel or feature; an OOD set needs the training data's input "
                     "shape (1 x 6 x 6)");
  expect_refused("[{dataset: arrays, dir: " + (work / "nowhere").string() + ", name: gone}]",
                 "set 'gone' (arrays in " + (work / "nowhere").string() + "): dir does not exist");
  expect_refused("[{dataset: fashion_mnist, dir: " + (work / "data").string() + "}]",
                 "set 'fashion_mnist' (fashion_mnist in " + (work / "data").string() + "): " +
                     (work / "data").string() + ": missing Fashion-MNIST file");
  expect_refused("[{dataset: arrays, dir: " + (work / "big").string() + "}]' --set 'evaluation.save_sample_probs=false",
                 "config key 'evaluation.ood': needs evaluation.save_sample_probs true");
  fs::remove_all(work);
}

}  // namespace
}  // namespace bnn
