// Loads a user's own images from a folder with one subfolder per class, in
// either of two layouts:
//   <dir>/train/<class>/*.jpg and <dir>/test/<class>/*.jpg   split folders
//       (used whenever <dir>/train exists; test must have the same classes)
//   <dir>/<class>/*.jpg                                        no split folders:
//       each class is shuffled with the seed and its first
//       round(split_ratio * n) images train, the rest test
// Classes are the subfolder names in sorted (byte) order, labels 0, 1, ...;
// at least two are needed. Files with the extensions .jpeg, .jpg, .png, .bmp
// (any case) are read, anything else is ignored. Images are decoded as
// grayscale (channels 1) or RGB (channels 3) and resized to side x side
// (INTER_AREA; the aspect ratio is not kept). No augmentation. Both splits
// are stored as uint8 on the device (Note [Pixel storage] in
// data_loaders/dataset.h), standardized per batch with the per-channel mean
// and standard deviation of the training pixels (data.standardize false:
// p / 255).
//
// Errors (std::runtime_error) name the folder or file:
//   "<dir>: image folder directory does not exist"
//   "<dir>: an image folder needs at least two class subfolders, found <n>"
//   "<dir>/test: missing test split folder of the image folder data set"
//   "<dir>/test/<class>: missing class folder <class> of the test split"
//   "<dir>/<split>: empty split: no image files (.jpeg, .jpg, .png, .bmp) in its class folders <classes>"
//   "<dir>/<split>/<class>: no image files (.jpeg, .jpg, .png, .bmp) in class folder <class>"
//   "<dir>: split_ratio <r> leaves the <split> split empty"
//   "<file>: cannot decode the image: ..." (data_loaders/image_files.h), unless
//   skip_bad_images, which leaves bad files out and logs how many.
//
// Reproducibility: the result depends on the files, the options and the seed
// (only used to split), not on the number of threads. Thread-safety: no
// shared state.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

inline constexpr int64_t kImageFolderDefaultSide = 64;

// Reads options.dir (required), side (0: kImageFolderDefaultSide), channels
// (1 grayscale, 3 RGB), split_ratio and seed (the split without split
// folders), skip_bad_images, threads, test_only and stats, and the limits:
// n > 0 keeps the first n image files of the split, the classes interleaved
// (image_files.h, interleave_classes).
Dataset load_image_folder(const LoadOptions& options, torch::Device device);

// The class names of an image folder: the sorted subfolders of <dir>/train
// when it exists, else of <dir>.
std::vector<std::string> image_folder_classes(const std::filesystem::path& dir);

}  // namespace bnn::data_loaders
