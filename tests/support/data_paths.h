// Test helper: where the tests find the real Fashion-MNIST data set and
// bnn's seconds-long config.
#pragma once

#include <filesystem>
#include <string>

namespace bnn::testing {

inline const std::filesystem::path kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline const std::string kTinyConfig = std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml";

}  // namespace bnn::testing
