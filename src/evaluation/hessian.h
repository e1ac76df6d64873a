// The Hessian spectral norm of the potential (paper appendix D.2, Fig. 7):
// the largest |eigenvalue| of nabla^2 f(x), estimated by power iteration on
// Hessian-vector products, which autograd gives by double backward without
// ever forming the d x d Hessian:
//   H v = nabla_x ( nabla_x f(x) . v ).
// The paper uses it to show that the localized posterior is well conditioned
// inside the hypercube Omega (so the step size h can be large).
//
// Power iteration: v_0 ~ N(0, I) / ||.||, w_k = H v_k, v_{k+1} = w_k / ||w_k||.
// ||w_k|| -> |lambda_max| (the spectral norm of the symmetric H) at the rate
// |lambda_2 / lambda_1|^k; the Rayleigh quotient v_k . w_k tends to the
// dominant eigenvalue with its sign. Iteration stops when ||w_k|| changes by
// less than `tolerance` relative to itself, or after `max_iterations`.
// Randomness comes only from the generator passed in; results are
// deterministic on CPU for a fixed seed and thread count.
#pragma once

#include <cstdint>
#include <functional>

#include <torch/torch.h>

#include "models/classifier.h"

namespace bnn::evaluation {

// v (flat, d) -> H v (flat, d).
using HessianVectorProduct = std::function<torch::Tensor(const torch::Tensor&)>;

struct PowerIterationOptions {
  int64_t max_iterations = 100;
  double tolerance = 1e-4;  // relative change of ||H v|| between iterations
};

struct SpectralNormEstimate {
  double spectral_norm = 0;  // ||H v|| at the last iterate: |lambda_max|
  double rayleigh = 0;       // v . H v: lambda_max with its sign
  int64_t iterations = 0;
  bool converged = false;
};

// Power iteration on `hvp` in dimension `dim`, starting from a Gaussian vector
// drawn with `generator` in `options` (dtype and device of the vectors).
SpectralNormEstimate hessian_spectral_norm(const HessianVectorProduct& hvp, int64_t dim,
                                           const PowerIterationOptions& power, at::Generator generator,
                                           const torch::TensorOptions& options = torch::kDouble);

// Hessian-vector products of the log-posterior potential of docs/design.md section 2
// at the model's current parameters (named_parameters order, as in
// models::FlatParameters):
//   f(x) = sum_i CE_i(x) + (lambda / 2) ||x_w||^2 + (1 / (2 rho^2)) ||x - x*||^2
// (x_w the weights; every parameter with `prior_on_biases`, as prior.biases)
// over all of `images` / `labels`, evaluated `chunk` examples at a time (H v is
// linear in the sum). The quadratic terms contribute lambda mask v and
// `localization` v, localization = 1 / rho^2 (0 without localization, rho =
// inf). The model is used in whatever mode it is in (train mode: BatchNorm with
// batch statistics, as while sampling) and must outlive the returned function.
HessianVectorProduct log_posterior_hvp(models::Classifier& model, const torch::Tensor& images,
                                       const torch::Tensor& labels, double prior_precision,
                                       double localization = 0, int64_t chunk = 1000,
                                       bool prior_on_biases = false);

// The model inputs of examples [start, start + n).
using InputSlice = std::function<torch::Tensor(int64_t start, int64_t n)>;

// The same, with each chunk's inputs made by `inputs` as they are needed (say,
// uint8 pixels standardised a chunk at a time, rather than the whole data set
// in float32 at once); `labels` gives the number of examples.
HessianVectorProduct log_posterior_hvp(models::Classifier& model, InputSlice inputs, const torch::Tensor& labels,
                                       double prior_precision, double localization = 0, int64_t chunk = 1000,
                                       bool prior_on_biases = false);

}  // namespace bnn::evaluation
