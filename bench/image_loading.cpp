// Load time of the chest X-ray loader per 1000 images on this machine:
// generates `--images` grayscale JPEGs of about 1024 x 1000 pixels (the size
// range of the real Kermany X-rays, which are 1000-2000 px) in a temporary
// chest_xray layout, then times load_chest_xray
//   - without augmentation (copies {1, 1}): decode + resize to 180 x 180;
//   - with the paper's copies {18, 6}: decode + resize + augmentation,
// with one thread and with all cores, and reports the memory of the training
// split (uint8) against what float32 would take. Then times load_celeba on
// 5 x `--images` generated 178 x 218 RGB JPEGs (the aligned CelebA size).
//
//   bnn_bench_image_loading [--images N] [--threads T]
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_loaders/celeba.h"
#include "data_loaders/chest_xray.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A smooth, X-ray-like grayscale image with some noise, so the JPEG has a
// realistic size (about 300 KB, the real files average about 200 KB) and
// decoding does realistic work.
cv::Mat xray_like(int width, int height) {
  cv::Mat noise(height / 16, width / 16, CV_8UC1);
  cv::randu(noise, 0, 255);
  cv::Mat image;
  cv::resize(noise, image, cv::Size(width, height), 0, 0, cv::INTER_CUBIC);
  cv::Mat grain(height, width, CV_8UC1);
  cv::randn(grain, 0, 2);
  cv::add(image, grain, image);
  return image;
}

void write_dataset(const fs::path& dir, int images) {
  cv::theRNG().state = 1;
  for (int i = 0; i < images; ++i) {
    const bool normal = i % 4 == 0;  // about the real 1341 : 3875 ratio
    const fs::path folder = dir / "train" / (normal ? "NORMAL" : "PNEUMONIA");
    fs::create_directories(folder);
    const int width = 1024 + (i % 5) * 64, height = 1000 + (i % 7) * 48;
    cv::imwrite((folder / fmt::format("img{:05d}.jpeg", i)).string(), xray_like(width, height));
  }
  for (const char* c : {"NORMAL", "PNEUMONIA"}) {
    fs::create_directories(dir / "test" / c);
    cv::imwrite((dir / "test" / c / "t.jpeg").string(), xray_like(1024, 1000));
  }
}

// CelebA-like: `images` RGB 178 x 218 JPEGs (the aligned images' size), half
// blond and half brown, all in the training partition but two test images.
void write_celeba(const fs::path& dir, int images) {
  fs::create_directories(dir / "img_align_celeba");
  std::string attr = fmt::format("{}\n", images);
  for (int a = 0; a < 40; ++a) attr += a == 9 ? "Blond_Hair " : a == 11 ? "Brown_Hair " : fmt::format("A{} ", a);
  attr += "\n";
  std::string partition;
  for (int i = 0; i < images; ++i) {
    const std::string file = fmt::format("{:06d}.jpg", i + 1);
    cv::Mat face;
    cv::merge(std::vector<cv::Mat>{xray_like(178, 218), xray_like(178, 218), xray_like(178, 218)}, face);
    cv::imwrite((dir / "img_align_celeba" / file).string(), face);
    attr += file;
    for (int a = 0; a < 40; ++a) attr += (a == 9 && i % 2 == 0) || (a == 11 && i % 2 == 1) ? "  1" : " -1";
    attr += "\n";
    partition += fmt::format("{} {}\n", file, i < images - 2 ? 0 : 2);
  }
  std::ofstream(dir / "list_attr_celeba.txt") << attr;
  std::ofstream(dir / "list_eval_partition.txt") << partition;
}

double time_load(bnn::data_loaders::LoadOptions options, int64_t* examples, int64_t* bytes) {
  const auto t0 = Clock::now();
  const auto data = bnn::data_loaders::load_chest_xray(options, torch::kCPU);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  *examples = data.train.size() + data.test.size();
  *bytes = data.train.images.numel() * data.train.images.element_size();
  return secs;
}

}  // namespace

int main(int argc, char** argv) {
  int images = 200;
  int64_t threads = std::thread::hardware_concurrency();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--images") images = std::atoi(argv[i + 1]);
    if (flag == "--threads") threads = std::atoll(argv[i + 1]);
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("bnn_bench_images_{}", ::getpid());
  write_dataset(dir, images);
  uintmax_t jpeg_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir / "train")) {
    if (e.is_regular_file()) jpeg_bytes += e.file_size();
  }
  fmt::print("{} generated JPEGs, 1024-1280 x 1000-1288 px, {:.0f} KB on average; output 180 x 180\n", images,
             jpeg_bytes / 1024.0 / images);

  for (const int64_t t : {int64_t{1}, threads}) {
    bnn::data_loaders::LoadOptions o;
    o.dir = dir;
    o.threads = static_cast<int>(t);
    int64_t examples = 0, bytes = 0;
    o.augment_copies = {1, 1};
    const double plain = time_load(o, &examples, &bytes);
    const int64_t files = examples;
    fmt::print("threads {:2}: decode + resize            {:7.2f} s per 1000 images ({} images in {:.2f} s)\n", t,
               1000.0 * plain / static_cast<double>(files), files, plain);
    o.augment_copies = {18, 6};
    const double augmented = time_load(o, &examples, &bytes);
    fmt::print("threads {:2}: decode + resize + augment  {:7.2f} s per 1000 source images, {:.2f} s per 1000 "
               "augmented examples ({} examples in {:.2f} s; training split {:.1f} MB as uint8, {:.1f} MB as "
               "float32)\n",
               t, 1000.0 * augmented / static_cast<double>(files), 1000.0 * augmented / static_cast<double>(examples),
               examples, augmented, bytes / 1e6, 4.0 * bytes / 1e6);
  }
  fs::remove_all(dir);

  const int faces = 5 * images;
  write_celeba(dir, faces);
  for (const int64_t t : {int64_t{1}, threads}) {
    bnn::data_loaders::LoadOptions o;
    o.dir = dir;
    o.threads = static_cast<int>(t);
    const auto t0 = Clock::now();
    const auto data = bnn::data_loaders::load_celeba(o, torch::kCPU);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("threads {:2}: CelebA 178 x 218 -> 64 x 64 RGB {:7.2f} s per 1000 images ({} images in {:.2f} s)\n", t,
               1000.0 * secs / faces, data.train.size() + data.test.size(), secs);
  }
  fs::remove_all(dir);
  return 0;
}
