// Tests for the IDX reader: round trips through plain and gzip files, and one
// test per way a file can be damaged, each checking that the error names the
// file and says what is wrong.
#include "data_loaders/idx.h"

#include "tests/support/error_text.h"
#include "tests/support/idx_files.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
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
using testing::write_gzip;
using testing::write_plain;




std::vector<unsigned char> read_raw(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}


// Pixel values that differ between images, rows and columns, and use the full
// byte range, so a transposed or shifted read cannot pass.
std::vector<uint8_t> pattern(int64_t n) {
  std::vector<uint8_t> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return data;
}

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::unique_temp_dir("bnn_idx_test");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

// 3 images of 4 x 5.
const std::vector<int32_t> kImageDims = {3, 4, 5};
const std::vector<uint8_t> kImageData = pattern(3 * 4 * 5);

void expect_images_round_trip(const fs::path& path) {
  const torch::Tensor images = read_idx_images(path, 4, 5);
  ASSERT_EQ(images.sizes(), torch::IntArrayRef({3, 4, 5}));
  EXPECT_EQ(images.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(images.device().is_cpu());
  const uint8_t* data = images.data_ptr<uint8_t>();
  for (size_t i = 0; i < kImageData.size(); ++i) ASSERT_EQ(data[i], kImageData[i]) << i;
  EXPECT_EQ(images[2][3][4].item<int>(), kImageData[2 * 20 + 3 * 5 + 4]);
}

TEST_F(IdxTest, ImagesRoundTripPlain) {
  const fs::path path = dir_ / "images-idx3-ubyte";
  write_plain(path, idx_bytes(kImagesMagic, kImageDims, kImageData));
  expect_images_round_trip(path);
}

TEST_F(IdxTest, ImagesRoundTripGzip) {
  const fs::path path = dir_ / "images-idx3-ubyte.gz";
  write_gzip(path, idx_bytes(kImagesMagic, kImageDims, kImageData));
  ASSERT_NE(read_raw(path)[0], 0x00) << "expected a gzip header, not a plain IDX file";
  expect_images_round_trip(path);
}

TEST_F(IdxTest, LabelsRoundTripPlainAndGzip) {
  const std::vector<uint8_t> labels = {0, 9, 4, 255, 1};
  write_plain(dir_ / "labels", idx_bytes(kLabelsMagic, {5}, labels));
  write_gzip(dir_ / "labels.gz", idx_bytes(kLabelsMagic, {5}, labels));
  for (const char* name : {"labels", "labels.gz"}) {
    const torch::Tensor read = read_idx_labels(dir_ / name);
    ASSERT_EQ(read.sizes(), torch::IntArrayRef({5})) << name;
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(read[i].item<int>(), labels[i]) << name;
  }
}

TEST_F(IdxTest, LargeGzipFileReadsCompletely) {
  // Larger than zlib's and our read buffers, so reading spans many chunks.
  const int32_t n = 2000;
  const std::vector<uint8_t> data = pattern(int64_t{n} * 28 * 28);
  const fs::path path = dir_ / "big.gz";
  write_gzip(path, idx_bytes(kImagesMagic, {n, 28, 28}, data));
  const torch::Tensor images = read_idx_images(path, 28, 28);
  ASSERT_EQ(images.size(0), n);
  EXPECT_EQ(std::memcmp(images.data_ptr<uint8_t>(), data.data(), data.size()), 0);
}

TEST_F(IdxTest, GenericSpecAcceptsAnyLeadingDim) {
  const fs::path path = dir_ / "images";
  write_plain(path, idx_bytes(kImagesMagic, kImageDims, kImageData));
  const torch::Tensor any = read_idx_uint8(path, IdxSpec{{kIdxAnyDim, kIdxAnyDim, 5}, "image"});
  EXPECT_EQ(any.sizes(), torch::IntArrayRef({3, 4, 5}));
}

TEST_F(IdxTest, BadMagicNumber) {
  const fs::path path = dir_ / "bad-magic-idx3-ubyte";
  write_plain(path, idx_bytes(0x00000903, kImageDims, kImageData));
  const std::string message = error_of([&] { read_idx_images(path, 4, 5); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("bad magic number 0x00000903, expected 0x00000803"), std::string::npos)
      << message;
}

TEST_F(IdxTest, LabelsFileReadAsImagesIsBadMagic) {
  const fs::path path = dir_ / "labels-idx1-ubyte.gz";
  write_gzip(path, idx_bytes(kLabelsMagic, {3}, {1, 2, 3}));
  const std::string message = error_of([&] { read_idx_images(path, 4, 5); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("bad magic number 0x00000801"), std::string::npos) << message;
}

TEST_F(IdxTest, WrongImageDimensions) {
  const fs::path path = dir_ / "cifar-sized-idx3-ubyte";
  write_plain(path, idx_bytes(kImagesMagic, {2, 32, 32}, pattern(2 * 32 * 32)));
  const std::string message = error_of([&] { read_idx_images(path, 28, 28); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("wrong dimensions 2 x 32 x 32, expected N x 28 x 28"), std::string::npos)
      << message;
}

TEST_F(IdxTest, NonPositiveDimension) {
  const fs::path path = dir_ / "zero-idx3-ubyte";
  write_plain(path, idx_bytes(kImagesMagic, {0, 4, 5}, {}));
  const std::string zero = error_of([&] { read_idx_images(path, 4, 5); });
  EXPECT_NE(zero.find(path.string()), std::string::npos) << zero;
  EXPECT_NE(zero.find("dimension 0 is 0, must be positive"), std::string::npos) << zero;

  write_plain(path, idx_bytes(kImagesMagic, {-7, 4, 5}, {}));
  const std::string negative = error_of([&] { read_idx_images(path, 4, 5); });
  EXPECT_NE(negative.find("dimension 0 is -7, must be positive"), std::string::npos) << negative;
}

TEST_F(IdxTest, TruncatedImagesPlain) {
  const fs::path path = dir_ / "train-images-idx3-ubyte";
  std::vector<unsigned char> bytes = idx_bytes(kImagesMagic, kImageDims, kImageData);
  bytes.resize(bytes.size() - 7);
  write_plain(path, bytes);
  const std::string message = error_of([&] { read_idx_images(path, 4, 5); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated: expected 60 image bytes (3 x 4 x 5), got 53"),
            std::string::npos)
      << message;
}

TEST_F(IdxTest, TruncatedLabelsPlain) {
  const fs::path path = dir_ / "train-labels-idx1-ubyte";
  write_plain(path, idx_bytes(kLabelsMagic, {60000}, std::vector<uint8_t>(1234, 1)));
  const std::string message = error_of([&] { read_idx_labels(path); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated: expected 60000 label bytes, got 1234"),
            std::string::npos)
      << message;
}

// A header promising 2^31 - 1 images: a plain file's size shows at once that
// they are not there (nothing is allocated); a gzip stream's cannot, and its
// allocation fails, or the read comes up short, in one line without
// LibTorch's backtrace.
TEST_F(IdxTest, AHeaderPromisingTerabytesIsOneLine) {
  const fs::path plain = dir_ / "train-images-idx3-ubyte";
  write_plain(plain, idx_bytes(kImagesMagic, {2147483647, 28, 28}, pattern(60)));
  const std::string message = error_of([&] { read_idx_images(plain, 28, 28); });
  EXPECT_NE(message.find(plain.string() + ": truncated: expected 1683627179248 image bytes (2147483647 x 28 x 28), "
                                          "got 60"),
            std::string::npos)
      << message;
  const fs::path gz = dir_ / "train-images-idx3-ubyte.gz";
  write_gzip(gz, idx_bytes(kImagesMagic, {2147483647, 28, 28}, pattern(60)));
  const std::string gz_message = error_of([&] { read_idx_images(gz, 28, 28); });
  EXPECT_EQ(gz_message.rfind(gz.string() + ": ", 0), 0U) << gz_message;
  EXPECT_TRUE(gz_message.find("cannot allocate the 1683627179248 image bytes") != std::string::npos ||
              gz_message.find("truncated gzip stream: expected 1683627179248 image bytes") != std::string::npos ||
              gz_message.find("truncated: expected 1683627179248 image bytes") != std::string::npos)
      << gz_message;
  EXPECT_EQ(gz_message.find('\n'), std::string::npos) << gz_message;
  EXPECT_EQ(gz_message.find("frame #"), std::string::npos) << gz_message;
}

TEST_F(IdxTest, TruncatedHeader) {
  const fs::path path = dir_ / "short-header";
  std::vector<unsigned char> bytes = idx_bytes(kImagesMagic, kImageDims, {});
  bytes.resize(10);
  write_plain(path, bytes);
  const std::string message = error_of([&] { read_idx_images(path, 4, 5); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated: the file ends at byte 10, inside the dimensions"),
            std::string::npos)
      << message;
}

TEST_F(IdxTest, EmptyFile) {
  const fs::path path = dir_ / "empty.gz";
  write_plain(path, {});
  const std::string message = error_of([&] { read_idx_labels(path); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated: the file ends at byte 0, inside the magic number"),
            std::string::npos)
      << message;
}

TEST_F(IdxTest, TruncatedGzipStream) {
  const int32_t n = 500;
  const fs::path path = dir_ / "train-images-idx3-ubyte.gz";
  write_gzip(path, idx_bytes(kImagesMagic, {n, 28, 28}, pattern(int64_t{n} * 28 * 28)));
  fs::resize_file(path, fs::file_size(path) / 2);
  const std::string message = error_of([&] { read_idx_images(path, 28, 28); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated gzip stream: expected 392000 image bytes"), std::string::npos)
      << message;
}

TEST_F(IdxTest, GzipStreamMissingItsTrailer) {
  // Every data byte decompresses, but the CRC and length trailer are gone:
  // the download was still cut short.
  const fs::path path = dir_ / "labels.gz";
  write_gzip(path, idx_bytes(kLabelsMagic, {5}, {0, 1, 2, 3, 4}));
  fs::resize_file(path, fs::file_size(path) - 8);
  const std::string message = error_of([&] { read_idx_labels(path); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated gzip stream"), std::string::npos) << message;
}

TEST_F(IdxTest, CorruptGzipChecksum) {
  const fs::path path = dir_ / "labels.gz";
  write_gzip(path, idx_bytes(kLabelsMagic, {5}, {0, 1, 2, 3, 4}));
  std::vector<unsigned char> bytes = read_raw(path);
  bytes[bytes.size() - 8] ^= 0xff;  // first byte of the CRC-32 trailer
  write_plain(path, bytes);
  const std::string message = error_of([&] { read_idx_labels(path); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("corrupt gzip stream"), std::string::npos) << message;
}

TEST_F(IdxTest, TrailingGarbagePlainAndGzip) {
  std::vector<unsigned char> bytes = idx_bytes(kLabelsMagic, {3}, {1, 2, 3});
  bytes.push_back(42);
  write_plain(dir_ / "labels", bytes);
  write_gzip(dir_ / "labels.gz", bytes);
  for (const char* name : {"labels", "labels.gz"}) {
    const fs::path path = dir_ / name;
    const std::string message = error_of([&] { read_idx_labels(path); });
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("trailing garbage: more bytes follow the 3 label bytes"),
              std::string::npos)
        << message;
  }
}

TEST_F(IdxTest, MissingFile) {
  const fs::path path = dir_ / "no-such-file.gz";
  const std::string message = error_of([&] { read_idx_labels(path); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("file does not exist"), std::string::npos) << message;
}

TEST_F(IdxTest, DirectoryIsNotAFile) {
  const std::string message = error_of([&] { read_idx_labels(dir_); });
  EXPECT_NE(message.find(dir_.string()), std::string::npos) << message;
  EXPECT_NE(message.find("not a regular file"), std::string::npos) << message;
}

TEST_F(IdxTest, InvalidSpecIsACallerError) {
  const fs::path path = dir_ / "labels";
  write_plain(path, idx_bytes(kLabelsMagic, {3}, {1, 2, 3}));
  EXPECT_THROW(read_idx_uint8(path, IdxSpec{{}, "label"}), c10::Error);
  EXPECT_THROW(read_idx_uint8(path, IdxSpec{{0}, "label"}), c10::Error);
  EXPECT_THROW(read_idx_images(path, 28, -28), c10::Error);
}

}  // namespace
}  // namespace bnn::data_loaders
