// The layout of a run directory: every file name bnn writes into one, and the
// questions asked of one (which members finished, what x* is called). Writers
// (`bnn run`, the members) and readers (`bnn evaluate`, `predict`, `hessian`)
// take their paths from here.
//
// Note [Run directory]:
//   <run>/config.yaml          resolved config (all keys, auto values resolved)
//   <run>/labels.npy           test labels (int64)
//   <run>/preprocess.json      model and image preprocessing, for `bnn predict`
//                              (Note [Preprocessing] in src/pipeline/preprocess.h)
//   <run>/member_NNN/          one member (NNN = its index, 3 digits or more):
//     init_weights.npy         flat parameters (models::FlatParameters order,
//                              float32) at initialisation
//     <p>_weights.npy,         the member's point estimates p (point_estimates():
//     <p>_probs.npy            adam and swa, x* = swa; with map.optimizer lbfgs
//                              map alone, x* = map): flat parameters and test
//                              probabilities (float32 N x K)
//     <x*>_buffers.npy         BatchNorm statistics at x* (Note [Stored samples])
//     bayes_probs.npy          mean test probabilities of the retained samples
//     samples/step_XXXXXXXX.npy   float16 test probabilities of the sample
//                              retained after sampler step XXXXXXXX
//     samples/{weights,buffers}_XXXXXXXX.npy   with evaluation.save_sample_weights
//                              (Note [Stored samples] in src/pipeline/stored_weights.h)
//     trace.csv                phase,epoch,loss,test_accuracy,lr_or_h,seconds
//     checkpoint.pt            while unfinished (Note [Member checkpoints])
//     lock                     held by the process training the member (Note
//                              [Member locks] in src/io/file_lock.h)
//     status.json              written last: done or failed, with the seed,
//                              samples, batches_per_epoch and thin_steps
//     hessian.json             written by `bnn hessian`
//   <run>/metrics.json, metrics.csv, metrics.txt, uncertainty.json, report.md,
//   <run>/figures/             outputs of `bnn evaluate` (src/pipeline/evaluate.h)
// Members selected with --members may run as separate processes (or hosts
// sharing the directory); each run evaluates whatever members have finished.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "src/config/config.h"

namespace bnn::pipeline {

inline constexpr const char* kConfigFile = "config.yaml";
inline constexpr const char* kLabelsFile = "labels.npy";
inline constexpr const char* kPreprocessFile = "preprocess.json";
inline constexpr const char* kTraceFile = "trace.csv";
inline constexpr const char* kStatusFile = "status.json";
inline constexpr const char* kCheckpointFile = "checkpoint.pt";
inline constexpr const char* kLockFile = "lock";
inline constexpr const char* kBayesProbsFile = "bayes_probs.npy";
inline constexpr const char* kSamplesDir = "samples";

std::filesystem::path member_dir(const std::filesystem::path& run_dir, int64_t index);

// The point estimates a member of `config` writes, in order, each as
// <name>_weights.npy and <name>_probs.npy: "adam" and "swa" (x* by SWA), or
// "map" alone when map.optimizer is lbfgs (x* by L-BFGS).
std::vector<std::string> point_estimates(const config::Config& config);
// The last of them: the name of x* ("swa" or "map").
std::string anchor_point(const config::Config& config);

// <member>/<point>_weights.npy, <point>_buffers.npy, <point>_probs.npy.
std::filesystem::path point_weights_path(const std::filesystem::path& member, const std::string& point);
std::filesystem::path point_buffers_path(const std::filesystem::path& member, const std::string& point);
std::filesystem::path point_probs_path(const std::filesystem::path& member, const std::string& point);
// <member>/samples/step_XXXXXXXX.npy: the test probabilities retained after `step`.
std::filesystem::path sample_probs_path(const std::filesystem::path& member, int64_t step);

// Whether members of configs `a` and `b` may share a run directory: they may
// use different devices, thread counts, checkpointing and sample weight
// storage (none of them changes a result); every other key must agree.
bool same_experiment(config::Config a, const config::Config& b);

// Whether the member directory's status.json says "done".
bool member_finished(const std::filesystem::path& member);

// Member directories of `run_dir` whose status.json says "done", sorted.
std::vector<std::filesystem::path> finished_members(const std::filesystem::path& run_dir);

}  // namespace bnn::pipeline
