#include "data_loaders/chest_xray.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_loaders/image_files.h"
#include "tests/support/error_text.h"
#include "tests/support/image_files.h"
#include "tests/support/temp_dir.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;
using bnn::testing::error_of;

// The augmentation's geometry over many copies, with the chest X-ray
// defaults (crops of at least 80% of the area at aspect 3:4 to 4:3, rotations
// within +-20 degrees, brightness within +-20%): each copy's angle, read back
// from its warp matrix, stays within 20 degrees and comes near it; the
// crop's area sx sy stays in [sqrt(0.8 x 3/4), 1] (the aspect ratio may clip
// one side to the image); half the copies are mirrored. Half the drawn angle
// would peak at 10 degrees; a crop side without its square root gives areas
// down to 0.64 and below.
TEST(Augmentation, RotationsCropsAndMirrorsStayInTheirRanges) {
  const Augmentation a;
  ASSERT_EQ(a.min_area, 0.8);
  ASSERT_EQ(a.max_rotation_degrees, 20.0);
  std::mt19937_64 rng(7);
  constexpr int kCopies = 10000;
  double largest_angle = 0, smallest_area = 2, largest_area = 0, lowest_gain = 2, highest_gain = 0;
  int mirrored = 0;
  for (int i = 0; i < kCopies; ++i) {
    const AugmentationWarp w = draw_augmentation(180.0, a, rng);
    const auto& m = w.matrix;
    const double sx = std::hypot(m[0], m[1]), sy = std::hypot(m[3], m[4]);
    const double f = m[0] < 0 ? -1.0 : 1.0;  // cos(t) > 0 within +-20 degrees
    largest_angle = std::max(largest_angle, std::abs(std::atan2(m[3] * f, m[4])) * 180.0 / M_PI);
    smallest_area = std::min(smallest_area, sx * sy);
    largest_area = std::max(largest_area, sx * sy);
    lowest_gain = std::min(lowest_gain, w.gain);
    highest_gain = std::max(highest_gain, w.gain);
    mirrored += f < 0 ? 1 : 0;
  }
  EXPECT_LE(largest_angle, 20.0 + 1e-9);
  EXPECT_GT(largest_angle, 19.9);
  EXPECT_GE(smallest_area, std::sqrt(0.8 * 0.75) - 1e-12);
  EXPECT_LE(largest_area, 1.0 + 1e-12);
  EXPECT_GT(largest_area, 0.99);
  EXPECT_GE(lowest_gain, 0.8);
  EXPECT_LT(highest_gain, 1.2);
  EXPECT_NEAR(mirrored, kCopies / 2, 300);  // 6 standard deviations of a binomial's 50
}

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
