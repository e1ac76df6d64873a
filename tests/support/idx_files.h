// Test helper: IDX files (the MNIST format) written byte by byte, plain or
// gzip, so loader tests can build valid and deliberately broken inputs.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

namespace bnn::testing {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

// Big-endian magic and dimensions followed by the data bytes.
inline std::vector<unsigned char> idx_bytes(uint32_t magic, const std::vector<int32_t>& dims,
                                            const std::vector<uint8_t>& data) {
  std::vector<unsigned char> bytes;
  const auto put_u32 = [&bytes](uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back((value >> shift) & 0xff);
  };
  put_u32(magic);
  for (int32_t d : dims) put_u32(static_cast<uint32_t>(d));
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

inline void write_plain(const std::filesystem::path& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void write_gzip(const std::filesystem::path& path, const std::vector<unsigned char>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

}  // namespace bnn::testing
