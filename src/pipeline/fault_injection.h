// Note [Fault injection]: for the crash-and-resume tests only. When the
// environment variable BNN_KILL_AT_SAMPLER_STEP=N is set, the process kills
// itself with SIGKILL right after sampler step N (no clean-up of any kind,
// exactly like the OOM killer or a pre-empted node). Read once per member.
#pragma once

#include <cstdint>

namespace bnn::pipeline {

class FaultInjection {
 public:
  FaultInjection();
  // Kills the process if `steps_done` is the configured step.
  void after_sampler_step(int64_t steps_done) const;

 private:
  int64_t kill_at_step_;  // -1: never
};

}  // namespace bnn::pipeline
