// The bnn executable on a tiny generated CIFAR-10 directory, run with
// configs/cifar10_smoke.yaml as a user would.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/cifar10_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

const std::string kSmoke = std::string(BNN_SOURCE_DIR) + "/configs/cifar10_smoke.yaml";

class Cifar10EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = bnn::testing::unique_temp_dir("bnn_cifar10_e2e");
    bnn::testing::write_cifar10_dir(work_ / "data", /*train_per_file=*/40, /*test=*/40);
  }
  void TearDown() override { fs::remove_all(work_); }

  using Result = bnn::testing::CommandResult;

  // Runs the binary; one log file per call, inside this test's own directory.
  Result bnn(const std::string& args) {
    return bnn::testing::run_bnn(args, work_ / ("log_" + std::to_string(++calls_) + ".txt"));
  }

  std::string smoke_run(const fs::path& out) const {
    return "run --config " + kSmoke + " --out " + out.string() + " --threads 1 --set data.dir=" +
           (work_ / "data").string();
  }

  fs::path work_;
  int calls_ = 0;
};

TEST_F(Cifar10EndToEnd, SmokeConfigRunsOnGeneratedFiles) {
  const auto out = work_ / "run";
  const Result r = bnn(smoke_run(out));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cifar10: 200 training, 40 test images"), std::string::npos) << r.output;

  const auto metrics = nlohmann::json::parse(bnn::io::read_file(out / "metrics.json"));
  ASSERT_EQ(metrics["ensembles"].size(), 6u);  // sizes 1, 2 for adam, swa, bayes
  for (const auto& row : metrics["ensembles"]) {
    for (const char* key : {"accuracy", "nll", "ace", "rps", "ece", "brier"}) {
      ASSERT_TRUE(row[key].contains("mean")) << key;
      EXPECT_TRUE(std::isfinite(row[key]["mean"].get<double>())) << key << " " << row;
    }
  }
  EXPECT_EQ(bnn::data_loaders::read_npy(out / "labels.npy").numel(), 40);
  EXPECT_EQ(bnn::data_loaders::read_npy(out / "member_000" / "bayes_probs.npy").sizes(),
            (std::vector<int64_t>{40, 10}));
}

TEST_F(Cifar10EndToEnd, TruncatedFileIsOneClearLine) {
  const auto path = work_ / "data" / "data_batch_2.bin";
  fs::resize_file(path, fs::file_size(path) - 1);
  const Result r = bnn(smoke_run(work_ / "run"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: " + path.string() +
                          ": truncated: 122919 bytes is not a multiple of the 3073-byte record"),
            std::string::npos)
      << r.output;
}

}  // namespace
