// A member's resumable state and its checkpoint file.
//
// Note [Member checkpoints]: at the end of every epoch of every phase the
// member writes member_NNN/checkpoint.pt atomically: the phase and epochs
// done, the parameters and BatchNorm buffers, the optimiser's batch-order
// generator, the trace, and per phase the Adam state (Adam, SWA), the SWA
// running sum and count (SWA), or x*, the sampler's checkpoint (Note
// [Sampler checkpoints]) and the running prediction sum (sampling). The
// predictions and stored sample weights written so far stay on disk (a
// resumed member rewrites those after the checkpoint, identically).
// Restoring rebuilds the sampler at x*, which recomputes the control
// variate's anchor gradients, then loads its state, so a resumed member
// continues bit-identically on the same device, thread count and
// --member-design. The checkpoint also keeps the member's arithmetic so far
// (MemberState::arithmetic): a resume under other arithmetic says so in the
// log, and status.json lists every arithmetic the member ran under, since
// its numbers then agree with an uninterrupted run to float rounding, not
// bit for bit. An entry names the device, threads and design, then in
// brackets the platform beneath them (Note [Arithmetic platform] in
// src/runtime/linkage.h): "cpu, 2 threads, own model [LibTorch 1.13.1,
// x86-64 AVX2, OpenBLAS Haswell]". A resume on another machine or LibTorch
// is thus a change of arithmetic too. The checkpoint is removed once the
// member is done.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/classifier.h"
#include "samplers/sampler.h"

namespace bnn::pipeline {

enum class Phase : int64_t { kAdam = 0, kSwa = 1, kSample = 2, kMap = 3 };

// "adam", "swa", "sampling", "map".
const char* phase_name(Phase p);

// Where a member stands: `epochs_done` epochs of `phase` are complete.
struct Position {
  Phase phase;
  int64_t epochs_done;
};

// What a member carries from epoch to epoch besides its model's parameters
// and buffers.
struct MemberState {
  std::string trace;        // trace.csv's rows
  at::Generator order_gen;  // the optimiser's batch order
  torch::Tensor swa_sum;    // SWA running sum (double) and count
  int64_t swa_count = 0;
  torch::Tensor anchor;     // x*
  std::unique_ptr<samplers::Sampler> sampler;
  torch::Tensor prob_sum;   // sum of retained samples' test probabilities (double)
  int64_t samples = 0;
  // What decides the member's rounding, oldest first, one entry per change
  // ("cpu, 2 threads, own model [LibTorch 1.13.1, x86-64 AVX2, OpenBLAS
  // Haswell]", "cuda:0, stacked in 8 slots [LibTorch 2.11.0, NVIDIA H100 80GB
  // HBM3 (sm_90), CUDA 13.0]"); empty when restored from a checkpoint of a
  // bnn before it.
  std::vector<std::string> arithmetic;
};

// Whether a member that ran under the arithmetic `recorded` (an entry of
// MemberState::arithmetic) and goes on under `now` keeps its rounding. An
// entry written before bnn recorded the platform has no "[...]": only its
// device, threads and design are compared, as nothing more is known (and
// the entry is kept as it is, not completed with today's platform). On the
// CPU the slots of a stacked group do not count: a member's bits in a
// stacked pass are the same in two slots or more (Note [Stacked members in
// a run]); on a GPU they do, as cuBLAS and cuDNN may choose their kernels by
// the group's size.
bool same_arithmetic(const std::string& recorded, const std::string& now);

// Whether `adam` is over one tensor: the flat layout of Note [Flat Adam]
// (src/pipeline/optimiser_phases.h), which a checkpoint marks.
bool is_flat_adam(const torch::optim::Adam& adam);

// Writes the checkpoint of a member of `seed` at `at` atomically. `adam` is
// the optimiser of the Adam and SWA phases (nullptr while sampling).
void save_member_checkpoint(const std::filesystem::path& path, uint64_t seed, Position at, const MemberState& state,
                            const torch::Tensor& parameters, models::Classifier& model, torch::optim::Adam* adam);

// Note [Checkpoint integrity]: the error for the checkpoint at `path` whose
// CRCs io::zip_file_damage found wrong (`damage`, its reason).
std::string damaged_checkpoint(const std::filesystem::path& path, const std::string& damage);

// Reads the checkpoint at `path` into `state`, `parameters`, `model`'s
// buffers and the Adam `make_adam(flat_layout)` returns (called before the
// sampling phase only, with the checkpoint's layout: Note [Flat Adam]), and
// returns where the member stands. A sampling-phase
// checkpoint rebuilds the sampler with `make_sampler` while the parameters
// are at x* (state.anchor), then loads its state. Throws naming the file
// when it is unreadable or belongs to another seed.
Position restore_member_checkpoint(const std::filesystem::path& path, torch::Device device, uint64_t seed,
                                   MemberState& state, torch::Tensor parameters, models::Classifier& model,
                                   const std::function<torch::optim::Adam&(bool flat_layout)>& make_adam,
                                   const std::function<std::unique_ptr<samplers::Sampler>()>& make_sampler);

}  // namespace bnn::pipeline
