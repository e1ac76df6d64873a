// The stochastic gradient G(x, b) of the localized potential (docs/design.md §2):
//
//   f(x) = sum_i CE_i(x) + (lambda/2) ||x_w||^2 + ||x - x*||^2 / (2 rho^2)
//   plain:           G = N_m g_b(x) + lambda m.x + (x - x*)/rho^2
//   control variate: G = S* + N_m (g_b(x) - g*_b) + lambda m.x + (x - x*)/rho^2
//
// where g_b(x) = sum_{i in b} grad CE_i(x) (the oracle's summed gradient),
// g*_b = g_b(x*), S* = sum_b g*_b, and m the prior mask. The result is divided
// by T (Note [Temperature]). Everything is a handful of whole-vector passes:
// the diagonal lambda m + 1/rho^2 and the constant x*/rho^2 - S* are folded
// once at construction.
#pragma once

#include <torch/torch.h>

#include "samplers/fused_kernels.h"
#include "samplers/gradient_oracle.h"
#include "samplers/langevin_options.h"

namespace bnn::samplers {

class StochasticGradient {
 public:
  // `anchor` is x*. For the control variate the oracle's parameters must equal
  // x* on entry: the anchor gradients are computed here (one pass over the
  // batches) and the parameters are left unchanged.
  StochasticGradient(GradientOracle& oracle, torch::Tensor anchor, const LangevinOptions& options);

  // G(x, b) at the oracle's current parameters, in a buffer owned by this
  // object (overwritten by the next call). `loss` receives the batch's summed
  // cross-entropy (0-dim, on device).
  const torch::Tensor& evaluate(int64_t b, torch::Tensor* loss = nullptr);

  // Like evaluate(), from the oracle's per-example gradients, and sets `rows`
  // to the N_b x d per-example terms of the data part of G before the factor
  // N_m / T: row i = grad CE_i(x) (plain) or grad CE_i(x) - grad CE_i(x*)
  // (control variate, one more per-example pass at x* every call). `rows` is
  // the oracle's scratch buffer; the caller may modify it until the next call.
  const torch::Tensor& evaluate_per_example(int64_t b, torch::Tensor& rows, torch::Tensor* loss = nullptr);

  // For the fused sampler passes (Note [Fused steps]): evaluates batch b like
  // evaluate() but leaves G to be formed coordinate by coordinate from the
  // returned terms, in evaluate()'s order and rounding. The pointers stay
  // valid until the next call. float32 on the CPU only.
  detail::ForceTerms evaluate_terms(int64_t b, torch::Tensor* loss = nullptr);

  // The exact potential f(x)/T at the oracle's current parameters, over every
  // batch (one forward pass per batch, no gradient): what a Metropolis-Hastings
  // correction needs. 0-dim double tensor on the parameters' device.
  // `data_loss`, where given, receives the data term alone: the summed loss
  // over every batch (0-dim double).
  torch::Tensor potential(torch::Tensor* data_loss = nullptr);

  // The buffer evaluate() writes. Samplers that reuse the end-of-step gradient
  // (BAOAB, OBABO) read it at the next step and restore it from checkpoints.
  torch::Tensor& force() { return force_; }
  const torch::Tensor& force() const { return force_; }

  // The control variate's S* summed again at x* over the oracle's batches as
  // they are now (GradientOracle::begin_cycle); the parameters are left as
  // they were. Nothing for the plain estimator.
  void resum_anchor();

  const torch::Tensor& anchor() const { return anchor_; }
  // Bytes held for anchor gradients (0 unless stored control variate).
  int64_t anchor_bytes() const;

 private:
  GradientOracle& oracle_;
  torch::Tensor anchor_;
  GradientEstimator estimator_;
  AnchorGradients anchor_mode_;
  double data_scale_;     // N_m / T
  double temperature_;
  double localization_;   // 1/rho^2 (0 when global)
  torch::Tensor diag_;    // (lambda m + 1/rho^2) / T
  torch::Tensor offset_;  // (x*/rho^2 - S*) / T  (S* only with the control variate)
  torch::Tensor anchor_grads_;  // N_m x d, stored control variate only
  const torch::Tensor& evaluate_impl(int64_t b, torch::Tensor* rows, torch::Tensor* loss);
  // S* = sum_b g_b at the oracle's parameters (x*), filling anchor_grads_ if allocated.
  torch::Tensor anchor_sum();
  void evaluate_at_anchor(int64_t b, bool rows);

  torch::Tensor saved_x_;       // recomputed control variate, or per-example control variate
  torch::Tensor anchor_rows_;   // per-example gradients at x* (control variate with rows only)
  torch::Tensor force_;
  torch::Tensor gradient_;      // the oracle's gradient, held for evaluate_terms
  torch::Tensor partial_;       // evaluate_terms' partial force (recomputed anchors)
};

}  // namespace bnn::samplers
