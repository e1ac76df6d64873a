#include "models/registry.h"

#include <functional>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/mlp.h"
#include "models/paper_cnns.h"
#include "models/torchscript.h"

namespace bnn::models {
namespace {

using PaperCnnFactory = std::function<std::shared_ptr<Classifier>(const PaperCnnOptions&)>;

// One registered model: its natural input and, for the paper CNNs, its low
// rank and constructor (null for the mlp, which has its own options).
struct Entry {
  std::string name;
  std::vector<int64_t> input_shape;
  int64_t num_classes;
  int64_t low_rank;
  PaperCnnFactory make_cnn;
};

template <typename Model>
PaperCnnFactory cnn() {
  return [](const PaperCnnOptions& o) { return std::make_shared<Model>(o); };
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {"mlp", {1, 28, 28}, 10, 0, nullptr},
      {"logistic", {1, 28, 28}, 10, 0, nullptr},  // multinomial logistic regression: the mlp without hidden layers
      {"fmnist_cnn", {1, 28, 28}, 10, 32, cnn<FmnistCnn>()},
      {"chest_xray_cnn", {1, 180, 180}, 2, 32, cnn<ChestXrayCnn>()},
      {"celeba_cnn", {3, 64, 64}, 2, 16, cnn<CelebaCnn>()},
      {"cifar10_wide_cnn", {3, 32, 32}, 10, 512, cnn<Cifar10WideCnn>()},
      {"torchscript", {}, 0, 0, nullptr},  // the user's module (model.path): the data set's shape
  };
  return table;
}

const Entry& find_entry(const std::string& name) {
  for (const auto& e : entries()) {
    if (e.name == name) return e;
  }
  TORCH_CHECK(false, "unknown model '", name, "'; valid: ", fmt::format("{}", fmt::join(model_names(), ", ")));
}

std::shared_ptr<Classifier> make_paper_cnn(const Entry& entry, const ModelSpec& spec) {
  TORCH_CHECK(spec.input_shape[1] == spec.input_shape[2], entry.name, " needs square images, got ",
              spec.input_shape[1], "x", spec.input_shape[2]);
  PaperCnnOptions o;
  o.in_channels = spec.input_shape[0];
  o.image_size = spec.input_shape[1];
  o.num_classes = spec.num_classes;
  o.low_rank = entry.low_rank;
  return entry.make_cnn(o);
}

}  // namespace

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : entries()) out.push_back(e.name);
    return out;
  }();
  return names;
}

ModelSpec default_spec(const std::string& name) {
  const Entry& entry = find_entry(name);
  ModelSpec spec;
  spec.name = entry.name;
  spec.input_shape = entry.input_shape;
  spec.num_classes = entry.num_classes;
  return spec;
}

std::shared_ptr<Classifier> make_model(const ModelSpec& spec, uint64_t seed) {
  TORCH_CHECK(spec.input_shape.size() == 3, "model input shape must be {C, H, W}, got ", spec.input_shape.size(),
              " dimensions");
  const Entry& entry = find_entry(spec.name);
  static std::mutex construction;
  std::lock_guard<std::mutex> lock(construction);
  torch::manual_seed(seed);
  if (entry.name == "torchscript") {
    TorchScriptOptions o;
    o.path = spec.path;
    o.input_shape = spec.input_shape;
    o.num_classes = spec.num_classes;
    o.init_from_file = spec.init_from_file;
    return std::make_shared<TorchScriptClassifier>(o);
  }
  if (!entry.make_cnn) {
    const bool logistic = entry.name == "logistic";
    MlpOptions o;
    o.input_shape = spec.input_shape;
    o.hidden = logistic ? std::vector<int64_t>{} : spec.hidden;
    o.num_classes = spec.num_classes;
    o.batch_norm = logistic ? false : spec.batch_norm;
    return std::make_shared<Mlp>(o);
  }
  return make_paper_cnn(entry, spec);
}

}  // namespace bnn::models
