// Model weights kept on disk so that `bnn predict` (src/pipeline/predict.h)
// scores new images without re-running a member and without the training data.
//
// Note [Stored samples]: a prediction uses the weights and the BatchNorm
// running statistics recalibrated on the first evaluation.bn_batches training
// batches (Note [BatchNorm] in models/classifier.h), so a stored point is two
// .npy files:
//   weights  the flat parameters (models/flat_parameters.h order), shape [P],
//            float32 or float16
//   buffers  the model's floating-point buffers right after that
//            recalibration, concatenated in named_buffers() order (BatchNorm
//            running_mean then running_var, layer by layer, and any other
//            float buffer a TorchScript module registers; the integer
//            num_batches_tracked is left out: eval mode does not read it),
//            shape [B], float32; absent for a model without float buffers
// Stored points of a member (member_NNN/):
//   swa_weights.npy, swa_buffers.npy           x*, always
//   samples/weights_XXXXXXXX.npy,
//   samples/buffers_XXXXXXXX.npy               retained sample at sampler step
//                                              XXXXXXXX (as step_XXXXXXXX.npy),
//                                              with evaluation.save_sample_weights:
//                                              the k-th, 2k-th, ... retained
//                                              sample, k = sample_weights_every
// Files are written atomically; a resumed member rewrites the samples taken
// after its last checkpoint with the same bytes (Note [Member checkpoints] in
// member_checkpoint.h). A member's status.json records "sample_weights", the
// count it finished with, and "sample_weights_incomplete" where the processes
// that ran it stored different samples (evaluation.save_sample_weights and
// sample_weights_every may differ between them); `bnn predict --method bayes`
// refuses such a member, and one whose count has changed since, rather than
// average a subset of its chain.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/flat_parameters.h"

namespace bnn::pipeline {

std::filesystem::path sample_weights_path(const std::filesystem::path& member_dir, int64_t step);
std::filesystem::path sample_buffers_path(const std::filesystem::path& member_dir, int64_t step);

// The model's floating-point buffers as one float32 CPU vector (Note [Stored
// samples]); empty for a model without any.
torch::Tensor flat_buffers(torch::nn::Module& model);

// Writes `weights` (cast to `dtype`) to weights_path and, when the model has
// buffers, flat_buffers(model) to buffers_path.
void write_stored_point(const std::filesystem::path& weights_path, const std::filesystem::path& buffers_path,
                        const torch::Tensor& weights, torch::nn::Module& model, torch::ScalarType dtype);

// Loads a point written by write_stored_point into `flat` and the model's
// buffers. Throws std::runtime_error naming the file when one is missing or
// does not fit the model.
void load_stored_point(const std::filesystem::path& weights_path, const std::filesystem::path& buffers_path,
                       models::FlatParameters& flat, torch::nn::Module& model);

// Whether `member_dir` finished (status.json "done") yet holds no x*
// weights, which every finished member stores: its folder was gathered by
// scripts/pack-members.sh, which carries probabilities but no weights.
bool weights_left_behind(const std::filesystem::path& member_dir);

// The error for such a member, naming `command`, which needs the weights.
std::string weights_left_behind_message(const std::filesystem::path& member_dir, const std::string& command);

// The sampler steps of member_dir/samples/weights_*.npy, sorted.
std::vector<int64_t> stored_sample_steps(const std::filesystem::path& member_dir);

}  // namespace bnn::pipeline
