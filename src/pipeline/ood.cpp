#include "src/pipeline/ood.h"

#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data_loaders/registry.h"

namespace bnn::pipeline {

std::vector<OodSet> load_ood_sets(const config::Config& config, const data_loaders::Dataset& data,
                                  torch::Device device) {
  std::vector<OodSet> sets;
  for (const config::OodSetConfig& c : config.evaluation.ood) {
    const auto fail = [&c](const std::string& why) {
      return config::ConfigError(fmt::format("config key 'evaluation.ood': set '{}' ({} in {}): {}", c.name, c.dataset,
                                             c.dir, why));
    };
    std::error_code ec;
    if (!std::filesystem::is_directory(c.dir, ec)) {
      throw fail(std::filesystem::exists(c.dir, ec) ? "dir is a file; give the folder holding the data set"
                                                    : "dir does not exist");
    }
    const data_loaders::DatasetEntry& entry = data_loaders::dataset_entry(c.dataset);
    data_loaders::LoadOptions o;
    o.dir = c.dir;
    o.test_limit = c.limit;
    o.test_limit_key = "limit";
    o.test_only = true;
    o.stats = data.pixel_stats;
    o.skip_bad_images = config.data.skip_bad_images;
    o.threads = static_cast<int>(config.run.threads);
    const std::vector<int64_t>& shape = data.input_shape;
    if (entry.resizable && !data.features) {
      if (shape.at(1) != shape.at(2)) {
        throw fail(fmt::format("{} images are resized to squares, and this run's are {} x {} pixels (height x width): "
                               "give the set as arrays of that shape",
                               c.dataset, shape.at(1), shape.at(2)));
      }
      o.side = shape.at(1);
    }
    if (entry.chooses_channels) o.channels = shape.at(0);
    data_loaders::Dataset d;
    try {
      d = data_loaders::load_dataset(c.dataset, o, device);
    } catch (const c10::Error& e) {
      throw fail(fmt::format("{}; an OOD set needs the training data's input shape ({})", e.what_without_backtrace(),
                             fmt::join(shape, " x ")));
    } catch (const std::exception& e) {
      throw fail(e.what());
    }
    if (d.input_shape != shape || d.features != data.features) {
      throw fail(fmt::format("its {} have shape ({}), but the model takes the training data's ({}); an OOD set must "
                             "match it",
                             d.features ? "features" : "images", fmt::join(d.input_shape, " x "),
                             fmt::join(shape, " x ")));
    }
    sets.push_back({c.name, d.test});
  }
  return sets;
}

std::filesystem::path ood_member_dir(const std::filesystem::path& member, const std::string& name) {
  return member / "ood" / name;
}

}  // namespace bnn::pipeline
