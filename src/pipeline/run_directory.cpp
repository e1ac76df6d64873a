#include "src/pipeline/run_directory.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/io/atomic_file.h"

namespace bnn::pipeline {

std::filesystem::path member_dir(const std::filesystem::path& run_dir, int64_t index) {
  return run_dir / fmt::format("member_{:03d}", index);
}

std::vector<std::string> point_estimates(const config::Config& config) {
  if (config.map.optimizer == "lbfgs") return {"map"};
  return {"adam", "swa"};
}

std::string anchor_point(const config::Config& config) { return point_estimates(config).back(); }

std::filesystem::path point_weights_path(const std::filesystem::path& member, const std::string& point) {
  return member / (point + "_weights.npy");
}

std::filesystem::path point_buffers_path(const std::filesystem::path& member, const std::string& point) {
  return member / (point + "_buffers.npy");
}

std::filesystem::path point_probs_path(const std::filesystem::path& member, const std::string& point) {
  return member / (point + "_probs.npy");
}

std::filesystem::path sample_probs_path(const std::filesystem::path& member, int64_t step) {
  return member / kSamplesDir / fmt::format("step_{:08d}.npy", step);
}

bool same_experiment(config::Config a, const config::Config& b) {
  a.run.device = b.run.device;
  a.run.threads = b.run.threads;
  a.run.checkpoint = b.run.checkpoint;
  a.evaluation.save_sample_weights = b.evaluation.save_sample_weights;
  a.evaluation.sample_weights_every = b.evaluation.sample_weights_every;
  a.evaluation.sample_weights_dtype = b.evaluation.sample_weights_dtype;
  return config::to_yaml(a) == config::to_yaml(b);
}

bool member_finished(const std::filesystem::path& member) {
  if (!std::filesystem::exists(member / kStatusFile)) return false;
  const auto status = nlohmann::json::parse(io::read_file(member / kStatusFile));
  return status.value("status", "") == "done";
}

std::vector<std::filesystem::path> finished_members(const std::filesystem::path& run_dir) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    const auto& d = entry.path();
    if (!entry.is_directory() || d.filename().string().rfind("member_", 0) != 0) continue;
    if (member_finished(d)) dirs.push_back(d);
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace bnn::pipeline
