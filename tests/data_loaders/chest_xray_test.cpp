#include "data_loaders/chest_xray.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "tests/support/error_text.h"
#include "tests/support/image_files.h"
#include "tests/support/temp_dir.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;
using bnn::testing::error_of;

class ChestXray : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = bnn::testing::unique_temp_dir("bnn_chest_xray") / "chest_xray";
    bnn::testing::write_chest_xray_dir(dir_, {/*train_normal=*/3, /*train_pneumonia=*/5, /*test_normal=*/2,
                                              /*test_pneumonia=*/3});
    options_.dir = dir_;
    options_.side = 24;
    options_.seed = 7;
    options_.augment_copies = {18, 6};  // the config default
    options_.threads = 2;
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }

  Dataset load() const { return load_chest_xray(options_, torch::kCPU); }

  fs::path dir_;
  LoadOptions options_;
};

TEST_F(ChestXray, ShapesDtypesAndAugmentedClassCounts) {
  const Dataset d = load();
  EXPECT_EQ(d.name, "chest_xray");
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{1, 24, 24}));
  // 3 NORMAL x 18 + 5 PNEUMONIA x 6 training examples; the test split as is.
  ASSERT_EQ(d.train.size(), 3 * 18 + 5 * 6);
  EXPECT_EQ(d.train.images.sizes(), (std::vector<int64_t>{84, 1, 24, 24}));
  EXPECT_EQ(d.train.images.scalar_type(), torch::kByte);
  EXPECT_EQ(d.train.labels.scalar_type(), torch::kLong);
  EXPECT_EQ(d.train.labels.eq(0).sum().item<int64_t>(), 54);
  EXPECT_EQ(d.train.labels.eq(1).sum().item<int64_t>(), 30);
  ASSERT_EQ(d.test.size(), 5);
  EXPECT_EQ(d.test.images.scalar_type(), torch::kByte);
  EXPECT_EQ(d.test.labels.eq(0).sum().item<int64_t>(), 2);
  EXPECT_EQ(d.test.labels.eq(1).sum().item<int64_t>(), 3);
  // Classes interleaved, a file's copies consecutive: NORMAL x18, PNEUMONIA x6, ...
  EXPECT_EQ(d.train.labels[0].item<int64_t>(), 0);
  EXPECT_EQ(d.train.labels[17].item<int64_t>(), 0);
  EXPECT_EQ(d.train.labels[18].item<int64_t>(), 1);
  EXPECT_EQ(d.test.labels[0].item<int64_t>(), 0);
  EXPECT_EQ(d.test.labels[1].item<int64_t>(), 1);

  // The model input is float32 and standardized with the training statistics.
  const torch::Tensor x = d.train.inputs();
  EXPECT_EQ(x.scalar_type(), torch::kFloat);
  EXPECT_NEAR(x.mean().item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(x.std(/*unbiased=*/false).item<double>(), 1.0, 1e-4);

  // standardize false: the same pixels as p / 255, as the reference's ToTensor.
  LoadOptions unit = options_;
  unit.standardize = false;
  const Dataset raw = load_chest_xray(unit, torch::kCPU);
  EXPECT_TRUE(raw.train.images.equal(d.train.images));
  EXPECT_TRUE(torch::allclose(raw.train.inputs(), raw.train.images.to(torch::kFloat) / 255.0f, 0.0, 1e-7));
  EXPECT_EQ(raw.pixel_stats.mean, std::vector<double>{0.0});
  EXPECT_EQ(raw.pixel_stats.std, std::vector<double>{1.0});
}

TEST_F(ChestXray, ImagesAreTheFilesDecodedAtReducedScaleAndResized) {
  // 48 x 40 files and side 10: 40 >= 4 x 10, so libjpeg decodes at 1/4 scale.
  options_.side = 10;
  const Dataset d = load();
  cv::Mat quarter = cv::imread((dir_ / "test" / "NORMAL" / "img000.jpeg").string(), cv::IMREAD_REDUCED_GRAYSCALE_4);
  ASSERT_EQ(quarter.size(), cv::Size(12, 10));
  cv::Mat small;
  cv::resize(quarter, small, cv::Size(10, 10), 0, 0, cv::INTER_AREA);
  EXPECT_TRUE(torch::equal(d.test.images[0][0], torch::from_blob(small.data, {10, 10}, torch::kByte)));
  // Copy 0 of a training image is the image itself.
  quarter = cv::imread((dir_ / "train" / "NORMAL" / "img000.jpeg").string(), cv::IMREAD_REDUCED_GRAYSCALE_4);
  cv::resize(quarter, small, cv::Size(10, 10), 0, 0, cv::INTER_AREA);
  EXPECT_TRUE(torch::equal(d.train.images[0][0], torch::from_blob(small.data, {10, 10}, torch::kByte)));
}

TEST_F(ChestXray, AugmentedCopiesDifferFromTheImage) {
  const Dataset d = load();
  const torch::Tensor first = d.train.images[0];
  for (int64_t r = 1; r < 18; ++r) EXPECT_FALSE(torch::equal(first, d.train.images[r])) << "copy " << r;
}

TEST_F(ChestXray, DeterministicPerSeedWhateverTheThreadCount) {
  const Dataset a = load();
  options_.threads = 1;
  const Dataset b = load();
  EXPECT_TRUE(torch::equal(a.train.images, b.train.images));
  EXPECT_TRUE(torch::equal(a.train.labels, b.train.labels));
  EXPECT_TRUE(torch::equal(a.test.images, b.test.images));
  options_.seed = 8;
  const Dataset c = load();
  EXPECT_FALSE(torch::equal(a.train.images, c.train.images));
  EXPECT_TRUE(torch::equal(a.test.images, c.test.images));  // the test split is never augmented
}

TEST_F(ChestXray, CopiesAndLimitsAreOptions) {
  options_.augment_copies = {1, 2};
  options_.train_limit = 3;  // NORMAL, PNEUMONIA, NORMAL
  options_.test_limit = 2;
  const Dataset d = load();
  EXPECT_TRUE(torch::equal(d.train.labels, torch::tensor({0, 1, 1, 0}, torch::kLong))) << d.train.labels;
  EXPECT_EQ(d.test.size(), 2);
  options_.train_limit = 9;
  EXPECT_EQ(error_of([&] { load(); }),
            "data.train_limit = 9 exceeds the 8 image files of " + (dir_ / "train").string());
}

TEST_F(ChestXray, CorruptJpegIsAnErrorNamingTheFile) {
  const auto bad = dir_ / "train" / "PNEUMONIA" / "img002.jpeg";
  bnn::testing::write_garbage(bad);
  EXPECT_EQ(error_of([&] { load(); }),
            bad.string() + ": cannot decode the image: not a valid JPEG, PNG or BMP file");
}

TEST_F(ChestXray, TruncatedJpegIsAnErrorNamingTheFile) {
  const auto bad = dir_ / "test" / "NORMAL" / "img001.jpeg";
  bnn::testing::truncate_to_half(bad);
  EXPECT_EQ(error_of([&] { load(); }),
            bad.string() + ": cannot decode the image: truncated JPEG (no end-of-image marker after the image data)");
}

TEST_F(ChestXray, SkipBadImagesLeavesThemOut) {
  bnn::testing::write_garbage(dir_ / "train" / "NORMAL" / "img000.jpeg");
  bnn::testing::truncate_to_half(dir_ / "test" / "PNEUMONIA" / "img002.jpeg");
  options_.skip_bad_images = true;
  const Dataset d = load();
  EXPECT_EQ(d.train.size(), 2 * 18 + 5 * 6);
  EXPECT_EQ(d.test.size(), 4);
}

TEST_F(ChestXray, MissingClassFolderIsAnError) {
  fs::remove_all(dir_ / "test" / "PNEUMONIA");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "test" / "PNEUMONIA").string() + ": missing class folder PNEUMONIA of the test split");
}

TEST_F(ChestXray, EmptySplitIsAnError) {
  for (const char* c : {"NORMAL", "PNEUMONIA"}) {
    fs::remove_all(dir_ / "test" / c);
    fs::create_directories(dir_ / "test" / c);
  }
  std::ofstream(dir_ / "test" / "NORMAL" / "notes.txt") << "not an image";
  EXPECT_EQ(error_of([&] { load(); }), (dir_ / "test").string() +
                                           ": empty split: no image files (.jpeg, .jpg, .png, .bmp) in its class "
                                           "folders NORMAL, PNEUMONIA");
}

TEST_F(ChestXray, MissingSplitAndDirectoryAreErrors) {
  options_.dir = dir_ / "nowhere";
  EXPECT_EQ(error_of([&] { load(); }), (dir_ / "nowhere").string() + ": chest X-ray directory does not exist");
  options_.dir = dir_;
  fs::remove_all(dir_ / "train");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "train").string() + ": missing train split folder of the chest X-ray data set");
}

}  // namespace
}  // namespace bnn::data_loaders
