#include "src/pipeline/run.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "data_loaders/cifar10.h"
#include "data_loaders/fashion_mnist.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/evaluate.h"
#include "src/pipeline/member.h"

namespace bnn::pipeline {

std::vector<int64_t> parse_member_list(const std::string& text, int64_t num_members) {
  std::vector<int64_t> out;
  const std::regex item("^\\s*(\\d+)\\s*(?:-\\s*(\\d+))?\\s*$");
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::smatch m;
    if (!std::regex_match(part, m, item)) {
      throw config::ConfigError(fmt::format("--members: cannot parse '{}' (expected e.g. 3, 0-3 or 0,2,5-7)", text));
    }
    const int64_t lo = std::stoll(m[1]);
    const int64_t hi = m[2].matched ? std::stoll(m[2]) : lo;
    if (lo > hi || hi >= num_members) {
      throw config::ConfigError(
          fmt::format("--members: '{}' selects members outside 0-{} (run.members = {})", text, num_members - 1,
                      num_members));
    }
    for (int64_t i = lo; i <= hi; ++i) out.push_back(i);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

torch::Device resolve_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(name);
  } catch (const c10::Error&) {
    throw config::ConfigError(fmt::format("device '{}' is not valid: use auto, cpu, cuda or cuda:N", name));
  }
  if (device.is_cuda()) {
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (count == 0) throw config::ConfigError(fmt::format("device '{}' requested but CUDA is not available", name));
    if (device.has_index() && device.index() >= count) {
      throw config::ConfigError(fmt::format("device '{}' requested but only {} CUDA device(s) exist", name, count));
    }
  }
  return device;
}

// data.dataset is one of the config's choices (src/config/config.cpp), so
// every name that reaches here has a branch.
data_loaders::Dataset load_dataset(const config::Config& config, torch::Device device) {
  if (config.data.dataset == "cifar10") {
    data_loaders::Cifar10Options o;
    o.dir = config.data.dir;
    o.train_limit = config.data.train_limit;
    o.test_limit = config.data.test_limit;
    return data_loaders::load_cifar10(o, device);
  }
  TORCH_INTERNAL_ASSERT(config.data.dataset == "fashion_mnist", "unhandled data.dataset '", config.data.dataset,
                        "'");
  data_loaders::FashionMnistOptions o;
  o.dir = config.data.dir;
  o.train_limit = config.data.train_limit;
  o.test_limit = config.data.test_limit;
  return data_loaders::load_fashion_mnist(o, device);
}

bool same_experiment(config::Config a, const config::Config& b) {
  a.run.device = b.run.device;
  a.run.threads = b.run.threads;
  return config::to_yaml(a) == config::to_yaml(b);
}

int run(const config::Config& config, const RunOptions& options) {
  const torch::Device device = resolve_device(config.run.device);
  const auto& dir = options.run_dir;
  std::filesystem::create_directories(dir);
  const auto config_path = dir / "config.yaml";
  const std::string yaml = config::to_yaml(config);
  if (std::filesystem::exists(config_path) && !same_experiment(config::load_config(config_path, {}), config)) {
    throw config::ConfigError(fmt::format(
        "{} holds a different configuration; use another --out directory (members of one run must share it)",
        config_path.string()));
  }
  io::write_file_atomically(config_path, yaml);

  const auto load_start = std::chrono::steady_clock::now();
  const data_loaders::Dataset data = load_dataset(config, device);
  spdlog::info("{}: {} training, {} test images on {} ({:.1f}s)", data.name, data.train.size(), data.test.size(),
               device.str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
  io::write_npy(dir / "labels.npy", data.test.labels);

  std::vector<int64_t> members = options.members;
  if (members.empty()) {
    for (int64_t i = 0; i < config.run.members; ++i) members.push_back(i);
  }
  const MemberContext context{config, data, device, dir};
  // A finished member is never run again into the same directory, so a rerun
  // (or a second process given overlapping --members) cannot destroy results.
  const auto finished = finished_members(dir);
  int64_t failed = 0;
  for (int64_t index : members) {
    if (std::find(finished.begin(), finished.end(), member_dir(dir, index)) != finished.end()) {
      spdlog::info("member {} already finished in {}; skipping", index, dir.string());
      continue;
    }
    if (!run_member(context, index).ok) ++failed;
  }
  if (finished_members(dir).empty()) {
    spdlog::error("no member of {} has finished: no metrics written", dir.string());
    return 3;
  }
  fmt::print("{}", evaluation::to_table(evaluate_run(dir)));
  if (failed > 0) {
    spdlog::error("{} of {} members failed; metrics cover the members that finished", failed, members.size());
    return 3;
  }
  return 0;
}

std::vector<std::filesystem::path> finished_members(const std::filesystem::path& run_dir) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    const auto& d = entry.path();
    if (!entry.is_directory() || d.filename().string().rfind("member_", 0) != 0) continue;
    if (!std::filesystem::exists(d / "status.json")) continue;
    const auto status = nlohmann::json::parse(io::read_file(d / "status.json"));
    if (status.value("status", "") == "done") dirs.push_back(d);
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<evaluation::EnsembleRow> evaluate_run(const std::filesystem::path& run_dir) {
  return evaluate_runs({run_dir}, run_dir);
}

}  // namespace bnn::pipeline
