#include "data_loaders/fashion_mnist.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <system_error>

#include "data_loaders/idx.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;

// Returns dir/name if it exists, else dir/name.gz.
fs::path find_idx_file(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  const fs::path plain = dir / name;
  if (fs::exists(plain, ec)) return plain;
  const fs::path gzipped = dir / (name + ".gz");
  if (fs::exists(gzipped, ec)) return gzipped;
  throw std::runtime_error(fmt::format(
      "{}: missing Fashion-MNIST file {} (or {}.gz); the directory needs "
      "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
      "t10k-labels-idx1-ubyte, each plain or with .gz",
      dir.string(), name, name));
}

void check_labels(const torch::Tensor& labels, const fs::path& path) {
  const uint8_t* data = labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (data[i] >= kFashionMnistNumClasses) {
      throw std::runtime_error(fmt::format("{}: label {} at index {} is out of range [0, {}]",
                                           path.string(), int{data[i]}, i,
                                           kFashionMnistNumClasses - 1));
    }
  }
}

// The reference code's statistics, or mean 0 and std 1 (pixels p / 255 in
// [0, 1]) with standardize false.
const ChannelStats& pixel_stats(bool standardize) {
  static const ChannelStats standardized{{kFashionMnistMean}, {kFashionMnistStd}};
  static const ChannelStats unit = unit_pixel_stats(1);
  return standardize ? standardized : unit;
}

// Keeps the first `limit` examples (all when limit is 0).
torch::Tensor apply_limit(const torch::Tensor& data, int64_t limit, const std::string& option,
                          const fs::path& path) {
  if (limit == 0) return data;
  TORCH_CHECK(limit <= data.size(0), option, " = ", limit, " exceeds the ", data.size(0),
              " examples in ", path.string());
  return data.narrow(0, 0, limit);
}

Split load_split(const fs::path& dir, const std::string& prefix, int64_t limit,
                 const std::string& limit_option, const ChannelStats& stats, torch::Device device) {
  const fs::path image_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  const fs::path label_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
  torch::Tensor images = read_idx_images(image_path, kFashionMnistRows, kFashionMnistCols);
  torch::Tensor labels = read_idx_labels(label_path);
  if (images.size(0) != labels.size(0)) {
    throw std::runtime_error(fmt::format("{}: count mismatch: {} labels, but {} has {} images",
                                         label_path.string(), labels.size(0),
                                         image_path.string(), images.size(0)));
  }
  check_labels(labels, label_path);
  images = apply_limit(images, limit, limit_option, image_path);
  labels = apply_limit(labels, limit, limit_option, label_path);

  Split split;
  split.images = standardize_pixels(images.unsqueeze(1), stats).to(device);
  split.labels = labels.to(torch::kInt64).to(device);
  return split;
}

}  // namespace

Dataset load_fashion_mnist(const LoadOptions& options, torch::Device device) {
  check_limits(options.train_limit, options.test_limit);
  const fs::path dir = options.dir.empty() ? fs::path(kFashionMnistDefaultDir) : options.dir;
  require_directory(dir, "Fashion-MNIST");
  const ChannelStats stats = options.stats.value_or(pixel_stats(options.standardize));
  Dataset dataset;
  dataset.name = "fashion_mnist";
  if (!options.test_only) {
    dataset.train = load_split(dir, "train", options.train_limit, "data.train_limit", stats, device);
  }
  dataset.test = load_split(dir, "t10k", options.test_limit, options.test_limit_key, stats, device);
  dataset.num_classes = kFashionMnistNumClasses;
  dataset.input_shape = {1, kFashionMnistRows, kFashionMnistCols};
  dataset.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  dataset.pixel_stats = stats;
  return dataset;
}

}  // namespace bnn::data_loaders
