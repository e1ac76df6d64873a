#include "src/pipeline/stored_weights.h"

#include <algorithm>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data_loaders/npy.h"
#include "src/io/npy.h"
#include "src/pipeline/run_directory.h"

namespace bnn::pipeline {
namespace {

std::vector<torch::Tensor> float_buffers(torch::nn::Module& model) {
  std::vector<torch::Tensor> out;
  for (const auto& b : model.named_buffers(/*recurse=*/true)) {
    if (b.value().is_floating_point()) out.push_back(b.value());
  }
  return out;
}

// `path` read as a 1-D tensor of `numel` entries.
torch::Tensor read_vector(const std::filesystem::path& path, int64_t numel, const char* what) {
  if (!std::filesystem::exists(path)) throw std::runtime_error(fmt::format("{} missing", path.string()));
  const torch::Tensor t = data_loaders::read_npy(path);
  if (t.dim() != 1 || t.numel() != numel) {
    throw std::runtime_error(fmt::format("{} holds shape ({}) but the model has {} {}", path.string(),
                                         fmt::join(t.sizes(), ", "), numel, what));
  }
  return t;
}

}  // namespace

std::filesystem::path sample_weights_path(const std::filesystem::path& member_dir, int64_t step) {
  return member_dir / "samples" / fmt::format("weights_{:08d}.npy", step);
}

std::filesystem::path sample_buffers_path(const std::filesystem::path& member_dir, int64_t step) {
  return member_dir / "samples" / fmt::format("buffers_{:08d}.npy", step);
}

torch::Tensor flat_buffers(torch::nn::Module& model) {
  std::vector<torch::Tensor> parts;
  for (const auto& b : float_buffers(model)) parts.push_back(b.detach().to(torch::kCPU, torch::kFloat).reshape({-1}));
  return parts.empty() ? torch::empty({0}, torch::kFloat) : torch::cat(parts);
}

void write_stored_point(const std::filesystem::path& weights_path, const std::filesystem::path& buffers_path,
                        const torch::Tensor& weights, torch::nn::Module& model, torch::ScalarType dtype) {
  io::write_npy(weights_path, weights.to(dtype));
  const torch::Tensor buffers = flat_buffers(model);
  if (buffers.numel() > 0) io::write_npy(buffers_path, buffers);
}

void load_stored_point(const std::filesystem::path& weights_path, const std::filesystem::path& buffers_path,
                       models::FlatParameters& flat, torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  flat.values().copy_(read_vector(weights_path, flat.numel(), "parameters"));
  std::vector<torch::Tensor> buffers = float_buffers(model);
  if (buffers.empty()) return;
  int64_t total = 0;
  for (const auto& b : buffers) total += b.numel();
  const torch::Tensor values = read_vector(buffers_path, total, "BatchNorm statistics");
  int64_t offset = 0;
  for (auto& b : buffers) {
    b.copy_(values.narrow(0, offset, b.numel()).view_as(b));
    offset += b.numel();
  }
}

std::vector<int64_t> stored_sample_steps(const std::filesystem::path& member_dir) {
  std::vector<int64_t> steps;
  const auto dir = member_dir / "samples";
  if (!std::filesystem::is_directory(dir)) return steps;
  const std::regex name("weights_(\\d+)\\.npy");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, m, name)) steps.push_back(std::stoll(m[1]));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

bool weights_left_behind(const std::filesystem::path& member_dir) {
  return member_finished(member_dir) && !std::filesystem::exists(point_weights_path(member_dir, "swa")) &&
         !std::filesystem::exists(point_weights_path(member_dir, "map"));
}

std::string weights_left_behind_message(const std::filesystem::path& member_dir, const std::string& command) {
  return fmt::format("{} finished, but its folder holds none of its weights (no {} or {}): a run gathered by "
                     "scripts/pack-members.sh unpack carries the members' probabilities, not their weights (and a "
                     "bnn older than stored weights kept none), so it can be evaluated but not used by {}; give the "
                     "run folder that trained it",
                     member_dir.string(), point_weights_path({}, "swa").string(),
                     point_weights_path({}, "map").string(), command);
}

}  // namespace bnn::pipeline
