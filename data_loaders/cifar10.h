// Loads CIFAR-10 (Krizhevsky 2009) from its binary version into a
// device-resident, standardized Dataset: 50000 training and 10000 test images,
// 3 x 32 x 32, ten classes. Pixels become (p / 255 - kCifar10Mean[c]) /
// kCifar10Std[c], or p / 255 with data.standardize false (as the reference
// notebook, which applies torchvision's ToTensor alone).
//
// Expected files in options.dir (the contents of cifar-10-binary.tar.gz's
// cifar-10-batches-bin folder):
//   data_batch_1.bin ... data_batch_5.bin   the training split, in this order
//   test_batch.bin                          the test split
// Each file is a sequence of 3073-byte records: one label byte (0-9), then
// 3072 pixel bytes, the red, green and blue planes of a 32x32 image in turn,
// each plane row-major. The planes become channels 0, 1, 2.
//
// Channel c of pixel p becomes float32 (p / 255 - kCifar10Mean[c]) /
// kCifar10Std[c], evaluated in double and rounded once, so the values are
// identical on every device. Every problem with the files is an error
// (std::runtime_error) naming the file and the offending value; no partial
// dataset is ever returned:
//   "<dir>: missing CIFAR-10 file <name>; ..."          (any expected file absent)
//   "<file>: truncated: <size> bytes is not a multiple of the 3073-byte record ..."
//   "<file>: empty: no records"
//   "<file>: label <v> at record <i> is out of range [0, 9]"
//
// Thread-safety: load_cifar10 shares no state and may run concurrently.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <filesystem>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

inline constexpr const char* kCifar10DefaultDir = "/usr/share/datasets/cifar-10-batches-bin";

// Per-channel (R, G, B) mean and standard deviation of the 50000 training
// images' pixels scaled to [0, 1], rounded to four digits: the usual
// torchvision Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)).
// (The stds 0.2023, 0.1994, 0.2010 found in some code are not the training
// set's pixel standard deviations, so they are not used.)
inline constexpr std::array<double, 3> kCifar10Mean = {0.4914, 0.4822, 0.4465};
inline constexpr std::array<double, 3> kCifar10Std = {0.2470, 0.2435, 0.2616};

inline constexpr int64_t kCifar10NumClasses = 10;
inline constexpr int64_t kCifar10Channels = 3;
inline constexpr int64_t kCifar10Side = 32;
inline constexpr int64_t kCifar10ImageBytes = kCifar10Channels * kCifar10Side * kCifar10Side;  // 3072
inline constexpr int64_t kCifar10RecordBytes = 1 + kCifar10ImageBytes;                          // 3073
inline constexpr int64_t kCifar10RecordsPerBatch = 10000;  // the most a batch file holds

// Reads options.dir (empty: kCifar10DefaultDir), the limits (training: the
// first n in file order data_batch_1.bin ... data_batch_5.bin; every file is
// still checked in full), test_only and stats.
Dataset load_cifar10(const LoadOptions& options, torch::Device device);

}  // namespace bnn::data_loaders
