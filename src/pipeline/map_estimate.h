// The maximum a posteriori point by full-batch L-BFGS (map.optimizer lbfgs;
// SMS-UBU paper section 3.4: "Using the L-BFGS algorithm, we found the global
// minimizer x*, and initiated sampling algorithms from this point").
//
// Minimises the potential per example,
//   F(x) = (1/N_D) [ sum_i CE_i(x) + (lambda/2) sum_j mask_j x_j^2 ],
// with N_D the examples of the oracle's fixed batches (the potential f of
// docs/design.md §2 without localization, divided by N_D so that the gradient
// tolerance does not scale with the data set). Each evaluation of F is one
// pass over every batch (full batch, as L-BFGS needs a deterministic
// objective); torch::optim::LBFGS runs with the strong Wolfe line search.
// For a strictly convex F (the logistic model with the prior on every
// parameter) the result is the global minimiser. A network with BatchNorm is
// evaluated with per-batch statistics, as in training.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "samplers/gradient_oracle.h"
#include "src/config/config.h"

namespace bnn::pipeline {

struct MapResult {
  double objective = 0;      // F at the returned point
  double mean_loss = 0;      // (1/N_D) sum_i CE_i at the returned point
  double max_gradient = 0;   // max_j |dF/dx_j| there
  int64_t evaluations = 0;   // full passes over the data (the final check included)
  bool converged = false;    // max_gradient <= options.tolerance
};

// Moves the oracle's parameters to the minimiser of F. `parameters` are the
// tensors L-BFGS updates: the model's parameters, which must be views into
// oracle.parameters() with gradients that are views into oracle.gradient()
// (models::FlatParameters). `num_examples` is N_D.
MapResult find_map(samplers::GradientOracle& oracle, const std::vector<torch::Tensor>& parameters,
                   int64_t num_examples, double prior_precision, const config::MapConfig& options);

}  // namespace bnn::pipeline
