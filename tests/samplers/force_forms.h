// The three ways a sampler forms its force, and which samplers have fused
// steps, for the tests that compare the fused paths with the tensor
// operations (fused_step_test.cpp, cuda_fused_step_test.cpp).
#pragma once

#include <string>

#include "samplers/langevin_options.h"

namespace bnn::testing {

struct Estimator {
  const char* name;
  samplers::GradientEstimator estimator;
  samplers::AnchorGradients anchors;
};
inline const Estimator kEstimators[] = {
    {"plain", samplers::GradientEstimator::kPlain, samplers::AnchorGradients::kStored},
    {"stored anchors", samplers::GradientEstimator::kControlVariate, samplers::AnchorGradients::kStored},
    {"recomputed anchors", samplers::GradientEstimator::kControlVariate, samplers::AnchorGradients::kRecomputed}};

inline bool has_fused_step(const std::string& name) { return name != "obabo" && name != "nogin"; }

}  // namespace bnn::testing
