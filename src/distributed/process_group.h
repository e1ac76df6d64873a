// A process group for one data-parallel chain (docs/distributed.md): the few
// collectives bnn needs, behind an interface of our own, so that LibTorch's
// c10d API (which moves between releases) is touched by one translation unit,
// process_group.cpp.
//
// Rendezvous follows torchrun's environment: MASTER_ADDR and MASTER_PORT name
// the TCP store that rank 0 hosts, RANK is this process's rank in
// [0, WORLD_SIZE), LOCAL_RANK (optional) its index on its host. The backend is
// Gloo for a CPU device and NCCL for a CUDA device (when this LibTorch has
// it). Every collective is blocking from the caller's point of view: the
// result is usable (on the caller's stream, for CUDA) when the call returns.
//
// Determinism: all_reduce_sum returns the same bits on every rank (Gloo and
// NCCL reduce each element once and broadcast the result), so ranks that
// start equal and apply the same update stay equal without broadcasts. The
// sum's order differs from a single process's, so a data-parallel chain
// equals the single-process chain to float rounding, not bit for bit.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace bnn::distributed {

// A failed collective or rendezvous (a peer died, a timeout, a port in use).
// Not a c10::Error, so that it ends the run instead of failing one member.
class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A rank other than 0 stopping because rank 0 failed where only it looks
// (the run directory); exit_code() is the one rank 0 exits with.
class StoppedWithRankZero : public std::runtime_error {
 public:
  StoppedWithRankZero(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

// The torchrun rendezvous variables.
struct Rendezvous {
  std::string master_addr;
  int master_port = 0;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // LOCAL_RANK, or RANK when unset
  // Note [torchrun's agent store]: TORCHELASTIC_USE_AGENT_STORE=True says
  // torchrun's agent already serves the store on MASTER_PORT, so every rank
  // (rank 0 too) connects to it as a client, under the key prefix of this
  // attempt, /worker/attempt_<TORCHELASTIC_RESTART_COUNT>, as PyTorch's own
  // env:// rendezvous does. Without it rank 0 starts the store, and under
  // torchrun's default static rendezvous it found the port taken.
  bool agent_store = false;
  std::string store_prefix;  // "" unless agent_store
};

// Reads MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK and
// TORCHELASTIC_USE_AGENT_STORE (with TORCHELASTIC_RESTART_COUNT) from
// `lookup` (the process environment by default). Throws std::invalid_argument
// naming the first missing or invalid variable.
Rendezvous rendezvous_from_environment(
    const std::function<std::optional<std::string>(const std::string&)>& lookup = {});

// Whether this build has c10d at all (CMake's BNN_HAVE_C10D), Gloo for CPU
// devices, NCCL for CUDA devices.
bool available();
bool gloo_available();
bool nccl_available();

class ProcessGroup {
 public:
  // Joins the group described by `rendezvous` (rank 0 hosts the store and
  // waits for the others, up to `timeout`, which also bounds each collective)
  // for tensors on `device`. Throws
  // std::runtime_error if this LibTorch has no c10d or no backend for the
  // device, CommunicationError if the rendezvous fails.
  ProcessGroup(const Rendezvous& rendezvous, torch::Device device,
               std::chrono::milliseconds timeout = std::chrono::minutes(30));
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const char* backend() const;

  // t <- sum over ranks of t, in place. `t` must be contiguous; one on
  // another device than the group's is copied there and back.
  void all_reduce_sum(torch::Tensor& t);
  // Whether `t` holds the same values on every rank (an elementwise max and
  // min reduction; one host synchronisation). Every rank gets the same answer.
  bool identical_on_all_ranks(const torch::Tensor& t);
  // Whether `value` is true on any rank (a max reduction; one host
  // synchronisation). Every rank gets the same answer.
  bool any_rank(bool value);
  // Rank 0's `value` on every rank (a sum to which the others add 0; one
  // host synchronisation). It returns once every rank has called it.
  int64_t from_rank_zero(int64_t value);

 private:
  enum class Op { kSum, kMax, kMin };
  void all_reduce(torch::Tensor& t, Op op);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0;
  int world_size_ = 1;
  torch::Device device_;
};

}  // namespace bnn::distributed
