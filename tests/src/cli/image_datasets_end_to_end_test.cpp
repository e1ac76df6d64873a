// The bnn executable on tiny generated chest X-ray, CelebA and image-folder
// directories, run with the smoke configs as a user would, and the one-line
// errors it prints for broken inputs.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/image_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;

std::string config_path(const std::string& name) { return std::string(BNN_SOURCE_DIR) + "/configs/" + name; }

class ImageDatasetsEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override { work_ = bnn::testing::unique_temp_dir("bnn_images_e2e"); }
  void TearDown() override { fs::remove_all(work_); }

  using Result = bnn::testing::CommandResult;

  Result bnn(const std::string& args) {
    return bnn::testing::run_bnn(args, work_ / ("log_" + std::to_string(++calls_) + ".txt"));
  }

  Result smoke_run(const std::string& config, const fs::path& data, const std::string& extra = "",
                   const std::string& out = "run") {
    return bnn("run --config " + config_path(config) + " --out " + (work_ / out).string() +
               " --threads 1 --set data.dir=" + data.string() + extra);
  }

  // The run finished and wrote finite metrics for `test` test images of `classes` classes.
  void expect_finished(const Result& r, int64_t test, int64_t classes) const {
    ASSERT_EQ(r.code, 0) << r.output;
    const auto metrics = nlohmann::json::parse(bnn::io::read_file(work_ / "run" / "metrics.json"));
    ASSERT_EQ(metrics["ensembles"].size(), 6u);  // sizes 1, 2 for adam, swa, bayes
    for (const auto& row : metrics["ensembles"]) {
      EXPECT_TRUE(std::isfinite(row["nll"]["mean"].get<double>())) << row;
    }
    EXPECT_EQ(bnn::data_loaders::read_npy(work_ / "run" / "labels.npy").numel(), test);
    EXPECT_EQ(bnn::data_loaders::read_npy(work_ / "run" / "member_000" / "bayes_probs.npy").sizes(),
              (std::vector<int64_t>{test, classes}));
  }

  void write_celeba() const {
    std::vector<bnn::testing::CelebaEntry> entries;
    for (int i = 0; i < 40; ++i) entries.push_back({i < 30 ? 0 : i < 32 ? 1 : 2, i % 2 == 0, i % 2 == 1});
    bnn::testing::write_celeba_dir(work_ / "celeba", entries);
  }

  void write_image_folder() const {
    for (const char* c : {"left", "right"}) {
      for (int i = 0; i < 16; ++i) {
        bnn::testing::write_image(work_ / "images" / c / fmt::format("{}.png", i),
                                  bnn::testing::pattern_image(24, 24, 3, i + (c[0] == 'l' ? 0 : 50)));
      }
    }
  }

  fs::path work_;
  int calls_ = 0;
};

TEST_F(ImageDatasetsEndToEnd, ChestXraySmokeConfig) {
  bnn::testing::write_chest_xray_dir(work_ / "chest_xray", {10, 10, 4, 4});
  const Result r = smoke_run("chest_xray_smoke.yaml", work_ / "chest_xray");
  // 10 NORMAL x 3 + 10 PNEUMONIA x 2 augmented training examples.
  EXPECT_NE(r.output.find("chest_xray: 50 training, 8 test images"), std::string::npos) << r.output;
  expect_finished(r, 8, 2);
}

TEST_F(ImageDatasetsEndToEnd, CelebaSmokeConfig) {
  write_celeba();
  const Result r = smoke_run("celeba_smoke.yaml", work_ / "celeba");
  EXPECT_NE(r.output.find("celeba: 30 training, 8 test images"), std::string::npos) << r.output;
  expect_finished(r, 8, 2);
}

TEST_F(ImageDatasetsEndToEnd, ImageFolderSmokeConfig) {
  write_image_folder();
  const Result r = smoke_run("image_folder_smoke.yaml", work_ / "images");
  EXPECT_NE(r.output.find("image_folder: 24 training, 8 test images"), std::string::npos) << r.output;
  expect_finished(r, 8, 2);
}

TEST_F(ImageDatasetsEndToEnd, CorruptJpegIsOneClearLineOrSkipped) {
  bnn::testing::write_chest_xray_dir(work_ / "chest_xray", {10, 10, 4, 4});
  const auto bad = work_ / "chest_xray" / "train" / "NORMAL" / "img004.jpeg";
  bnn::testing::truncate_to_half(bad);
  const Result r = smoke_run("chest_xray_smoke.yaml", work_ / "chest_xray");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: " + bad.string() +
                          ": cannot decode the image: truncated JPEG (no end-of-image marker after the image data)"),
            std::string::npos)
      << r.output;

  const Result skipped =
      smoke_run("chest_xray_smoke.yaml", work_ / "chest_xray", " --set data.skip_bad_images=true", "skipping");
  EXPECT_NE(skipped.output.find("chest_xray train: skipped 1 unreadable image file (data.skip_bad_images), the first " +
                                bad.string()),
            std::string::npos)
      << skipped.output;
  EXPECT_NE(skipped.output.find("chest_xray: 47 training, 8 test images"), std::string::npos) << skipped.output;
}

TEST_F(ImageDatasetsEndToEnd, MalformedCelebaLineIsOneClearLine) {
  write_celeba();
  bnn::io::write_file_atomically(work_ / "celeba" / "list_eval_partition.txt", "000001.jpg 0\n000002.jpg\n");
  const Result r = smoke_run("celeba_smoke.yaml", work_ / "celeba");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: " + (work_ / "celeba" / "list_eval_partition.txt").string() +
                          ":2: expected '<image> <0|1|2>', got '000002.jpg'"),
            std::string::npos)
      << r.output;
}

TEST_F(ImageDatasetsEndToEnd, ImageFolderNeedsADirectory) {
  const Result r = bnn("run --config " + config_path("image_folder_smoke.yaml") + " --out " +
                       (work_ / "run").string() + " --set data.dir=auto");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("config key 'data.dir': invalid value 'auto': image_folder has no default directory"),
            std::string::npos)
      << r.output;
}

}  // namespace
