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

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

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
  bool augments = false;                  // reads data.augment_copies
  bool chooses_channels = false;          // reads data.channels
  Dataset (*load)(const LoadOptions& options, torch::Device device) = nullptr;
};

// Every data set, in the order of the table above.
const std::vector<DatasetEntry>& dataset_entries();
std::vector<std::string> dataset_names();
// The entry of `name`; throws naming the valid names for an unknown one.
const DatasetEntry& dataset_entry(const std::string& name);

// Loads data set `name` with `options` onto `device` (options.side 0 = its
// default); throws for test_only without stats.
Dataset load_dataset(const std::string& name, LoadOptions options, torch::Device device);

}  // namespace bnn::data_loaders
