#include "src/runtime/cgroups.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <sstream>

namespace bnn::runtime {
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

bool path_exists(const std::filesystem::path& path) {
  std::error_code error;  // a directory the process may not search: as if absent
  return std::filesystem::exists(path, error);
}

// Calls `v2(dir)` for the process's v2 cgroup and each ancestor up to
// `root`, and `v1(dir)` for its cgroup in the v1 hierarchy that has
// `controller` and each ancestor up to that hierarchy's root (only the root
// where `file` is not in the cgroup's directory: a cgroup namespace). Limits
// apply down the tree in both versions.
void for_each_cgroup(const std::string& self_cgroup, const std::filesystem::path& root, const std::string& controller,
                     const std::string& file, const std::function<void(const std::filesystem::path&)>& v2,
                     const std::function<void(const std::filesystem::path&)>& v1) {
  std::istringstream lines(self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::filesystem::path path = line.substr(second + 1);
    // A cgroup outside the namespace's view ("/../x") or not absolute: the root.
    bool outside = !path.is_absolute();
    for (const auto& part : path) outside = outside || part == "..";
    const std::filesystem::path rel = outside ? std::filesystem::path() : path.lexically_normal().relative_path();
    const auto walk = [](const std::filesystem::path& top, std::filesystem::path below,
                         const std::function<void(const std::filesystem::path&)>& visit) {
      for (;; below = below.parent_path()) {
        visit(below.empty() ? top : top / below);
        if (below.empty()) break;
      }
    };
    if (controllers.empty()) {  // v2: 0::/path
      walk(root, rel, v2);
    } else if (("," + controllers + ",").find("," + controller + ",") != std::string::npos) {  // v1
      std::filesystem::path hierarchy = root / controllers;
      if (!path_exists(hierarchy)) hierarchy = root / controller;
      walk(hierarchy, path_exists(hierarchy / rel / file) ? rel : std::filesystem::path(), v1);
    }
  }
}

}  // namespace

std::string read_self_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  // Unreadable: the root's limits alone (a cgroup namespace's, say).
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string("0::/\n");
}

std::optional<int64_t> cgroup_memory_left(const std::string& self_cgroup, const std::filesystem::path& root) {
  std::optional<int64_t> left;
  const auto take = [&](std::optional<int64_t> limit, int64_t usage) {
    if (!limit || *limit <= 0 || *limit >= (int64_t{1} << 60)) return;  // v1 writes "no limit" as a huge number
    const int64_t l = std::max<int64_t>(0, *limit - usage);
    if (!left || l < *left) left = l;
  };
  for_each_cgroup(
      self_cgroup, root, "memory", "memory.limit_in_bytes",
      [&](const std::filesystem::path& dir) {
        if (const auto current = read_number(dir / "memory.current")) {
          take(read_number(dir / "memory.max"), *current - stat_value(dir / "memory.stat", "inactive_file"));
        }
      },
      [&](const std::filesystem::path& dir) {
        if (const auto usage = read_number(dir / "memory.usage_in_bytes")) {
          take(read_number(dir / "memory.limit_in_bytes"),
               *usage - stat_value(dir / "memory.stat", "total_inactive_file"));
        }
      });
  return left;
}

int cgroup_cpu_limit(const std::string& self_cgroup, const std::filesystem::path& root) {
  int limit = 0;
  const auto take = [&](double quota, double period) {
    if (quota <= 0 || period <= 0) return;
    const double ratio = std::min(std::ceil(quota / period), static_cast<double>(std::numeric_limits<int>::max()));
    const int cpus = std::max(1, static_cast<int>(ratio));
    if (limit == 0 || cpus < limit) limit = cpus;
  };
  for_each_cgroup(
      self_cgroup, root, "cpu", "cpu.cfs_quota_us",
      [&](const std::filesystem::path& dir) {
        std::ifstream in(dir / "cpu.max");  // "max 100000" or "200000 100000"
        std::string quota;
        double period = 0;
        if (in >> quota >> period && quota != "max") take(std::atof(quota.c_str()), period);
      },
      [&](const std::filesystem::path& dir) {
        const auto quota = read_number(dir / "cpu.cfs_quota_us"), period = read_number(dir / "cpu.cfs_period_us");
        if (quota && period) take(static_cast<double>(*quota), static_cast<double>(*period));
      });
  return limit;
}

}  // namespace bnn::runtime
