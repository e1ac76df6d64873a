// Tests for the CIFAR-10 binary-version loader on small generated files:
// shapes, dtypes, labels, standardized pixels per channel, limits, and the
// exact error text for each kind of bad input.
#include "data_loaders/cifar10.h"

#include "tests/support/cifar10_files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/error_text.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

using testing::cifar_bytes;
using testing::cifar_pixel;
using testing::cycling_labels;
using testing::error_of;
using testing::kCifarPlane;
using testing::write_bytes;

constexpr int64_t kTrainPerFile = 3;
constexpr int64_t kTest = 4;

// The float nearest the exact standardized value of `pixel` in `channel`.
float standardized_cifar(int64_t channel, int pixel) {
  return static_cast<float>((pixel / 255.0 - kCifar10Mean[channel]) / kCifar10Std[channel]);
}

class Cifar10Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::unique_temp_dir("bnn_cifar10_test");
    testing::write_cifar10_dir(dir_, kTrainPerFile, kTest);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LoadOptions options() const {
    LoadOptions options;
    options.dir = dir_;
    return options;
  }
  std::string load_error(const LoadOptions& options) const {
    return error_of([&] { load_cifar10(options, torch::kCPU); });
  }
  std::string load_error() const { return load_error(options()); }

  fs::path dir_;
};

// Checks example `index` of `split` against record `record` of the file
// written with `seed`: its label and one pixel (row 2, column 3) per channel.
void expect_example(const Split& split, int64_t index, int64_t seed, int64_t record, uint8_t label) {
  EXPECT_EQ(split.labels[index].item<int64_t>(), label) << index;
  for (int64_t c = 0; c < 3; ++c) {
    const int64_t j = c * kCifarPlane + 2 * 32 + 3;
    EXPECT_EQ(split.images[index][c][2][3].item<float>(), standardized_cifar(c, cifar_pixel(seed, record, j)))
        << "example " << index << " channel " << c;
  }
}

TEST_F(Cifar10Test, LoadsBothSplitsInFileOrder) {
  const Dataset data = load_cifar10(options(), torch::kCPU);
  EXPECT_EQ(data.name, "cifar10");
  EXPECT_EQ(data.num_classes, 10);
  EXPECT_EQ(data.input_shape, (std::vector<int64_t>{3, 32, 32}));
  ASSERT_EQ(data.train.images.sizes(), (std::vector<int64_t>{5 * kTrainPerFile, 3, 32, 32}));
  ASSERT_EQ(data.test.images.sizes(), (std::vector<int64_t>{kTest, 3, 32, 32}));
  for (const Split* split : {&data.train, &data.test}) {
    EXPECT_EQ(split->images.scalar_type(), torch::kFloat32);
    EXPECT_EQ(split->labels.scalar_type(), torch::kInt64);
    EXPECT_TRUE(split->images.is_contiguous());
  }
  for (int64_t file = 1; file <= 5; ++file) {
    const auto labels = cycling_labels(kTrainPerFile, file);
    for (int64_t i = 0; i < kTrainPerFile; ++i) {
      expect_example(data.train, (file - 1) * kTrainPerFile + i, /*seed=*/file, i, labels[i]);
    }
  }
  const auto test_labels = cycling_labels(kTest, 0);
  for (int64_t i = 0; i < kTest; ++i) expect_example(data.test, i, /*seed=*/0, i, test_labels[i]);
}

TEST_F(Cifar10Test, StandardizesEachPlaneWithItsChannelsStatistics) {
  // One record whose red plane is all 0, green all 128 and blue all 255.
  std::vector<uint8_t> record = {7};
  for (uint8_t value : {0, 128, 255}) record.insert(record.end(), kCifarPlane, value);
  write_bytes(dir_ / "test_batch.bin", record);
  const Dataset data = load_cifar10(options(), torch::kCPU);
  ASSERT_EQ(data.test.size(), 1);
  EXPECT_EQ(data.test.labels[0].item<int64_t>(), 7);
  const std::vector<int> values = {0, 128, 255};
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_TRUE(data.test.images[0][c].eq(standardized_cifar(c, values[c])).all().item<bool>()) << c;
  }
  EXPECT_FLOAT_EQ(data.test.images[0][0][0][0].item<float>(), -0.4914f / 0.2470f);
  EXPECT_FLOAT_EQ(data.test.images[0][2][31][31].item<float>(), (1.0f - 0.4465f) / 0.2616f);

  // standardize false: p / 255 in every channel, and statistics to match.
  LoadOptions unit = options();
  unit.standardize = false;
  const Dataset raw = load_cifar10(unit, torch::kCPU);
  for (int64_t c = 0; c < 3; ++c) {
    EXPECT_TRUE(raw.test.images[0][c].eq(static_cast<float>(values[c] / 255.0)).all().item<bool>()) << c;
  }
  EXPECT_EQ(raw.pixel_stats.mean, (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(raw.pixel_stats.std, (std::vector<double>{1, 1, 1}));
}

TEST_F(Cifar10Test, LimitsKeepTheFirstExamplesAcrossFiles) {
  LoadOptions o = options();
  o.train_limit = 7;  // all of data_batch_1 and _2, one record of _3
  o.test_limit = 2;
  const Dataset data = load_cifar10(o, torch::kCPU);
  ASSERT_EQ(data.train.size(), 7);
  ASSERT_EQ(data.train.images.size(0), 7);
  ASSERT_EQ(data.test.size(), 2);
  expect_example(data.train, 6, /*seed=*/3, /*record=*/0, cycling_labels(1, 3)[0]);
  expect_example(data.test, 1, /*seed=*/0, /*record=*/1, 1);

  o.train_limit = 16;
  EXPECT_EQ(load_error(o), "data.train_limit = 16 exceeds the 15 examples in " + dir_.string() +
                               " (data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_4.bin, "
                               "data_batch_5.bin)");
  o.train_limit = 0;
  o.test_limit = 5;
  EXPECT_EQ(load_error(o), "data.test_limit = 5 exceeds the 4 examples in " + dir_.string() + " (test_batch.bin)");
}

TEST_F(Cifar10Test, TruncatedFileNamesTheFileAndItsSize) {
  std::vector<uint8_t> bytes = cifar_bytes(3, cycling_labels(2, 3));
  bytes.resize(bytes.size() + 100, 0);
  write_bytes(dir_ / "data_batch_3.bin", bytes);
  EXPECT_EQ(load_error(), (dir_ / "data_batch_3.bin").string() +
                              ": truncated: 6246 bytes is not a multiple of the 3073-byte record "
                              "(1 label byte + 3072 pixel bytes)");

  // A test file cut inside its last record.
  bytes = cifar_bytes(0, cycling_labels(kTest, 0));
  bytes.pop_back();
  write_bytes(dir_ / "data_batch_3.bin", cifar_bytes(3, cycling_labels(kTrainPerFile, 3)));
  write_bytes(dir_ / "test_batch.bin", bytes);
  EXPECT_EQ(load_error(), (dir_ / "test_batch.bin").string() +
                              ": truncated: 12291 bytes is not a multiple of the 3073-byte record "
                              "(1 label byte + 3072 pixel bytes)");
}

TEST_F(Cifar10Test, EmptyFileIsAnError) {
  write_bytes(dir_ / "data_batch_2.bin", {});
  EXPECT_EQ(load_error(), (dir_ / "data_batch_2.bin").string() + ": empty: no records");
}

TEST_F(Cifar10Test, MissingFileNamesTheDirectoryAndTheFile) {
  const std::string needs =
      "; the directory needs data_batch_1.bin ... data_batch_5.bin and test_batch.bin (the CIFAR-10 binary version)";
  fs::remove(dir_ / "data_batch_4.bin");
  EXPECT_EQ(load_error(), dir_.string() + ": missing CIFAR-10 file data_batch_4.bin" + needs);
  testing::write_cifar10_dir(dir_, kTrainPerFile, kTest);
  fs::remove(dir_ / "test_batch.bin");
  EXPECT_EQ(load_error(), dir_.string() + ": missing CIFAR-10 file test_batch.bin" + needs);

  LoadOptions o = options();
  o.dir = dir_ / "absent";
  EXPECT_EQ(load_error(o), (dir_ / "absent").string() + ": CIFAR-10 directory does not exist");
}

TEST_F(Cifar10Test, LabelOutOfRangeNamesFileRecordAndValue) {
  std::vector<uint8_t> labels = cycling_labels(kTest, 0);
  labels[2] = 10;
  write_bytes(dir_ / "test_batch.bin", cifar_bytes(0, labels));
  EXPECT_EQ(load_error(), (dir_ / "test_batch.bin").string() + ": label 10 at record 2 is out of range [0, 9]");

  labels = cycling_labels(kTrainPerFile, 5);
  labels[0] = 255;
  write_bytes(dir_ / "data_batch_5.bin", cifar_bytes(5, labels));
  EXPECT_EQ(load_error(), (dir_ / "data_batch_5.bin").string() + ": label 255 at record 0 is out of range [0, 9]");
}

TEST_F(Cifar10Test, BadRecordsBeyondTheLimitAreStillErrors) {
  std::vector<uint8_t> labels = cycling_labels(kTrainPerFile, 5);
  labels[2] = 11;
  write_bytes(dir_ / "data_batch_5.bin", cifar_bytes(5, labels));
  LoadOptions o = options();
  o.train_limit = 1;
  EXPECT_EQ(load_error(o), (dir_ / "data_batch_5.bin").string() + ": label 11 at record 2 is out of range [0, 9]");
}

TEST_F(Cifar10Test, NegativeLimitIsRejected) {
  LoadOptions o = options();
  o.train_limit = -1;
  EXPECT_NE(load_error(o).find("data.train_limit must be >= 0"), std::string::npos);
}

}  // namespace
}  // namespace bnn::data_loaders
