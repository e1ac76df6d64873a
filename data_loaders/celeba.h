// Loads the CelebA blond-versus-brown-hair task of the SMS-UBU paper (section
// 5; Liu et al. 2015, "Deep Learning Face Attributes in the Wild"): aligned
// face images, RGB 64 x 64, two classes.
//
// Expected files in options.dir (the official release):
//   img_align_celeba/           the 202,599 aligned JPEGs (178 x 218)
//   list_attr_celeba.txt        line 1: the number of images; line 2: the 40
//                               attribute names; then one line per image:
//                               "<file> <40 values, each 1 or -1>"
//   list_eval_partition.txt     "<file> <0|1|2>": 0 train, 1 validation, 2 test
// Fields are separated by any whitespace (the release pads with spaces).
//
// Kept: images with exactly one of Blond_Hair and Brown_Hair set; label
// blond = 0, brown = 1. Partition 0 is the training split and 2 the test
// split, in the attribute file's order; the validation partition is not used
// (the paper reports 55,400 training and 6,073 test images). Each image is
// decoded as RGB, cropped to its largest centred square (for the 178 x 218
// aligned images: all 178 columns, rows 20 to 197, which keeps the hair) and
// resized to side x side with INTER_AREA. No augmentation (the paper used
// none). Both splits are stored as uint8 on the device (Note [Pixel storage]
// in data_loaders/dataset.h), standardized per batch with the per-channel
// mean and standard deviation of the training pixels (data.standardize
// false: p / 255, as the reference notebook).
//
// Errors (std::runtime_error) name the file and, for the text files, the
// 1-based line:
//   "<dir>: CelebA directory does not exist"
//   "<dir>: missing CelebA file <name>; the directory needs img_align_celeba/, list_attr_celeba.txt and
//    list_eval_partition.txt"
//   "<attr file>:1: expected the number of images, got '<text>'"
//   "<attr file>:2: the attribute names lack <Blond_Hair|Brown_Hair>"
//   "<attr file>:<n>: expected an image name and <k> attribute values, got <m> fields"
//   "<attr file>:<n>: attribute <name> of <image> is '<text>', expected 1 or -1"
//   "<attr file>: the first line says <n> images but <m> are listed"
//   "<partition file>:<n>: expected '<image> <0|1|2>', got '<line>'"
//   "<partition file>: no partition listed for <image>"
//   "<file>: cannot decode the image: ..." (data_loaders/image_files.h), unless
//   skip_bad_images, which leaves bad files out and logs how many.
//   "<dir>: empty split: no blond or brown-haired images in partition <p>"
//
// Reproducibility: no randomness; the result does not depend on the number
// of threads. Thread-safety: no shared state.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

inline constexpr const char* kCelebaDefaultDir = "/usr/share/datasets/celeba";
inline constexpr int64_t kCelebaDefaultSide = 64;
inline constexpr int64_t kCelebaNumClasses = 2;

// Reads options.dir (empty: kCelebaDefaultDir), side (0: kCelebaDefaultSide),
// skip_bad_images, threads, test_only and stats, and the limits: n > 0 keeps
// the first n images of the split in the attribute file's order; only those
// images are decoded.
Dataset load_celeba(const LoadOptions& options, torch::Device device);

}  // namespace bnn::data_loaders
