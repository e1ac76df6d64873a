// Loads Fashion-MNIST (Xiao et al. 2017) from its four IDX files into a
// device-resident, standardized Dataset: 60000 training and 10000 test images,
// 1 x 28 x 28, ten classes.
//
// Expected files in options.dir, each plain or gzip-compressed (".gz"):
//   train-images-idx3-ubyte  train-labels-idx1-ubyte
//   t10k-images-idx3-ubyte   t10k-labels-idx1-ubyte
// When both forms exist the plain one is read, since it needs no decompression.
//
// Pixels become float32 (p / 255 - kFashionMnistMean) / kFashionMnistStd
// (bnn's default), or p / 255 with standardize false: torchvision's ToTensor
// alone, which is all the reference notebook applies (so
// configs/fashion_mnist_paper.yaml sets it); evaluated in double and rounded once,
// so the values are identical on every device. Every problem with the files (missing,
// corrupt, truncated, mismatched counts, labels outside [0, 9]) is an error
// naming the file and the offending value.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// Mean and standard deviation of the 60000 training images' pixels scaled to
// [0, 1] (0.28604 and 0.35302, rounded to four digits as torchvision users
// quote them).
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;

inline constexpr int64_t kFashionMnistNumClasses = 10;
inline constexpr int64_t kFashionMnistRows = 28;
inline constexpr int64_t kFashionMnistCols = 28;

// Reads options.dir (empty: kFashionMnistDefaultDir), the limits, standardize
// (false: pixels become the float nearest p / 255, in [0, 1]), test_only and stats.
Dataset load_fashion_mnist(const LoadOptions& options, torch::Device device);

}  // namespace bnn::data_loaders
