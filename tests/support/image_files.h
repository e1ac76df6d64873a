// Test helper: small generated image datasets in the layouts of the chest
// X-ray, CelebA and image-folder loaders, written with OpenCV, plus ways to
// break a file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

namespace bnn::testing {

// A width x height image (1 or 3 channels) with a smooth pattern that depends
// on `seed`, so that images differ and survive JPEG compression.
inline cv::Mat pattern_image(int width, int height, int channels, int seed) {
  cv::Mat image(height, width, channels == 1 ? CV_8UC1 : CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const int v = (seed * 37 + x * (2 + seed % 3) + y * (1 + c) + c * 60) % 256;
        image.ptr<uint8_t>(y)[x * channels + c] = static_cast<uint8_t>(v);
      }
    }
  }
  return image;
}

inline void write_image(const std::filesystem::path& path, const cv::Mat& image) {
  std::filesystem::create_directories(path.parent_path());
  ASSERT_TRUE(cv::imwrite(path.string(), image)) << path;
}

// Overwrites `path` with bytes that are no image at all.
inline void write_garbage(const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  out << "this is not a JPEG file";
}

// Cuts `path` to half its size (a JPEG loses its end-of-image marker).
inline void truncate_to_half(const std::filesystem::path& path) {
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
}

// <dir>/{train,test}/{NORMAL,PNEUMONIA}/imgNNN.jpeg with the given number of
// grayscale width x height images per split and class.
struct ChestCounts {
  int train_normal, train_pneumonia, test_normal, test_pneumonia;
};
inline void write_chest_xray_dir(const std::filesystem::path& dir, ChestCounts counts, int width = 48,
                                 int height = 40) {
  const std::vector<std::pair<std::string, int>> folders = {{"train/NORMAL", counts.train_normal},
                                                            {"train/PNEUMONIA", counts.train_pneumonia},
                                                            {"test/NORMAL", counts.test_normal},
                                                            {"test/PNEUMONIA", counts.test_pneumonia}};
  int seed = 0;
  for (const auto& [folder, n] : folders) {
    std::filesystem::create_directories(dir / folder);
    for (int i = 0; i < n; ++i) {
      write_image(dir / folder / fmt::format("img{:03d}.jpeg", i), pattern_image(width, height, 1, ++seed));
    }
  }
}

// One CelebA image: its partition (0 train, 1 val, 2 test) and hair.
struct CelebaEntry {
  int partition;
  bool blond, brown;
};

// The three CelebA inputs for `entries` (image i is NNNNNN.jpg, 1-based, as
// in the release): RGB 36 x 44 JPEGs, a 40-attribute list with Blond_Hair at
// column 9 and Brown_Hair at column 11 (as in the release) and the partition
// list. The attribute lines are padded with double spaces like the real file.
inline void write_celeba_dir(const std::filesystem::path& dir, const std::vector<CelebaEntry>& entries) {
  std::filesystem::create_directories(dir / "img_align_celeba");
  std::vector<std::string> names;
  for (int a = 0; a < 40; ++a) names.push_back(fmt::format("Attr{}", a));
  names[9] = "Blond_Hair";
  names[11] = "Brown_Hair";
  std::ofstream attr(dir / "list_attr_celeba.txt");
  std::ofstream part(dir / "list_eval_partition.txt");
  attr << entries.size() << "\n";
  for (const auto& n : names) attr << n << " ";
  attr << "\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string file = fmt::format("{:06d}.jpg", i + 1);
    write_image(dir / "img_align_celeba" / file, pattern_image(36, 44, 3, static_cast<int>(i) + 1));
    attr << file;
    for (int a = 0; a < 40; ++a) {
      const bool on = (a == 9 && entries[i].blond) || (a == 11 && entries[i].brown) || (a == 20 && i % 2 == 0);
      attr << (on ? "  1" : " -1");
    }
    attr << "\n";
    part << file << " " << entries[i].partition << "\n";
  }
}

}  // namespace bnn::testing
