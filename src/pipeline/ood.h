// Out-of-distribution sets: loaded with the training data's preprocessing,
// predicted by every member next to the test set, and where their
// predictions live in a run directory.
//
// Note [Out-of-distribution sets]: evaluation.ood names sets of inputs unlike
// the training data (Fashion-MNIST's test set against MNIST digits, say).
// Each is the test split of a data set bnn can load (data_loaders/registry.h:
// an IDX folder, CIFAR-10, an image folder, .npy arrays, ...; an image folder
// without train/ and test/ folders is used whole, every image a test
// image), at most
// `limit` examples, prepared exactly as the training images are: resizable
// data sets are decoded at the training data's side (and, for image_folder,
// channels), and pixels are standardized with the training data's
// statistics, not the set's own (LoadOptions::stats). Its input shape must
// be the model's; labels are ignored. A member predicts every set with the
// model just used for a test prediction (so after the same BatchNorm
// recalibration) at each point estimate and at every retained sample, and
// writes, mirroring its own files,
//   <member>/ood/<name>/<point>_probs.npy            float32, N_ood x K
//   <member>/ood/<name>/samples/step_XXXXXXXX.npy    as samples/ (evaluation.sample_probs_dtype)
// No running mean is kept for them (the member checkpoint is unchanged):
// `bnn evaluate` averages the stored samples it selects, for the test set and
// the OOD sets alike, and scores detection (src/evaluation/ood.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data_loaders/dataset.h"
#include "src/config/config.h"

namespace bnn::pipeline {

struct OodSet {
  std::string name;
  data_loaders::Split images;  // model inputs (labels kept but unused), on the device
};

// The sets of config.evaluation.ood, prepared as `data` (the training data
// set, loaded by `config`) on `device`. Throws config::ConfigError naming
// the set and what is wrong: a missing folder, a file the loader rejects,
// images of another shape than the model's input.
std::vector<OodSet> load_ood_sets(const config::Config& config, const data_loaders::Dataset& data,
                                  torch::Device device);

// <member>/ood/<name>: laid out as a member directory (point_probs_path,
// sample_probs_path of run_directory.h apply to it).
std::filesystem::path ood_member_dir(const std::filesystem::path& member, const std::string& name);

}  // namespace bnn::pipeline
