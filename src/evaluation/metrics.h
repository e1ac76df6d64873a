// Scoring of predictive probabilities against labels: accuracy, NLL, class-wise
// adaptive calibration error (ACE), ranked probability score (RPS), top-label ECE,
// Brier score and predictive entropy, defined exactly as in docs/design.md section 5 so
// that our numbers can be compared with the reference code's published anchors.
//
// Note [Metric conventions]: every function takes `probs` (N x K, any floating
// dtype, any device) and `labels` (N, integer). Both are copied to the CPU in
// double precision and the metrics are computed with plain loops in a fixed order,
// so results are deterministic and independent of the device that produced the
// probabilities. The golden values in tests/data/metrics_golden.json come from an
// independent numpy implementation (scripts/make_metric_golden.py).
//
// Inputs are checked with TORCH_CHECK: probs must be 2-D with K >= 2 classes and
// finite entries in [0, 1] (a small tolerance above 1 absorbs float32 rounding),
// labels 1-D with the same N and values in [0, K). N must be positive.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>

#include <torch/torch.h>

namespace bnn::evaluation {

// Bin counts of the reference code (docs/design.md section 5).
inline constexpr int64_t kAceBins = 20;
inline constexpr int64_t kEceBins = 15;

struct Metrics {
  double accuracy = 0, nll = 0, ace = 0, rps = 0, ece = 0, brier = 0, entropy = 0;
};

// All metrics at once (one copy of the inputs to the CPU), with kAceBins and kEceBins.
Metrics compute_metrics(const torch::Tensor& probs, const torch::Tensor& labels);

// mean_i 1{argmax_k p_ik == y_i}; ties in the argmax go to the lowest class index.
double accuracy(const torch::Tensor& probs, const torch::Tensor& labels);

// mean_i -max(log p_{i,y_i}, -100): the clamp keeps one confident mistake
// (p = 0 at the true label) from making the mean infinite, as in the reference code.
double nll(const torch::Tensor& probs, const torch::Tensor& labels);

// Class-wise adaptive calibration error (Nixon et al. 2019). For each class k the
// examples are stable-sorted by p[:, k] ascending; rank r falls in bin
// floor(r / (N / B)); the sum over classes and non-empty bins of
// |mean_bin 1{y = k} - mean_bin p_k| is divided by B K.
double ace(const torch::Tensor& probs, const torch::Tensor& labels, int64_t bins = kAceBins);

// mean_i sum_k (P_ik - O_ik)^2 / (K - 1), with P and O the cumulative sums of p_i and
// one-hot(y_i) in class-index order.
double rps(const torch::Tensor& probs, const torch::Tensor& labels);

// Top-label expected calibration error: confidence max_k p_ik, equal-width bins
// (b/B, (b+1)/B] over [0, 1] (confidence exactly 0 joins the first bin),
// sum_b n_b / N |acc_b - conf_b|.
double ece(const torch::Tensor& probs, const torch::Tensor& labels, int64_t bins = kEceBins);

// mean_i sum_k (p_ik - onehot(y_i)_k)^2, not divided by K.
double brier(const torch::Tensor& probs, const torch::Tensor& labels);

// mean_i -sum_k p_ik log p_ik, with 0 log 0 = 0.
double predictive_entropy(const torch::Tensor& probs);

// Against reference predictive probabilities q (N x K, e.g. long-run HMC;
// Izmailov et al. 2021), checked as probs:
// top-1 agreement, mean_i 1{argmax_k p_ik == argmax_k q_ik} (ties to the lowest index in both);
double top1_agreement(const torch::Tensor& probs, const torch::Tensor& reference);
// total variation, mean_i (1/2) sum_k |p_ik - q_ik|.
double total_variation(const torch::Tensor& probs, const torch::Tensor& reference);

}  // namespace bnn::evaluation
