// Test helper: where the tests find the real Fashion-MNIST data set and
// bnn's seconds-long config.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace bnn::testing {

inline const std::filesystem::path kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline const std::string kTinyConfig = std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml";

}  // namespace bnn::testing

// Skips the current test (its body or SetUp) where the real Fashion-MNIST is
// not installed, naming where it was looked for. The empty `if` branch keeps
// a following `else` from binding to the macro's `if`.
#define BNN_SKIP_WITHOUT_FASHION_MNIST()                              \
  if (std::filesystem::exists(::bnn::testing::kFashionMnistDir)) {    \
  } else                                                              \
    GTEST_SKIP() << "Fashion-MNIST not installed at " << ::bnn::testing::kFashionMnistDir
