#include "src/runtime/device_streams.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <torch/cuda.h>

#if defined(BNN_HAVE_C10_CUDA)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace bnn::runtime {

#if defined(BNN_HAVE_C10_CUDA)
struct WorkerStream::Impl {
  Impl(c10::DeviceIndex index, bool own) {
    if (own) {
      stream.emplace(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index));
    } else {
      device.emplace(index);
    }
  }
  ~Impl() {
    if (!stream) return;
    try {
      stream->current_stream().synchronize();
    } catch (const std::exception&) {
      // A failed device: the member's own error has been reported already.
    }
  }
  std::optional<c10::cuda::CUDAStreamGuard> stream;
  std::optional<c10::cuda::CUDAGuard> device;
};

WorkerStream::WorkerStream(torch::Device device, bool own_stream) {
  if (device.is_cuda()) impl_ = std::make_unique<Impl>(device.has_index() ? device.index() : 0, own_stream);
}

bool has_worker_streams() { return true; }

std::optional<DeviceMemory> device_memory(torch::Device device) {
  if (!device.is_cuda()) return std::nullopt;
  c10::cuda::CUDAGuard guard(device.has_index() ? device.index() : 0);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return DeviceMemory{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}
#else
struct WorkerStream::Impl {};

WorkerStream::WorkerStream(torch::Device, bool) {}

bool has_worker_streams() { return false; }

std::optional<DeviceMemory> device_memory(torch::Device) { return std::nullopt; }
#endif

WorkerStream::~WorkerStream() = default;

bool WorkerStream::own_stream() const {
#ifdef BNN_HAVE_C10_CUDA
  return impl_ != nullptr && impl_->stream.has_value();
#else
  return false;
#endif
}

void synchronize_device(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

std::optional<int64_t> parse_mem_available(const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kib) == 1) return static_cast<int64_t>(kib) * 1024;
  }
  return std::nullopt;
}

namespace {

// The first whitespace-separated number in `path`, or nullopt (no file, "max").
std::optional<int64_t> read_number(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  try {
    size_t used = 0;
    const long long value = std::stoll(word, &used);
    if (used == word.size()) return static_cast<int64_t>(value);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// `key`'s value in a memory.stat file ("inactive_file 12345" lines), or 0.
int64_t stat_value(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string name;
  long long value = 0;
  while (in >> name >> value) {
    if (name == key) return static_cast<int64_t>(value);
  }
  return 0;
}

// What the memory cgroups this process is in leave it: the smallest of
// limit - usage over its cgroup and the cgroup's ancestors (cgroup v2:
// memory.max - (memory.current - inactive_file), so that reclaimable page
// cache counts as free; v1: memory.limit_in_bytes - memory.usage_in_bytes
// of its cgroup). nullopt where no limit applies or none can be read.
std::optional<int64_t> cgroup_memory_left() {
  std::ifstream self("/proc/self/cgroup");
  std::optional<int64_t> left;
  const auto take = [&](std::optional<int64_t> limit, int64_t usage) {
    if (!limit || *limit <= 0 || *limit >= (int64_t{1} << 60)) return;  // v1 writes "no limit" as a huge number
    const int64_t l = std::max<int64_t>(0, *limit - usage);
    if (!left || l < *left) left = l;
  };
  for (std::string line; std::getline(self, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::filesystem::path path = line.substr(second + 1);
    if (controllers.empty()) {  // v2: 0::/path
      for (std::filesystem::path dir = std::filesystem::path("/sys/fs/cgroup") / path.relative_path();;
           dir = dir.parent_path()) {
        if (const auto current = read_number(dir / "memory.current")) {
          take(read_number(dir / "memory.max"), *current - stat_value(dir / "memory.stat", "inactive_file"));
        }
        if (dir == "/sys/fs/cgroup" || dir == dir.parent_path()) break;
      }
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {  // v1
      std::filesystem::path dir = std::filesystem::path("/sys/fs/cgroup/memory") / path.relative_path();
      if (!std::filesystem::exists(dir / "memory.limit_in_bytes")) dir = "/sys/fs/cgroup/memory";  // a namespace
      if (const auto usage = read_number(dir / "memory.usage_in_bytes")) {
        take(read_number(dir / "memory.limit_in_bytes"),
             *usage - stat_value(dir / "memory.stat", "total_inactive_file"));
      }
    }
  }
  return left;
}

}  // namespace

std::optional<int64_t> host_available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::optional<int64_t> available =
      meminfo ? parse_mem_available(std::string(std::istreambuf_iterator<char>(meminfo), {})) : std::nullopt;
  if (const auto left = cgroup_memory_left(); left && (!available || *left < *available)) available = left;
  return available;
}

}  // namespace bnn::runtime
