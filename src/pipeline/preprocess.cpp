#include "src/pipeline/preprocess.h"

#include <fmt/format.h>

#include "data_loaders/arrays.h"
#include "data_loaders/registry.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/member.h"
#include "src/pipeline/run_directory.h"

namespace bnn::pipeline {

Preprocess preprocess_of(const config::Config& config, const data_loaders::Dataset& data) {
  Preprocess p;
  p.dataset = data.name;
  p.model = model_spec(config, data);
  if (p.model.name == "torchscript") p.model.path = kModelFile;  // the run's copy, relative to the run directory
  p.class_names = data.class_names;
  const data_loaders::DatasetEntry& entry = data_loaders::dataset_entry(data.name);
  p.resize = entry.resizable;
  p.center_square = entry.center_square;
  p.stats = data.pixel_stats;
  p.standardization = data.features                                    ? "features"
                      : data.train.images.scalar_type() == torch::kByte ? "affine"
                                                                        : "table";
  return p;
}

nlohmann::json to_json(const Preprocess& p) {
  return {{"dataset", p.dataset},
          {"model",
           {{"name", p.model.name},
            {"input_shape", p.model.input_shape},
            {"num_classes", p.model.num_classes},
            {"hidden", p.model.hidden},
            {"batch_norm", p.model.batch_norm},
            {"path", p.model.path}}},
          {"class_names", p.class_names},
          {"image",
           {{"channels", p.channels()},
            {"side", p.height()},  // "side" before images could be non-square (arrays); input_shape holds both
            {"resize", p.resize},
            {"center_square", p.center_square}}},
          {"pixels", {{"mean", p.stats.mean}, {"std", p.stats.std}, {"standardization", p.standardization}}}};
}

Preprocess read_preprocess(const std::filesystem::path& run_dir) {
  const auto path = run_dir / kPreprocessFile;
  if (!std::filesystem::exists(path)) {
    throw config::ConfigError(fmt::format("{} missing: {} is not a bnn run directory, or was made by a bnn older "
                                          "than `bnn predict`",
                                          path.string(), run_dir.string()));
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(io::read_file(path));
    Preprocess p;
    p.dataset = j.at("dataset").get<std::string>();
    const auto& m = j.at("model");
    p.model.name = m.at("name").get<std::string>();
    p.model.input_shape = m.at("input_shape").get<std::vector<int64_t>>();
    p.model.num_classes = m.at("num_classes").get<int64_t>();
    p.model.hidden = m.at("hidden").get<std::vector<int64_t>>();
    p.model.batch_norm = m.at("batch_norm").get<bool>();
    p.model.path = m.value("path", std::string());  // absent before torchscript models
    if (!p.model.path.empty() && std::filesystem::path(p.model.path).is_relative()) {
      p.model.path = (run_dir / p.model.path).string();
    }
    p.class_names = j.at("class_names").get<std::vector<std::string>>();
    p.resize = j.at("image").at("resize").get<bool>();
    p.center_square = j.at("image").at("center_square").get<bool>();
    const auto& pixels = j.at("pixels");
    p.stats.mean = pixels.at("mean").get<std::vector<double>>();
    p.stats.std = pixels.at("std").get<std::vector<double>>();
    p.standardization = pixels.at("standardization").get<std::string>();
    if (p.model.input_shape.size() != 3 || p.stats.mean.size() != static_cast<size_t>(p.channels()) ||
        p.stats.std.size() != p.stats.mean.size() ||
        (p.standardization != "table" && p.standardization != "affine" && p.standardization != "features")) {
      throw config::ConfigError("inconsistent input shape, statistics or standardization");
    }
    return p;
  } catch (const std::exception& e) {
    throw config::ConfigError(fmt::format("{}: not a valid preprocess.json: {}", path.string(), e.what()));
  }
}

data_loaders::ImageDecodeOptions decode_options(const Preprocess& p) {
  data_loaders::ImageDecodeOptions o;
  o.channels = p.channels();
  o.height = p.height();
  o.width = p.width();
  o.center_square = p.center_square;
  o.exact_size = !p.resize;
  o.label = "bnn predict";
  return o;
}

torch::Tensor features_of(const Preprocess& p, const torch::Tensor& x) {
  return data_loaders::standardize_features(x, p.stats);
}

torch::Tensor model_inputs(const Preprocess& p, const torch::Tensor& pixels) {
  if (p.features()) return pixels;  // standardized by add_npy (features_of)
  if (p.standardization == "table") return data_loaders::standardize_pixels(pixels, p.stats);
  const torch::Tensor no_labels = torch::zeros({pixels.size(0)}, torch::kLong);
  return data_loaders::uint8_split(pixels, no_labels, p.stats, torch::kCPU).inputs();
}

}  // namespace bnn::pipeline
