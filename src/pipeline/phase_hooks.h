// What the phase loops (optimiser_phases.h, sampling_phase.h) ask of the
// member that runs them: checks, logging, checkpoints and output files stay
// the member's (src/pipeline/member.h), the loops own the schedule.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include <torch/torch.h>

#include "src/pipeline/member_checkpoint.h"

namespace bnn::pipeline {

using Clock = std::chrono::steady_clock;

class PhaseHooks {
 public:
  virtual ~PhaseHooks() = default;
  // Throws unless the epoch's mean loss and the parameters are finite (and,
  // in a data-parallel member, the same on every rank).
  virtual void check_finite(const std::string& phase, int64_t epoch, double loss) = 0;
  // The log line and trace.csv row of a finished epoch.
  virtual void log_epoch(const std::string& phase, int64_t epoch, int64_t epochs, double loss, double accuracy,
                         double rate, Clock::time_point start) = 0;
  // Note [Member checkpoints]; `adam` is nullptr while sampling.
  virtual void save_checkpoint(Position at, torch::optim::Adam* adam) = 0;
  // Note [BatchNorm]: recalibrate, then the test-set probabilities (N x K).
  virtual torch::Tensor predict() = 0;
  // Test accuracy of probabilities from predict().
  virtual double accuracy(const torch::Tensor& probs) const = 0;
  // A file of the member's directory (written by rank 0 only).
  virtual void write_npy(const std::filesystem::path& name, const torch::Tensor& t) const = 0;
  // Note [Stored samples]: the weights and buffers of the sample retained at `step`.
  virtual void store_sample(int64_t step) = 0;
  // Note [Out-of-distribution sets]: the probabilities of every OOD set under
  // the model as the last predict() left it, as <member>/ood/<set>/<name> in `dtype`.
  virtual void write_ood(const std::filesystem::path& name, torch::ScalarType dtype) = 0;
};

}  // namespace bnn::pipeline
