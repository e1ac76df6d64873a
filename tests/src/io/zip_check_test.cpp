// Tests for src/io/zip_check.h: the CRC-32 against its published check
// value, and LibTorch archives whole, with a flipped bit, and cut.
#include "src/io/zip_check.h"

#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "src/io/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace bnn::io {
namespace {

TEST(Crc32, PublishedCheckValues) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("6789", crc32("12345")), 0xCBF43926u);  // continued
}

// An archive as a member checkpoint is written: tensors by name.
std::string archive(int64_t n) {
  torch::serialize::OutputArchive a;
  a.write("ones", torch::ones({n}));
  a.write("ramp", torch::arange(n, torch::kDouble));
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

TEST(ZipDamage, WholeArchivesPass) {
  EXPECT_EQ(zip_damage(archive(10)), "");
  EXPECT_EQ(zip_damage(archive(100000)), "");
}

TEST(ZipDamage, AFlippedBitInTheDataIsFound) {
  std::string bytes = archive(1000);
  // float 1.0 is 00 00 80 3f: the "ones" tensor's data, in the middle of it.
  const std::string one("\x00\x00\x80\x3f", 4);
  const size_t first = bytes.find(one + one + one + one);
  ASSERT_NE(first, std::string::npos);
  bytes[first + 4 * 500 + 2] ^= 0x10;
  const std::string damage = zip_damage(bytes);
  EXPECT_NE(damage.find("does not match its CRC-32 (damaged bytes)"), std::string::npos) << damage;
  EXPECT_NE(damage.find("data/"), std::string::npos) << damage;  // names the entry
  // The same from a file, read a megabyte at a time (an entry of 2.4 MB).
  const auto dir = bnn::testing::unique_temp_dir("bnn_zip_check");
  std::string large = archive(300000);
  write_file_atomically(dir / "whole.pt", large);
  EXPECT_EQ(zip_file_damage(dir / "whole.pt"), "");
  large[large.size() / 3] = static_cast<char>(large[large.size() / 3] ^ 0x01);
  write_file_atomically(dir / "flipped.pt", large);
  EXPECT_EQ(zip_file_damage(dir / "flipped.pt"), zip_damage(large));
  EXPECT_NE(zip_damage(large).find("does not match its CRC-32"), std::string::npos) << zip_damage(large);
  std::filesystem::remove_all(dir);
}

TEST(ZipDamage, CutAndForeignFilesAreNamed) {
  const std::string bytes = archive(1000);
  EXPECT_NE(zip_damage(bytes.substr(0, bytes.size() / 2)).find("no zip end-of-central-directory record"),
            std::string::npos);
  EXPECT_NE(zip_damage("short").find("too short for a zip archive"), std::string::npos);
  EXPECT_NE(zip_damage(std::string(100, 'x')).find("no zip end-of-central-directory record"), std::string::npos);
}

}  // namespace
}  // namespace bnn::io
