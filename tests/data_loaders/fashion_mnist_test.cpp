// Tests for the Fashion-MNIST loader on small generated IDX files (plain and
// gzip), its error messages, its limits, and, when it is installed, the real
// data set.
#include "data_loaders/fashion_mnist.h"

#include "tests/support/error_text.h"
#include "tests/support/idx_files.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

using testing::error_of;
using testing::idx_bytes;
using testing::kImagesMagic;
using testing::kLabelsMagic;
constexpr int64_t kPixels = 28 * 28;


// Writes gzip when the name ends in ".gz", plain otherwise.
void write_idx(const fs::path& path, const std::vector<unsigned char>& bytes) {
  if (path.extension() == ".gz") {
    testing::write_gzip(path, bytes);
  } else {
    testing::write_plain(path, bytes);
  }
}

// Image i has pixel j equal to (i + j) % 256, so every image is distinct and
// pixel 0 of image i is i.
std::vector<uint8_t> image_pixels(int64_t n) {
  std::vector<uint8_t> pixels(n * kPixels);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < kPixels; ++j) pixels[i * kPixels + j] = static_cast<uint8_t>((i + j) % 256);
  }
  return pixels;
}

void write_images(const fs::path& path, int64_t n) {
  write_idx(path, idx_bytes(kImagesMagic, {static_cast<int32_t>(n), 28, 28}, image_pixels(n)));
}

void write_labels(const fs::path& path, const std::vector<uint8_t>& labels) {
  write_idx(path, idx_bytes(kLabelsMagic, {static_cast<int32_t>(labels.size())}, labels));
}


// The float nearest the exact standardized value of `pixel`.
float standardized(int pixel) {
  return static_cast<float>((pixel / 255.0 - kFashionMnistMean) / kFashionMnistStd);
}

const std::vector<uint8_t> kTrainLabels = {3, 0, 9, 1, 7};
const std::vector<uint8_t> kTestLabels = {5, 2, 8};

class FashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::unique_temp_dir("bnn_fashion_mnist_test");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a 5-example training split and a 3-example test split; `suffix` is
  // "" or ".gz".
  void write_dataset(const std::string& suffix) {
    write_images(dir_ / ("train-images-idx3-ubyte" + suffix), 5);
    write_labels(dir_ / ("train-labels-idx1-ubyte" + suffix), kTrainLabels);
    write_images(dir_ / ("t10k-images-idx3-ubyte" + suffix), 3);
    write_labels(dir_ / ("t10k-labels-idx1-ubyte" + suffix), kTestLabels);
  }

  LoadOptions options() const {
    LoadOptions options;
    options.dir = dir_;
    return options;
  }

  fs::path dir_;
};

void expect_split(const Split& split, const std::vector<uint8_t>& labels) {
  const auto n = static_cast<int64_t>(labels.size());
  ASSERT_EQ(split.size(), n);
  ASSERT_EQ(split.images.sizes(), torch::IntArrayRef({n, 1, 28, 28}));
  EXPECT_EQ(split.images.scalar_type(), torch::kFloat32);
  EXPECT_EQ(split.labels.scalar_type(), torch::kInt64);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(split.labels[i].item<int64_t>(), labels[i]) << i;
    // Pixel (r, c) of image i is (i + 28 r + c) % 256.
    EXPECT_EQ(split.images[i][0][0][0].item<float>(), standardized(static_cast<int>(i)));
    EXPECT_EQ(split.images[i][0][2][3].item<float>(), standardized(static_cast<int>(i + 59)));
  }
}

void expect_dataset(const Dataset& dataset) {
  EXPECT_EQ(dataset.name, "fashion_mnist");
  EXPECT_EQ(dataset.num_classes, 10);
  EXPECT_EQ(dataset.input_shape, (std::vector<int64_t>{1, 28, 28}));
  expect_split(dataset.train, kTrainLabels);
  expect_split(dataset.test, kTestLabels);
}

TEST_F(FashionMnistTest, LoadsPlainFiles) {
  write_dataset("");
  expect_dataset(load_fashion_mnist(options(), torch::kCPU));
}

TEST_F(FashionMnistTest, LoadsGzipFiles) {
  write_dataset(".gz");
  expect_dataset(load_fashion_mnist(options(), torch::kCPU));
}

TEST_F(FashionMnistTest, StandardizesKnownPixelsExactly) {
  // Pixel 0 of image 0 is 0 and pixel 255 of image 0 is 255; image 128's
  // first pixel is 128.
  write_images(dir_ / "train-images-idx3-ubyte", 129);
  write_labels(dir_ / "train-labels-idx1-ubyte", std::vector<uint8_t>(129, 0));
  write_images(dir_ / "t10k-images-idx3-ubyte", 1);
  write_labels(dir_ / "t10k-labels-idx1-ubyte", {0});
  const Dataset dataset = load_fashion_mnist(options(), torch::kCPU);
  const torch::Tensor flat = dataset.train.images.reshape({129, kPixels});
  // The constants are spelled out rather than taken from the header, so a
  // changed constant fails here.
  EXPECT_EQ(flat[0][0].item<float>(), static_cast<float>(-0.2860 / 0.3530));
  EXPECT_EQ(flat[0][255].item<float>(), static_cast<float>((1.0 - 0.2860) / 0.3530));
  EXPECT_EQ(flat[128][0].item<float>(), static_cast<float>((128.0 / 255.0 - 0.2860) / 0.3530));
  // Every pixel value in between maps the same way.
  for (int p = 0; p < 256; ++p) EXPECT_EQ(flat[0][p].item<float>(), standardized(p)) << p;
}

TEST_F(FashionMnistTest, PrefersThePlainFileWhenBothExist) {
  write_dataset("");
  // A .gz twin with the wrong dimensions would fail if it were read.
  write_idx(dir_ / "train-images-idx3-ubyte.gz",
            idx_bytes(kImagesMagic, {1, 32, 32}, std::vector<uint8_t>(32 * 32, 0)));
  expect_dataset(load_fashion_mnist(options(), torch::kCPU));
}

TEST_F(FashionMnistTest, MixedPlainAndGzipFiles) {
  write_images(dir_ / "train-images-idx3-ubyte.gz", 5);
  write_labels(dir_ / "train-labels-idx1-ubyte", kTrainLabels);
  write_images(dir_ / "t10k-images-idx3-ubyte", 3);
  write_labels(dir_ / "t10k-labels-idx1-ubyte.gz", kTestLabels);
  expect_dataset(load_fashion_mnist(options(), torch::kCPU));
}

TEST_F(FashionMnistTest, LabelOutOfRange) {
  write_dataset(".gz");
  write_labels(dir_ / "t10k-labels-idx1-ubyte.gz", {5, 2, 10});
  const std::string message = error_of([&] { load_fashion_mnist(options(), torch::kCPU); });
  EXPECT_NE(message.find((dir_ / "t10k-labels-idx1-ubyte.gz").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("label 10 at index 2 is out of range [0, 9]"), std::string::npos)
      << message;
}

TEST_F(FashionMnistTest, CountMismatchBetweenImagesAndLabels) {
  write_dataset("");
  write_labels(dir_ / "train-labels-idx1-ubyte", {3, 0, 9, 1});
  const std::string message = error_of([&] { load_fashion_mnist(options(), torch::kCPU); });
  EXPECT_NE(message.find((dir_ / "train-labels-idx1-ubyte").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find((dir_ / "train-images-idx3-ubyte").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("count mismatch: 4 labels"), std::string::npos) << message;
  EXPECT_NE(message.find("has 5 images"), std::string::npos) << message;
}

TEST_F(FashionMnistTest, MissingFile) {
  write_dataset(".gz");
  fs::remove(dir_ / "t10k-labels-idx1-ubyte.gz");
  const std::string message = error_of([&] { load_fashion_mnist(options(), torch::kCPU); });
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("missing Fashion-MNIST file t10k-labels-idx1-ubyte (or "
                         "t10k-labels-idx1-ubyte.gz)"),
            std::string::npos)
      << message;
}

TEST_F(FashionMnistTest, MissingDirectory) {
  LoadOptions missing;
  missing.dir = dir_ / "nowhere";
  const std::string message = error_of([&] { load_fashion_mnist(missing, torch::kCPU); });
  EXPECT_NE(message.find(missing.dir.string()), std::string::npos) << message;
  EXPECT_NE(message.find("directory does not exist"), std::string::npos) << message;
}

TEST_F(FashionMnistTest, WrongImageDimensions) {
  write_dataset("");
  write_idx(dir_ / "train-images-idx3-ubyte",
            idx_bytes(kImagesMagic, {5, 32, 32}, std::vector<uint8_t>(5 * 32 * 32, 0)));
  const std::string message = error_of([&] { load_fashion_mnist(options(), torch::kCPU); });
  EXPECT_NE(message.find((dir_ / "train-images-idx3-ubyte").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("wrong dimensions 5 x 32 x 32, expected N x 28 x 28"), std::string::npos)
      << message;
}

TEST_F(FashionMnistTest, TruncatedGzipImages) {
  write_dataset(".gz");
  write_images(dir_ / "train-images-idx3-ubyte.gz", 200);
  write_labels(dir_ / "train-labels-idx1-ubyte.gz", std::vector<uint8_t>(200, 1));
  const fs::path path = dir_ / "train-images-idx3-ubyte.gz";
  fs::resize_file(path, fs::file_size(path) - 20);
  const std::string message = error_of([&] { load_fashion_mnist(options(), torch::kCPU); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated gzip stream"), std::string::npos) << message;
}

TEST_F(FashionMnistTest, LimitsKeepTheFirstExamples) {
  write_dataset(".gz");
  LoadOptions limited = options();
  limited.train_limit = 2;
  limited.test_limit = 3;  // exactly the whole split
  const Dataset dataset = load_fashion_mnist(limited, torch::kCPU);
  expect_split(dataset.train, {3, 0});
  expect_split(dataset.test, kTestLabels);
}

TEST_F(FashionMnistTest, LimitErrors) {
  write_dataset("");
  LoadOptions too_many = options();
  too_many.train_limit = 6;
  const std::string message = error_of([&] { load_fashion_mnist(too_many, torch::kCPU); });
  EXPECT_NE(message.find("data.train_limit = 6 exceeds the 5 examples in"), std::string::npos)
      << message;
  EXPECT_NE(message.find("train-images-idx3-ubyte"), std::string::npos) << message;

  LoadOptions negative = options();
  negative.test_limit = -1;
  const std::string negative_message =
      error_of([&] { load_fashion_mnist(negative, torch::kCPU); });
  EXPECT_NE(negative_message.find("data.test_limit must be >= 0"), std::string::npos)
      << negative_message;
}

// Note [Out-of-distribution sets]: the test split alone (the training files
// may be absent), standardized with another data set's statistics.
TEST_F(FashionMnistTest, TestOnlyWithOtherStatistics) {
  write_dataset("");
  fs::remove(dir_ / "train-images-idx3-ubyte");
  LoadOptions o = options();
  o.test_only = true;
  o.stats = ChannelStats{{0.5}, {0.25}};
  const Dataset d = load_fashion_mnist(o, torch::kCPU);
  EXPECT_EQ(d.train.size(), 0);
  ASSERT_EQ(d.test.size(), 3);
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{1, 28, 28}));
  o.test_only = false;
  o.dir = dir_;
  write_dataset("");
  const Dataset full = load_fashion_mnist(o, torch::kCPU);
  // Pixel p becomes (p / 255 - 0.5) / 0.25, not the Fashion-MNIST map.
  const torch::Tensor pixels = ((full.test.images.to(torch::kDouble) * 0.25 + 0.5) * 255).round();
  EXPECT_TRUE(torch::allclose(d.test.images.to(torch::kDouble), (pixels / 255 - 0.5) / 0.25, 0, 1e-6));
  EXPECT_EQ(d.pixel_stats.mean, std::vector<double>{0.5});
}

// The real data set, when installed: sizes, balanced classes, and the
// standardization constants giving roughly zero mean and unit variance.
TEST(FashionMnistRealDataTest, LoadsTheInstalledDataSet) {
  const fs::path dir = kFashionMnistDefaultDir;
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    if (!fs::exists(dir / name) && !fs::exists(dir / (std::string(name) + ".gz"))) {
      GTEST_SKIP() << "Fashion-MNIST is not installed: " << (dir / name).string()
                   << "[.gz] does not exist";
    }
  }
  const Dataset dataset = load_fashion_mnist(LoadOptions{}, torch::kCPU);
  ASSERT_EQ(dataset.train.size(), 60000);
  ASSERT_EQ(dataset.test.size(), 10000);
  EXPECT_EQ(dataset.train.images.sizes(), torch::IntArrayRef({60000, 1, 28, 28}));
  EXPECT_EQ(dataset.test.images.sizes(), torch::IntArrayRef({10000, 1, 28, 28}));
  EXPECT_TRUE(torch::equal(torch::bincount(dataset.train.labels),
                           torch::full({10}, 6000, torch::kLong)));
  EXPECT_TRUE(torch::equal(torch::bincount(dataset.test.labels),
                           torch::full({10}, 1000, torch::kLong)));
  EXPECT_NEAR(dataset.train.images.mean().item<double>(), 0.0, 1e-3);
  EXPECT_NEAR(dataset.train.images.std().item<double>(), 1.0, 1e-3);
}

}  // namespace
}  // namespace bnn::data_loaders
