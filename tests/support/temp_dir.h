// Test helper: a fresh, uniquely named temporary directory. ctest runs tests
// as parallel processes, so names carry the pid, a random value and a counter.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>

namespace bnn::testing {

inline std::filesystem::path unique_temp_dir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}()) + "_" +
                    std::to_string(counter++));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace bnn::testing
