#include "src/pipeline/fault_injection.h"

#include <csignal>
#include <cstdlib>

namespace bnn::pipeline {

FaultInjection::FaultInjection() {
  const char* v = std::getenv("BNN_KILL_AT_SAMPLER_STEP");
  kill_at_step_ = v == nullptr ? -1 : std::atoll(v);
}

void FaultInjection::after_sampler_step(int64_t steps_done) const {
  if (steps_done == kill_at_step_) ::raise(SIGKILL);
}

}  // namespace bnn::pipeline
