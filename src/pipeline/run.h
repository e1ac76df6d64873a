// `bnn run`: members of one configuration into one run directory, then the
// ensemble table over every finished member found there.
//
// Note [Run directory]:
//   <run>/config.yaml          resolved config (all keys, auto values resolved)
//   <run>/labels.npy           test labels (int64)
//   <run>/member_NNN/          adam_probs.npy, swa_probs.npy, bayes_probs.npy
//                              (float32 N x K), samples/step_XXXXXXXX.npy (float16
//                              test probabilities of each retained sample),
//                              trace.csv, status.json (written last)
//   <run>/metrics.json, metrics.csv, metrics.txt
// Members selected with --members may run as separate processes (or hosts
// sharing the directory); each run evaluates whatever members have finished.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "src/config/config.h"
#include "src/evaluation/ensemble.h"

namespace bnn::pipeline {

struct RunOptions {
  std::filesystem::path run_dir;
  std::vector<int64_t> members;  // empty = all of 0..M-1
  // One worker per entry, each taking the next unfinished member: "cuda:0",
  // "cuda:1", ... (or "cpu" entries). Empty = one worker on run.device.
  std::vector<std::string> devices;
};

// "all" -> every visible CUDA device (an error without one); otherwise a
// comma-separated list of devices ("cuda:0,cuda:2", "cpu,cpu"). Throws
// ConfigError naming the bad entry.
std::vector<std::string> parse_device_list(const std::string& text);

// "3", "0-3", "0,2,5-7" -> indices. Throws ConfigError naming the text.
std::vector<int64_t> parse_member_list(const std::string& text, int64_t num_members);

// "auto" -> cuda if available else cpu. Throws ConfigError for an
// unavailable device.
torch::Device resolve_device(const std::string& name);

// Runs the selected members (on several devices at once with
// options.devices; the dataset is loaded once per distinct device). Returns
// the process exit code: 0 if every selected member finished, 3 if some
// failed (their diagnostics are logged; metrics are still written).
int run(const config::Config& config, const RunOptions& options);

// Member directories of `run_dir` whose status.json says "done", sorted.
std::vector<std::filesystem::path> finished_members(const std::filesystem::path& run_dir);

// Builds the ensemble tables from the finished members in `run_dir` and writes
// metrics.json, metrics.csv and metrics.txt there. Returns the rows.
std::vector<evaluation::EnsembleRow> evaluate_run(const std::filesystem::path& run_dir);

// `bnn evaluate`: merges the finished members of several run directories of
// one experiment (members run as separate processes or on other hosts),
// ordered by member index, and writes the tables to `out_dir`. Directories
// with different configurations (run.device, run.threads and run.checkpoint aside) or test
// labels, or a member finished in two of them, are ConfigErrors.
std::vector<evaluation::EnsembleRow> evaluate_runs(const std::vector<std::filesystem::path>& run_dirs,
                                                   const std::filesystem::path& out_dir);

}  // namespace bnn::pipeline
