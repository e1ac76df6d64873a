// Note [Time limit]: `bnn run --time-limit 9m` ends a command before a wall
// clock limit it cannot exceed (a batch scheduler's, a lent machine's) with
// every member's work up to its last epoch kept. Work stops only at epoch
// ends, where a member has just written its checkpoint: before each epoch,
// and before a member starts, a worker asks the deadline whether an epoch
// begun now would end in time, taking the longest epoch any member of the
// command has run so far as the estimate (none yet: whether the limit has
// passed). With --whole-members a member starts only where a whole member
// would end in time (allows_a_member), for machines that keep nothing:
// there a member stopped part-way is lost, and while it ran it slowed the
// members that could finish. The estimate is the longest member that this
// command trained from its start to its end: that includes what sharing the
// device with the other members costs; an epoch does not say it as well (a
// GPU's first epoch carries cuDNN's and the allocator's warm-up, which 60
// epochs would count 60 times). Before any member has finished, the
// member's epochs times the longest epoch so far. A member stopped keeps its
// checkpoint and no status, exactly as after a crash at that epoch end, and
// `bnn run --resume` continues it with the same results, bit for bit on the
// CPU, as a run never stopped. The command then exits with kExitTimeLimit,
// leaving the evaluation to the command that finishes the last member.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace bnn::runtime {

// EX_TEMPFAIL (sysexits.h): not finished, run the same thing again.
inline constexpr int kExitTimeLimit = 75;

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  // `seconds` from now (`now` is the clock; tests give their own).
  explicit Deadline(double seconds, Now now = &Clock::now);

  // A finished epoch's wall time, by any member of the command.
  void epoch_took(double seconds);
  // Whether an epoch started now would end by the deadline.
  bool allows_an_epoch() const { return allows_epochs(1); }
  // Whether `epochs` epochs started now would end by the deadline, each as
  // long as the longest so far.
  bool allows_epochs(int64_t epochs) const;
  // The wall time of a member trained from its start to its end.
  void member_took(double seconds);
  // Whether a member of `epochs` epochs started now would end by the
  // deadline: as long as the longest member so far, or where none has
  // finished, allows_epochs(epochs).
  bool allows_a_member(int64_t epochs) const;
  double seconds() const { return seconds_; }
  // Seconds since the deadline was set.
  double elapsed() const;

 private:
  Now now_;
  double seconds_;
  Clock::time_point start_;
  std::atomic<double> longest_epoch_{0.0};
  std::atomic<double> longest_member_{0.0};
};

}  // namespace bnn::runtime
