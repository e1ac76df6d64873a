#include "data_loaders/image_folder.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data_loaders/image_files.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

using PerClass = std::vector<std::vector<fs::path>>;

std::vector<std::vector<ImageFile>> labelled(const PerClass& per_class) {
  std::vector<std::vector<ImageFile>> out(per_class.size());
  for (size_t k = 0; k < per_class.size(); ++k) {
    for (const auto& path : per_class[k]) out[k].push_back({path, static_cast<int64_t>(k), 1});
  }
  return out;
}

// Fisher-Yates with the generator's raw output, so the order is the same
// with every standard library (std::shuffle's is not specified).
void shuffle(std::vector<fs::path>& files, std::mt19937_64& rng) {
  for (size_t i = files.size(); i > 1; --i) std::swap(files[i - 1], files[rng() % i]);
}

}  // namespace

std::vector<std::string> image_folder_classes(const fs::path& dir) {
  std::error_code ec;
  const fs::path root = fs::is_directory(dir / "train", ec) ? dir / "train" : dir;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.front() == '.') continue;  // not .ipynb_checkpoints and the like
    // Class names are written to JSON files, which hold UTF-8 only.
    if (!is_utf8(name)) {
      throw std::runtime_error(fmt::format("{}/{}: a class folder's name is not UTF-8 text; rename it",
                                           root.string(), escape_non_utf8(name)));
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Dataset load_image_folder(const LoadOptions& options, torch::Device device) {
  check_limits(options.train_limit, options.test_limit);
  const int64_t side = options.side == 0 ? kImageFolderDefaultSide : options.side;
  TORCH_CHECK(side >= 1, "image folder side must be positive, got ", side);
  TORCH_CHECK(options.channels == 1 || options.channels == 3, "image folder channels must be 1 or 3, got ",
              options.channels);
  TORCH_CHECK(options.split_ratio > 0 && options.split_ratio < 1, "split_ratio must be in (0, 1), got ",
              options.split_ratio);
  require_directory(options.dir, "image folder");
  std::error_code ec;
  const bool has_splits = fs::is_directory(options.dir / "train", ec);
  const std::vector<std::string> classes = image_folder_classes(options.dir);
  if (classes.size() < 2) {
    throw std::runtime_error(fmt::format("{}: an image folder needs at least two class subfolders, found {}{}",
                                         (has_splits ? options.dir / "train" : options.dir).string(), classes.size(),
                                         has_splits ? " (with a train/ folder, the classes are its subfolders)" : ""));
  }
  // The classes are train/'s: a test class folder beside them would be left out unseen.
  if (has_splits && fs::is_directory(options.dir / "test", ec)) {
    for (const auto& entry : fs::directory_iterator(options.dir / "test")) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_directory() || name.front() == '.' || std::binary_search(classes.begin(), classes.end(), name)) {
        continue;
      }
      throw std::runtime_error(fmt::format("{}: class folder {} is not one of train/'s ({}); the classes are train/'s "
                                           "subfolders, and test/ must use the same",
                                           entry.path().string(), name, fmt::join(classes, ", ")));
    }
  }

  PerClass train, test;
  if (has_splits) {
    if (!options.test_only) train = class_folder_files(options.dir / "train", classes, "image folder");
    test = class_folder_files(options.dir / "test", classes, "image folder");
  } else if (options.test_only) {  // Note [Out-of-distribution sets]: no split, every image is a test image
    test = class_folder_files(options.dir, classes, "image folder");
  } else {
    const PerClass all = class_folder_files(options.dir, classes, "image folder");
    std::mt19937_64 rng(options.seed);
    for (auto files : all) {
      shuffle(files, rng);
      const auto n_train = static_cast<std::ptrdiff_t>(std::llround(options.split_ratio * files.size()));
      train.emplace_back(files.begin(), files.begin() + n_train);
      test.emplace_back(files.begin() + n_train, files.end());
      std::sort(train.back().begin(), train.back().end());
      std::sort(test.back().begin(), test.back().end());
    }
    for (const auto& [split, name] : {std::pair{&train, "train"}, std::pair{&test, "test"}}) {
      if (std::any_of(split->begin(), split->end(), [](const auto& f) { return !f.empty(); })) continue;
      throw std::runtime_error(fmt::format("{}: split_ratio {} leaves the {} split empty", options.dir.string(),
                                           options.split_ratio, name));
    }
  }

  ImageDecodeOptions decode;
  decode.channels = options.channels;
  decode.height = decode.width = side;
  decode.skip_bad_images = options.skip_bad_images;
  decode.threads = options.threads;
  DecodedImages train_images;
  if (!options.test_only) {
    decode.label = "image_folder train";
    train_images = decode_split(interleave_classes(labelled(train)), options.train_limit, "data.train_limit",
                                "the training split of " + options.dir.string(), decode);
  }
  decode.label = "image_folder test";
  DecodedImages test_images =
      decode_split(interleave_classes(labelled(test)), options.test_limit, options.test_limit_key,
                   "the test split of " + options.dir.string(), decode);

  return uint8_dataset("image_folder", train_images, test_images, classes, options.stats, options.standardize, device);
}

}  // namespace bnn::data_loaders
