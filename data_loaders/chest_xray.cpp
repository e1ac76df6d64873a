#include "data_loaders/chest_xray.h"

#include <string>
#include <vector>

#include "data_loaders/image_files.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& class_names() {
  static const std::vector<std::string> names = {"NORMAL", "PNEUMONIA"};
  return names;
}

// The split's files, class k's with copies[k] copies each, classes interleaved.
std::vector<ImageFile> split_files(const fs::path& split_dir, const std::array<int64_t, kChestXrayNumClasses>& copies) {
  const auto per_class = class_folder_files(split_dir, class_names(), "chest X-ray");
  std::vector<std::vector<ImageFile>> files(per_class.size());
  for (size_t k = 0; k < per_class.size(); ++k) {
    for (const auto& path : per_class[k]) files[k].push_back({path, static_cast<int64_t>(k), copies[k]});
  }
  return interleave_classes(files);
}

}  // namespace

Dataset load_chest_xray(const LoadOptions& options, torch::Device device) {
  check_limits(options.train_limit, options.test_limit);
  const int64_t side = options.side == 0 ? kChestXrayDefaultSide : options.side;
  TORCH_CHECK(side >= 1, "chest X-ray image side must be positive, got ", side);
  for (int64_t c : options.augment_copies) TORCH_CHECK(c >= 1, "chest X-ray copies per image must be >= 1, got ", c);
  const fs::path dir = options.dir.empty() ? fs::path(kChestXrayDefaultDir) : options.dir;
  require_directory(dir, "chest X-ray");
  std::vector<ImageFile> train_files;
  if (!options.test_only) train_files = split_files(dir / "train", options.augment_copies);
  const auto test_files = split_files(dir / "test", {1, 1});

  ImageDecodeOptions decode;
  decode.channels = 1;
  decode.height = decode.width = side;
  decode.seed = options.seed;
  decode.skip_bad_images = options.skip_bad_images;
  decode.threads = options.threads;
  DecodedImages train;
  if (!options.test_only) {
    decode.label = "chest_xray train";
    train = decode_split(train_files, options.train_limit, "data.train_limit", (dir / "train").string(), decode);
  }
  decode.label = "chest_xray test";
  DecodedImages test =
      decode_split(test_files, options.test_limit, options.test_limit_key, (dir / "test").string(), decode);

  return uint8_dataset("chest_xray", train, test, class_names(), options.stats, options.standardize, device);
}

}  // namespace bnn::data_loaders
