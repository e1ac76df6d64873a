// Note [Fault injection]: for the crash-and-resume tests only. When the
// environment variable BNN_KILL_AT_SAMPLER_STEP=N is set, the process kills
// itself with SIGKILL right after sampler step N (no clean-up of any kind,
// exactly like the OOM killer or a pre-empted node). With
// BNN_SIGNAL_AT_SAMPLER_STEPS=N[,M...] it sends itself SIGTERM right after
// each of those steps, as a scheduler would in the middle of an epoch (Note
// [Stop signals] in src/runtime/stop_signal.h). Read once per member, and
// once per chain of `bnn rhat` (whose steps count from each chain's start).
#pragma once

#include <cstdint>
#include <vector>

namespace bnn::pipeline {

class FaultInjection {
 public:
  FaultInjection();
  // Kills the process, or signals it, if `steps_done` is a configured step.
  void after_sampler_step(int64_t steps_done) const;

 private:
  int64_t kill_at_step_;               // -1: never
  std::vector<int64_t> signal_steps_;  // SIGTERM after each
};

}  // namespace bnn::pipeline
