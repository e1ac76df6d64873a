// Test helper: CIFAR-10 binary-version files (1 label byte + 3072 pixel
// bytes per record, R, G, B planes of 32x32) written byte by byte, so loader
// and end-to-end tests can build valid and deliberately broken inputs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace bnn::testing {

constexpr int64_t kCifarPlane = 32 * 32;
constexpr int64_t kCifarRecord = 1 + 3 * kCifarPlane;

// Pixel j (0..3071, plane-major) of record i of a file with the given seed:
// distinct per record, file and channel, and known to the tests.
inline uint8_t cifar_pixel(int64_t seed, int64_t i, int64_t j) {
  return static_cast<uint8_t>((seed * 31 + i * 7 + (j / kCifarPlane) * 50 + j) % 256);
}

// The bytes of one file: record i has label labels[i] and cifar_pixel(seed, i, j).
inline std::vector<uint8_t> cifar_bytes(int64_t seed, const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> bytes;
  bytes.reserve(labels.size() * kCifarRecord);
  for (size_t i = 0; i < labels.size(); ++i) {
    bytes.push_back(labels[i]);
    for (int64_t j = 0; j < 3 * kCifarPlane; ++j) bytes.push_back(cifar_pixel(seed, static_cast<int64_t>(i), j));
  }
  return bytes;
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Labels 0, 1, ..., 9, 0, 1, ... shifted by `offset`.
inline std::vector<uint8_t> cycling_labels(int64_t n, int64_t offset) {
  std::vector<uint8_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>((i + offset) % 10);
  return labels;
}

// A complete directory: data_batch_k.bin (seed k) with `train_per_file`
// records each, and test_batch.bin (seed 0) with `test` records.
inline void write_cifar10_dir(const std::filesystem::path& dir, int64_t train_per_file, int64_t test) {
  std::filesystem::create_directories(dir);
  for (int k = 1; k <= 5; ++k) {
    write_bytes(dir / ("data_batch_" + std::to_string(k) + ".bin"), cifar_bytes(k, cycling_labels(train_per_file, k)));
  }
  write_bytes(dir / "test_batch.bin", cifar_bytes(0, cycling_labels(test, 0)));
}

}  // namespace bnn::testing
