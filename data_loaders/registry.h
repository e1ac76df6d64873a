// Data sets by name, as configs name them: each declared once, with what the
// config, `bnn run`, `bnn predict` and `--help` need to know of it.
//
//   name           default directory                        images             side
//   fashion_mnist  /usr/share/datasets/fashion-mnist          28 x 28 x 1        fixed
//   cifar10        /usr/share/datasets/cifar-10-batches-bin   32 x 32 x 3        fixed
//   chest_xray     /usr/share/datasets/chest_xray             grayscale, resized 180 (data.image_size)
//   celeba         /usr/share/datasets/celeba                 RGB, centre square, resized 64
//   image_folder   (none: data.dir is required)               1 or 3 channels, resized 64
//   arrays         (none: data.dir is required)               .npy: uint8 C x H x W, or float32 D features (D x 1 x 1)
//
// Adding a data set: a loader in its own file, and one entry in registry.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

// Everything a loader may be given; each loader reads the fields its entry's
// traits say it uses.
struct LoadOptions {
  std::filesystem::path dir;
  int64_t train_limit = 0;  // 0 = all
  int64_t test_limit = 0;
  int64_t side = 0;         // resizable data sets: the image side; 0 = the data set's default
  bool standardize = true;  // optional_standardization only
  bool skip_bad_images = false;
  std::array<int64_t, 2> augment_copies = {1, 1};  // augments only
  double split_ratio = 0.8;  // image_folder without train/ and test/
  int64_t channels = 3;      // chooses_channels only
  uint64_t seed = 0;         // augmentation and the image_folder split
  int threads = 0;           // image decoding (0 = all cores)
};

struct DatasetEntry {
  std::string name;
  std::string default_dir;  // empty: none, data.dir must be given
  std::string layout;       // what data.dir holds (for help text)
  // Resizable data sets are decoded from image files and resized to a square
  // of `default_side` (or data.image_size); the others have fixed sizes.
  bool resizable = false;
  int64_t default_side = 0;
  // `bnn predict` crops new images to their centre square before resizing,
  // as the loader does.
  bool center_square = false;
  bool optional_standardization = false;  // data.standardize may be false
  bool augments = false;                  // reads data.augment_copies
  bool chooses_channels = false;          // reads data.channels
  Dataset (*load)(const LoadOptions& options, torch::Device device) = nullptr;
};

// Every data set, in the order of the table above.
const std::vector<DatasetEntry>& dataset_entries();
std::vector<std::string> dataset_names();
// The entry of `name`; throws naming the valid names for an unknown one.
const DatasetEntry& dataset_entry(const std::string& name);

// Loads data set `name` with `options` onto `device` (options.side 0 = its default).
Dataset load_dataset(const std::string& name, LoadOptions options, torch::Device device);

}  // namespace bnn::data_loaders
