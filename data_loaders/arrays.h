// `data.dataset: arrays`: a data set of the user's own, as four NumPy files in
// data.dir (Note [Array data sets]):
//
//   train_x.npy  uint8 images N x H x W (one channel) or N x C x H x W,
//                or float32 features N x D (tabular data, for the mlp)
//   train_y.npy  int64 or int32 labels, N, in 0 .. K-1
//   test_x.npy, test_y.npy   the same for the test split
//   class_names.txt          optional: K lines, the name of class k on line k+1
//
// K is the number of lines of class_names.txt, or else the largest label of
// either split plus one (at least 2). Standardization statistics come from
// the training split only: images per channel, as the image loaders do
// (channel_stats; pixels stay uint8 in memory, Note [Pixel storage]);
// features per column (mean and standard deviation in double, a constant
// column gets std 1), stored standardized as float32 with input shape
// D x 1 x 1, so that a feature is a "channel" and its statistics travel in
// Dataset::pixel_stats (in feature units, not fractions of 255) to the run's
// preprocess.json. data.standardize: false leaves features as they are and
// maps pixels p to p / 255.
//
// Everything a user can get wrong is a std::runtime_error naming the file
// and what is wrong, before any training: a missing file, a dtype or rank
// other than those above, splits with different example shapes or dtypes, a
// label count that differs from the example count, labels out of range,
// NaN or infinite features, an empty split, a limit beyond the examples, a
// truncated file (data_loaders/npy.h).
#pragma once

#include <cstdint>
#include <filesystem>

#include <torch/torch.h>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

// Reads options.dir (required), the limits, standardize, test_only and stats.
Dataset load_arrays(const LoadOptions& options, torch::Device device);

// N x D float32 features as N x D x 1 x 1 model inputs: column j maps to
// (x - mean[j]) / std[j], evaluated in double and rounded once (the loader's
// map, reused by `bnn predict`).
torch::Tensor standardize_features(const torch::Tensor& x, const ChannelStats& stats);

}  // namespace bnn::data_loaders
