#include "src/pipeline/fault_injection.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <string>

namespace bnn::pipeline {

FaultInjection::FaultInjection() {
  const char* v = std::getenv("BNN_KILL_AT_SAMPLER_STEP");
  kill_at_step_ = v == nullptr ? -1 : std::atoll(v);
  if (const char* steps = std::getenv("BNN_SIGNAL_AT_SAMPLER_STEPS")) {
    std::istringstream in(steps);
    for (std::string step; std::getline(in, step, ',');) signal_steps_.push_back(std::atoll(step.c_str()));
  }
}

void FaultInjection::after_sampler_step(int64_t steps_done) const {
  if (steps_done == kill_at_step_) ::raise(SIGKILL);
  if (std::find(signal_steps_.begin(), signal_steps_.end(), steps_done) != signal_steps_.end()) ::raise(SIGTERM);
}

}  // namespace bnn::pipeline
