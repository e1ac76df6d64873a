#include "src/pipeline/predict.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "data_loaders/image_files.h"
#include "data_loaders/npy.h"
#include "models/flat_parameters.h"
#include "src/config/config.h"
#include "src/evaluation/uncertainty.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/member.h"
#include "src/pipeline/preprocess.h"
#include "src/pipeline/run.h"
#include "src/pipeline/run_directory.h"
#include "src/pipeline/stored_weights.h"

namespace bnn::pipeline {
namespace {

namespace fs = std::filesystem;

// The pixels of every input, N x C x side x side uint8 (for a features run,
// its standardized N x D x 1 x 1 inputs), with one name per example.
struct Inputs {
  std::vector<std::string> names;
  std::vector<torch::Tensor> pixels;
};

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("{}", fmt::join(shape, " x ")); }

// A features run's .npy: N x D float32, finite.
void add_features(const Preprocess& p, const fs::path& path, const torch::Tensor& t, Inputs& in) {
  const int64_t d = p.channels();
  if (t.scalar_type() != torch::kFloat || t.dim() != 2 || t.size(1) != d || t.size(0) == 0) {
    throw config::ConfigError(fmt::format("{}: holds {} values of shape {}; this run was trained on float32 features, "
                                          "give N x {} float32 arrays",
                                          path.string(), c10::toString(t.scalar_type()),
                                          shape_text(t.sizes().vec()), d));
  }
  if (!torch::isfinite(t).all().item<bool>()) {
    throw config::ConfigError(fmt::format("{}: NaN or infinite features", path.string()));
  }
  for (int64_t i = 0; i < t.size(0); ++i) in.names.push_back(fmt::format("{}[{}]", path.string(), i));
  in.pixels.push_back(features_of(p, t));
}

void add_npy(const Preprocess& p, const fs::path& path, Inputs& in) {
  torch::Tensor t = data_loaders::read_npy(path);
  if (p.features()) {
    add_features(p, path, t, in);
    return;
  }
  if (t.scalar_type() != torch::kByte) {
    throw config::ConfigError(fmt::format("{}: holds {} values, expected uint8 pixels (0-255)", path.string(),
                                          c10::toString(t.scalar_type())));
  }
  const std::vector<int64_t> shape = t.sizes().vec();
  if (t.dim() == 3) t = t.unsqueeze(1);
  const std::vector<int64_t> expected = {p.channels(), p.height(), p.width()};
  if (t.dim() != 4 || t.sizes().slice(1).vec() != expected) {
    // NumPy's and PIL's channels-last layout of the right images.
    const bool channels_last = t.dim() == 4 && t.size(1) == p.height() && t.size(2) == p.width() &&
                               t.size(3) == p.channels();
    throw config::ConfigError(fmt::format("{}: holds images of shape {}, expected N x {}{} ({})", path.string(),
                                          shape_text(shape), shape_text(expected),
                                          p.channels() == 1 ? fmt::format(" or N x {} x {}", p.height(), p.width())
                                                            : "",
                                          channels_last ? "channels last: save np.transpose(x, (0, 3, 1, 2))"
                                                        : ".npy pixels are not resized"));
  }
  if (t.size(0) == 0) {
    throw config::ConfigError(fmt::format("{}: holds no images (shape {})", path.string(), shape_text(shape)));
  }
  for (int64_t i = 0; i < t.size(0); ++i) in.names.push_back(fmt::format("{}[{}]", path.string(), i));
  in.pixels.push_back(t);
}

void add_image_files(const Preprocess& p, const fs::path& given, const std::vector<fs::path>& files, Inputs& in) {
  if (p.channels() != 1 && p.channels() != 3) {
    throw config::ConfigError(fmt::format("{}: this run's images have {} channels, and an image file decodes to 1 "
                                          "(grayscale) or 3 (RGB); give .npy files of N x {} x {} x {} uint8 pixels",
                                          given.string(), p.channels(), p.channels(), p.height(), p.width()));
  }
  std::vector<data_loaders::ImageFile> list;
  for (const auto& f : files) {
    list.push_back({f, /*label=*/0, /*copies=*/1});
    in.names.push_back(f.string());
  }
  in.pixels.push_back(data_loaders::decode_images(list, decode_options(p)).images);
}

Inputs read_inputs(const Preprocess& p, const std::vector<fs::path>& paths) {
  if (paths.empty()) throw config::ConfigError("bnn predict needs at least one image, folder or .npy (--images)");
  Inputs in;
  for (const auto& path : paths) {
    std::error_code ec;
    if (p.features() && path.extension() != ".npy") {
      throw config::ConfigError(fmt::format("{}: this run was trained on float32 feature arrays; give .npy files of "
                                            "N x {} features",
                                            path.string(), p.channels()));
    }
    if (fs::is_directory(path, ec)) {
      const auto files = data_loaders::list_image_files(path);
      if (files.empty()) {
        throw config::ConfigError(fmt::format("{}: no image files (.jpeg, .jpg, .png, .bmp) in the folder",
                                              path.string()));
      }
      add_image_files(p, path, files, in);
    } else if (!fs::exists(path, ec)) {
      throw config::ConfigError(fmt::format("{}: no such file or folder", path.string()));
    } else if (path.extension() == ".npy") {
      add_npy(p, path, in);
    } else {
      add_image_files(p, path, {path}, in);
    }
  }
  return in;
}

std::vector<fs::path> selected_members(const PredictOptions& options) {
  const auto finished = finished_members(options.run_dir);
  if (options.members.empty()) {
    if (finished.empty()) {
      throw config::ConfigError(fmt::format("{}: no finished member (member_NNN/status.json saying done)",
                                            options.run_dir.string()));
    }
    return finished;
  }
  std::vector<fs::path> out;
  for (int64_t index : options.members) {
    const auto dir = member_dir(options.run_dir, index);
    if (!fs::is_directory(dir)) {
      throw config::ConfigError(fmt::format("--members: {} holds no {}", options.run_dir.string(),
                                            dir.filename().string()));
    }
    if (std::find(finished.begin(), finished.end(), dir) == finished.end()) {
      throw config::ConfigError(fmt::format("--members: {} has not finished (no status.json saying done)",
                                            dir.string()));
    }
    out.push_back(dir);
  }
  return out;
}

MethodPrediction summarize(const std::string& method, int64_t draws, const evaluation::MixtureAccumulator& mixture) {
  MethodPrediction m;
  m.method = method;
  m.draws = draws;
  m.probs = mixture.mean();
  m.entropy = evaluation::row_entropy(m.probs);
  m.mutual_information = (m.entropy - mixture.expected_entropy()).clamp_min(0);
  return m;
}

// Scores stored points (Note [Stored samples]) with one model.
class StoredModels {
 public:
  StoredModels(const Preprocess& p, torch::Device device, torch::Tensor inputs)
      : model_(models::make_model(p.model, /*seed=*/0)), inputs_(inputs.to(device)) {
    model_->to(device);
    flat_ = std::make_unique<models::FlatParameters>(*model_);
  }

  torch::Tensor probabilities(const fs::path& weights, const fs::path& buffers) {
    load_stored_point(weights, buffers, *flat_, *model_);
    return models::predict_probabilities(*model_, inputs_);
  }

 private:
  std::shared_ptr<models::Classifier> model_;
  std::unique_ptr<models::FlatParameters> flat_;
  torch::Tensor inputs_;
};

// x* of each member: SWA's, or the MAP point of a run with map.optimizer
// lbfgs (map_weights.npy; the method is then reported as "map").
MethodPrediction swa_ensemble(StoredModels& models, const std::vector<fs::path>& members,
                              const std::string& point) {
  evaluation::MixtureAccumulator mixture;
  for (const auto& m : members) {
    mixture.add(models.probabilities(point_weights_path(m, point), point_buffers_path(m, point)));
  }
  return summarize(point, static_cast<int64_t>(members.size()), mixture);
}

MethodPrediction bayes_ensemble(StoredModels& models, const std::vector<fs::path>& members) {
  for (const auto& m : members) {
    const auto stored = static_cast<int64_t>(stored_sample_steps(m).size());
    if (stored == 0) {
      throw config::ConfigError(fmt::format(
          "{}: no stored posterior samples (samples/weights_*.npy); run with evaluation.save_sample_weights: true "
          "(or --set evaluation.save_sample_weights=true) to keep them, or use --method swa",
          m.string()));
    }
    // Note [Stored samples]: the set the member finished with (a bnn before
    // this record: not checked).
    const auto status = nlohmann::json::parse(io::read_file(m / kStatusFile));
    if (status.value("sample_weights_incomplete", false)) {
      throw config::ConfigError(fmt::format(
          "{}: the weights of only {} of its {} retained samples were stored (the processes that ran it had other "
          "evaluation.save_sample_weights or sample_weights_every); their average is not the member's posterior "
          "mean: use --method swa, or run the member again with one setting",
          m.string(), stored, status.value("samples", int64_t{0})));
    }
    if (status.contains("sample_weights") && status["sample_weights"].get<int64_t>() != stored) {
      throw config::ConfigError(fmt::format("{}: holds {} stored samples (samples/weights_*.npy), but it finished with "
                                            "{}: files were removed or added since",
                                            m.string(), stored, status["sample_weights"].get<int64_t>()));
    }
  }
  evaluation::MixtureAccumulator mixture;
  int64_t draws = 0;
  for (const auto& m : members) {
    evaluation::MixtureAccumulator member;
    for (int64_t step : stored_sample_steps(m)) {
      member.add(models.probabilities(sample_weights_path(m, step), sample_buffers_path(m, step)));
      ++draws;
    }
    mixture.add(member);
  }
  return summarize("bayes", draws, mixture);
}

std::string class_name(const Predictions& p, int64_t k) {
  return k < static_cast<int64_t>(p.class_names.size()) ? p.class_names[k] : std::to_string(k);
}

// CSV field: quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

Predictions predict_images(const PredictOptions& options) {
  const Preprocess preprocess = read_preprocess(options.run_dir);
  const std::vector<fs::path> members = selected_members(options);
  for (const auto& m : members) {
    if (weights_left_behind(m)) throw config::ConfigError(weights_left_behind_message(m, "bnn predict"));
  }
  Inputs in = read_inputs(preprocess, options.inputs);
  const torch::Tensor inputs = model_inputs(preprocess, torch::cat(in.pixels));
  StoredModels models(preprocess, resolve_device(options.device), inputs);

  Predictions out;
  out.images = std::move(in.names);
  out.class_names = preprocess.class_names;
  for (const auto& m : members) out.members.push_back(m.filename().string());
  if (options.swa) {
    // x* as the run's config names it; without a readable config.yaml (a
    // copy of the member folders alone), by which weights the first member holds.
    std::string point = fs::exists(point_weights_path(members.front(), "swa")) ? "swa" : "map";
    try {
      point = anchor_point(config::load_config(options.run_dir / kConfigFile, {}));
    } catch (const std::exception&) {
    }
    out.methods.push_back(swa_ensemble(models, members, point));
  }
  if (options.bayes) out.methods.push_back(bayes_ensemble(models, members));
  spdlog::info("bnn predict: {} images, {} members of {}", out.images.size(), members.size(),
               options.run_dir.string());
  return out;
}

constexpr const char* kCsvHeader = "image,method,predicted,class,entropy,mutual_information";

std::string to_csv(const Predictions& p) {
  std::string out = kCsvHeader;
  const int64_t k = p.methods.empty() ? 0 : p.methods.front().probs.size(1);
  for (int64_t c = 0; c < k; ++c) out += fmt::format(",p_{}", c);
  out += "\n";
  for (size_t i = 0; i < p.images.size(); ++i) {
    for (const auto& m : p.methods) {
      const auto row = static_cast<int64_t>(i);
      const int64_t predicted = m.probs[row].argmax().item<int64_t>();
      out += fmt::format("{},{},{},{},{:.9g},{:.9g}", csv_field(p.images[i]), m.method, predicted,
                         csv_field(class_name(p, predicted)), m.entropy[row].item<double>(),
                         m.mutual_information[row].item<double>());
      for (int64_t c = 0; c < k; ++c) out += fmt::format(",{:.9g}", m.probs[row][c].item<double>());
      out += "\n";
    }
  }
  return out;
}

nlohmann::json to_json(const Predictions& p) {
  nlohmann::json images = nlohmann::json::array();
  for (size_t i = 0; i < p.images.size(); ++i) {
    nlohmann::json image = {{"image", p.images[i]}};
    for (const auto& m : p.methods) {
      const auto row = static_cast<int64_t>(i);
      const torch::Tensor probs = m.probs[row].contiguous();
      const int64_t predicted = probs.argmax().item<int64_t>();
      image[m.method] = {{"predicted", predicted},
                         {"class", class_name(p, predicted)},
                         {"probabilities", std::vector<double>(probs.data_ptr<double>(),
                                                               probs.data_ptr<double>() + probs.numel())},
                         {"entropy", m.entropy[row].item<double>()},
                         {"mutual_information", m.mutual_information[row].item<double>()}};
    }
    images.push_back(image);
  }
  nlohmann::json draws = nlohmann::json::object();
  for (const auto& m : p.methods) draws[m.method] = m.draws;
  return {{"run_members", p.members}, {"class_names", p.class_names}, {"draws", draws}, {"images", images}};
}

std::string to_table(const Predictions& p) {
  std::string out = fmt::format("{:<40} {:<6} {:<16} {:>8} {:>8} {:>8}\n", "image", "method", "class", "prob",
                                "entropy", "mut.inf");
  for (size_t i = 0; i < p.images.size(); ++i) {
    for (const auto& m : p.methods) {
      const auto row = static_cast<int64_t>(i);
      const int64_t predicted = m.probs[row].argmax().item<int64_t>();
      std::string name = p.images[i];
      if (name.size() > 40) name = "..." + name.substr(name.size() - 37);
      out += fmt::format("{:<40} {:<6} {:<16} {:>8.4f} {:>8.4f} {:>8.4f}\n", name, m.method,
                         class_name(p, predicted), m.probs[row][predicted].item<double>(),
                         m.entropy[row].item<double>(), m.mutual_information[row].item<double>());
    }
  }
  return out;
}

void check_predictions_path(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext != ".csv" && ext != ".json") {
    throw config::ConfigError(fmt::format("--out {}: the file name must end in .csv or .json", path.string()));
  }
  check_output_file(path, "bnn predict", kCsvHeader, {"run_members", "class_names", "images"});  // Note [Output files]
}

void write_predictions(const Predictions& predictions, const fs::path& path) {
  check_predictions_path(path);
  if (path.extension() == ".csv") return io::write_file_atomically(path, to_csv(predictions));
  // An image's path need not be UTF-8, which JSON must be: its invalid bytes
  // are written as U+FFFD (the CSV output keeps them).
  io::write_file_atomically(path, to_json(predictions).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                      "\n");
}

}  // namespace bnn::pipeline
