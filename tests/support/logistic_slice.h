// Test helper: bnn's command line on configs/logistic_fmnist.yaml and a slice
// of the real Fashion-MNIST (the section 3.4 model), each call logged to its
// own file under a work folder named after `prefix`.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/data_paths.h"
#include "tests/support/run_bnn.h"

namespace bnn::testing {

inline const std::string kLogisticConfig = std::string(BNN_SOURCE_DIR) + "/configs/logistic_fmnist.yaml";
inline const std::string kLogisticSlice = " --set data.train_limit=2000 --set data.test_limit=300 --threads 1";

// The work folder of a test file: temp/<prefix>_<hash of the source tree>.
inline std::filesystem::path slice_work_dir(const std::string& prefix) {
  return std::filesystem::temp_directory_path() /
         (prefix + "_" + std::to_string(std::hash<std::string>{}(BNN_SOURCE_DIR) % 1000000007));
}

// `bnn ARGS`, logged to work/<test name>_<call>.txt.
inline CommandResult run_logged(const std::filesystem::path& work, const std::string& args) {
  std::filesystem::create_directories(work);
  static int calls = 0;
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return run_bnn(args, work / (test + "_" + std::to_string(++calls) + ".txt"));
}

}  // namespace bnn::testing
