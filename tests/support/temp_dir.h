// Test helper: a fresh, uniquely named temporary directory. ctest runs tests
// as parallel processes, so names carry the pid, a random value and a counter.
//
// Each directory is removed when the test program exits, unless one of its
// tests failed (the files are then kept to look at) or BNN_KEEP_TEST_DIRS is
// set. A forked child that exits leaves its parent's directories alone.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

namespace bnn::testing {

class TempDirs {
 public:
  static TempDirs& instance() {
    static TempDirs dirs;
    return dirs;
  }

  void add(const std::filesystem::path& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }

  TempDirs(const TempDirs&) = delete;
  TempDirs& operator=(const TempDirs&) = delete;

  ~TempDirs() {
    if (::getpid() != owner_ || std::getenv("BNN_KEEP_TEST_DIRS") != nullptr) return;
    if (::testing::UnitTest::GetInstance()->Failed()) return;
    for (const auto& dir : dirs_) {
      std::error_code ignored;  // a test may have removed it already
      std::filesystem::remove_all(dir, ignored);
    }
  }

 private:
  // gtest's UnitTest is made first, so that it outlives this registry.
  TempDirs() : owner_(::getpid()) { ::testing::UnitTest::GetInstance(); }

  pid_t owner_;
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};

inline std::filesystem::path unique_temp_dir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}()) + "_" +
                    std::to_string(counter++));
  std::filesystem::create_directories(dir);
  TempDirs::instance().add(dir);
  return dir;
}

}  // namespace bnn::testing
