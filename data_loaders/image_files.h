// Decoding, resizing and augmenting image files (JPEG, PNG, BMP) into uint8
// tensors: the machinery shared by the chest X-ray, CelebA and image-folder
// loaders. OpenCV decodes; the files are processed by all cores, with a
// progress line on stderr.
//
// Per file: decode as grayscale (1 channel) or RGB (3 channels); a JPEG at
// least twice the side in both dimensions is decoded at libjpeg's reduced
// scale 1/2, 1/4 or 1/8 (the smallest that keeps both dimensions >= side;
// several times faster for the 1000-2000 px X-rays); optionally crop the
// largest centred square; resize to side x side (INTER_AREA, the aspect ratio
// is not kept without the square crop). That image is copy 0.
// Copies 1, 2, ... of the same file are random augmentations of it (Note
// [Augmentation]). The copies of file i are consecutive in the output, files
// in the given order.
//
// Note [Augmentation]: each augmented copy is one affine warp of the resized
// image (bilinear, border replicated, as Keras' default fill) composed of
//   - a random resized crop: a box of area fraction U[min_area, 1] of the
//     image, aspect ratio log-uniform in [3/4, 4/3] (clipped to the image),
//     uniformly placed, stretched to the full side;
//   - a rotation by U[-max_rotation, max_rotation] degrees about the centre;
//   - a horizontal flip with probability 1/2;
// then a brightness change: pixels times U[1 - brightness, 1 + brightness],
// saturated to [0, 255]. Copy r of file i draws from its own std::mt19937_64
// seeded with SplitMix64(seed, i, r), using only the generator's raw output
// (no std:: distributions, whose results differ between standard libraries):
// the result depends on the seed and the file order alone, not on the thread
// count (the pixels themselves come from OpenCV and libjpeg, so another
// version of either may round differently).
//
// Errors (std::runtime_error), one per bad file, naming it:
//   "<file>: cannot read the file: <reason>"
//   "<file>: cannot decode the image: the file is empty"
//   "<file>: cannot decode the image: truncated JPEG (no end-of-image marker after the image data)"
//   "<file>: cannot decode the image: not a valid JPEG, PNG or BMP file"
//   "<file>: the image is <w> x <h> pixels, expected <side> x <side>" (exact_size)
// With skip_bad_images the bad files are left out and counted instead; the
// error of the first bad file (in file order) is what is thrown otherwise.
//
// Thread-safety: decode_images shares no state between calls.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

struct ImageFile {
  std::filesystem::path path;
  int64_t label = 0;
  int64_t copies = 1;  // >= 1: copy 0 as decoded, copies 1.. augmented
};

// Note [Augmentation]. The defaults are the chest X-ray settings.
struct Augmentation {
  double min_area = 0.8;
  double max_rotation_degrees = 20.0;
  double brightness = 0.2;
};

// One augmented copy of a side x side image, drawn from `rng` in a fixed
// order (Note [Augmentation]): `matrix`, row-major 2 x 3, maps a pixel of the
// copy to where it is read in the image (cv::warpAffine's inverse map):
// [sx cos(t) f, -sx sin(t), tx; sy sin(t) f, sy cos(t), ty] with the crop's
// scales sx, sy (its area sx sy of the image's, at least min_area before the
// aspect ratio's clipping to the image), rotation t within
// +-max_rotation_degrees and f = -1 for a mirrored copy; `gain` scales the
// brightness. The loaders apply it; exposed for its tests.
struct AugmentationWarp {
  std::array<double, 6> matrix{};
  double gain = 1.0;
};
AugmentationWarp draw_augmentation(double side, const Augmentation& a, std::mt19937_64& rng);

struct ImageDecodeOptions {
  int64_t channels = 1;         // 1 = grayscale, 3 = RGB
  int64_t height = 0;           // output images are height x width pixels
  int64_t width = 0;
  bool center_square = false;   // crop the largest centred square first
  bool exact_size = false;      // a file that is not height x width is an error, not resized
  Augmentation augmentation;
  uint64_t seed = 0;            // augmentation seed
  bool skip_bad_images = false;
  int64_t threads = 0;          // 0 = all cores
  std::string label;            // for the progress line, e.g. "chest_xray train"
};

struct DecodedImages {
  torch::Tensor images;  // N x C x height x width uint8, CPU
  torch::Tensor labels;  // N int64, CPU
  int64_t skipped = 0;   // bad files left out (skip_bad_images only)
  std::filesystem::path first_skipped;
};

DecodedImages decode_images(const std::vector<ImageFile>& files, const ImageDecodeOptions& options);

// The image files (.jpeg, .jpg, .png, .bmp, any case) directly inside `dir`,
// sorted by name.
std::vector<std::filesystem::path> list_image_files(const std::filesystem::path& dir);

// The image files of a split folder holding one subfolder per class: entry k
// lists split_dir / class_names[k]. Errors name the folder:
//   "<split_dir>: missing <split> split folder of the <dataset> data set"
//   "<split_dir>/<class>: missing class folder <class> of the <split> split"
//   "<split_dir>: empty split: no image files (.jpeg, .jpg, .png, .bmp) in its class folders <classes>"
//   "<split_dir>/<class>: no image files (.jpeg, .jpg, .png, .bmp) in class folder <class>"
std::vector<std::vector<std::filesystem::path>> class_folder_files(const std::filesystem::path& split_dir,
                                                                   const std::vector<std::string>& class_names,
                                                                   const std::string& dataset_name);

// One list from per-class lists, round-robin over the classes (the first
// file of every class, then the second, ...), so that the first examples of
// a split, which train_limit / test_limit keep, mix all classes.
std::vector<ImageFile> interleave_classes(const std::vector<std::vector<ImageFile>>& per_class);

// decode_images over the first `limit` files (all when limit is 0; a file
// gives `copies` examples); throws "<limit_option> = <limit> exceeds the <n>
// image files of <where>" when there are fewer. Logs how many bad files were
// skipped; when every file was bad:
// "<where>: empty split: all <n> image files are unreadable (the first <file>)".
DecodedImages decode_split(const std::vector<ImageFile>& files, int64_t limit, const std::string& limit_option,
                           const std::string& where, const ImageDecodeOptions& options);

// The Dataset `name` of decoded splits, kept as uint8 on `device` and
// standardized with `stats`, or without them the training split's per-channel
// statistics (standardize false: unit_pixel_stats, pixels p / 255) (Note
// [Pixel storage] in dataset.h); input shape C x H x W of the
// test images; label k is class_names[k]. A `train` without images (a
// test_only load, LoadOptions) leaves the training split empty.
Dataset uint8_dataset(const std::string& name, const DecodedImages& train, const DecodedImages& test,
                      const std::vector<std::string>& class_names, const std::optional<ChannelStats>& stats,
                      bool standardize, torch::Device device);

}  // namespace bnn::data_loaders
