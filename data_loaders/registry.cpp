#include "data_loaders/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "data_loaders/arrays.h"
#include "data_loaders/celeba.h"
#include "data_loaders/chest_xray.h"
#include "data_loaders/cifar10.h"
#include "data_loaders/fashion_mnist.h"
#include "data_loaders/image_folder.h"

namespace bnn::data_loaders {
namespace {

// A class with no training example cannot be learnt, and its test examples
// would score it as if it had been: refused, as arrays refuses it (its own
// message names the labels file). Under data.train_limit the file's other
// examples may hold it, so it is said, not refused.
void check_every_class_is_trained(const Dataset& data, const LoadOptions& options, const DatasetEntry& e) {
  const torch::Tensor counts = torch::bincount(data.train.labels.to(torch::kCPU), {}, data.num_classes);
  std::vector<std::string> empty;
  for (int64_t k = 0; k < data.num_classes; ++k) {
    if (counts[k].item<int64_t>() > 0) continue;
    empty.push_back(static_cast<size_t>(k) < data.class_names.size()
                        ? fmt::format("{} ('{}')", k, data.class_names[static_cast<size_t>(k)])
                        : std::to_string(k));
  }
  if (empty.empty()) return;
  const std::string dir = options.dir.empty() ? e.default_dir : options.dir.string();
  const std::string what = fmt::format(
      "{}: data.dataset {}: no training example{} is of class {} (of {})", dir, e.name,
      options.train_limit > 0 ? fmt::format(" among the first {} (data.train_limit)", options.train_limit) : "",
      fmt::join(empty, ", "), data.num_classes);
  if (options.train_limit > 0) {
    spdlog::warn("{}: those classes are trained without examples", what);
    return;
  }
  throw std::runtime_error(what + "; a model cannot learn a class it never sees: check the training split's " +
                           (e.name == "image_folder" ? "class folders, or data.split_ratio" : "labels"));
}

}  // namespace

const std::vector<DatasetEntry>& dataset_entries() {
  static const std::vector<DatasetEntry> table = [] {
    std::vector<DatasetEntry> t(6);
    t[0].name = "fashion_mnist";
    t[0].default_dir = kFashionMnistDefaultDir;
    t[0].layout = "the four IDX files, plain or .gz";
    t[0].load = load_fashion_mnist;
    t[1].name = "cifar10";
    t[1].default_dir = kCifar10DefaultDir;
    t[1].layout = "the binary version's data_batch_1.bin ... data_batch_5.bin and test_batch.bin";
    t[1].load = load_cifar10;
    t[2].name = "chest_xray";
    t[2].default_dir = kChestXrayDefaultDir;
    t[2].layout = "the chest_xray folder with train/ and test/";
    t[2].resizable = true;
    t[2].default_side = kChestXrayDefaultSide;
    t[2].augments = true;
    t[2].load = load_chest_xray;
    t[3].name = "celeba";
    t[3].default_dir = kCelebaDefaultDir;
    t[3].layout = "img_align_celeba/, list_attr_celeba.txt, list_eval_partition.txt";
    t[3].resizable = true;
    t[3].default_side = kCelebaDefaultSide;
    t[3].center_square = true;
    t[3].load = load_celeba;
    t[4].name = "image_folder";
    t[4].layout = "one subfolder per class, optionally under train/ and test/";
    t[4].resizable = true;
    t[4].default_side = kImageFolderDefaultSide;
    t[4].chooses_channels = true;
    t[4].load = load_image_folder;
    t[5].name = "arrays";
    t[5].layout = "train_x.npy, train_y.npy, test_x.npy, test_y.npy (uint8 images or float32 features; int labels), "
                  "optionally class_names.txt";
    t[5].load = load_arrays;
    return t;
  }();
  return table;
}

std::vector<std::string> dataset_names() {
  std::vector<std::string> names;
  for (const auto& e : dataset_entries()) names.push_back(e.name);
  return names;
}

const DatasetEntry& dataset_entry(const std::string& name) {
  for (const auto& e : dataset_entries()) {
    if (e.name == name) return e;
  }
  TORCH_CHECK(false, "unknown data set '", name, "'; valid: ", fmt::format("{}", fmt::join(dataset_names(), ", ")));
}

Dataset load_dataset(const std::string& name, LoadOptions options, torch::Device device) {
  const DatasetEntry& e = dataset_entry(name);
  if (e.resizable && options.side == 0) options.side = e.default_side;
  TORCH_CHECK(!options.test_only || options.stats, "loading only the test split of ", name,
              " needs the statistics to standardize it with");
  Dataset data;
  try {
    data = e.load(options, device);
  } catch (const std::filesystem::filesystem_error& error) {
    // A folder that cannot be listed, a symbolic link that loops: the path
    // and the system's reason, not the library's wording.
    throw std::runtime_error(fmt::format("{}: cannot read: {}", error.path1().string(), error.code().message()));
  }
  if (!options.test_only) check_every_class_is_trained(data, options, e);
  return data;
}

}  // namespace bnn::data_loaders
