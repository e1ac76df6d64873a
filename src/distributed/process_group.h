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
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace bnn::distributed {

// The exit code of a failed communication (EX_UNAVAILABLE): another rank or
// the network, not this rank's input. The members' checkpoints are kept.
inline constexpr int kExitCommunication = 69;

// A failed collective or rendezvous (a peer died, a timeout, a port in use).
// Not a c10::Error, so that it ends the run instead of failing one member;
// bnn exits kExitCommunication.
class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Note [Rank 0's failures]: in a data-parallel run rank 0 alone checks and
// writes the run directory, a member's files and the evaluation. Were it to
// throw where it fails, the other ranks would go on to their next collective
// and fail there with a communication error of their own (exit 69 and a
// misleading message), or, with NCCL, wait for rank 0 until the group's
// timeout. So rank 0's failure is kept until the ranks next meet at an
// agreed point, where they stop together (stop_if_rank_zero_failed): rank 0
// with its own error, the others saying to read rank 0's log, every rank with
// rank 0's exit code (74 for the storage's failure, else 2). Rank 0's checks
// before training meet at once (on_rank_zero in src/pipeline/member.h), and
// so do its status.json and the evaluation at the end. A member's writes
// are kept until its next epoch or phase end or its end (Member::write_files),
// rank 0 writing nothing more meanwhile, so its last checkpoint stays the one
// a resume starts from. An error in the arithmetic (a CUDA out-of-memory,
// say) may hit one rank only, anywhere: it still ends the run with a
// communication error on the others.
//
// A rank other than 0 stopping because rank 0 failed where only it looks or
// writes (the run directory, a member's files, the evaluation: Note [Rank 0's
// failures]); exit_code() is the one rank 0 exits with.
class StoppedWithRankZero : public std::runtime_error {
 public:
  StoppedWithRankZero(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  // "rank 0 of this distributed run stopped WHEN, for the reason its log gives; rank RANK stops with it"
  StoppedWithRankZero(int rank, const std::string& when, int exit_code);
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
  // Note [Rank 0's failures]: every rank calls it at the same point. Where
  // rank 0 passes a failure (`error` set, `exit_code` its exit code), rank 0
  // rethrows it and every other rank throws StoppedWithRankZero naming `when`;
  // otherwise it returns. One all-reduce (from_rank_zero).
  void stop_if_rank_zero_failed(const std::exception_ptr& error, int exit_code, const std::string& when);

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
