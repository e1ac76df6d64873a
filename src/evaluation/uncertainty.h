// What a user asks of an ensemble's predictions beyond the scores of
// metrics.h: how uncertain it is, how much of that uncertainty comes from
// disagreement between draws (epistemic), and where it errs (per-class
// accuracy, confusion matrix).
//
// Note [Uncertainty decomposition]: a predictive mixture of D draws p_d (N x K;
// ensemble members for Adam and SWA, every retained sample of every member for
// the Bayesian method, members weighted equally) has mean pbar = (1/D) sum_d p_d
// and, per example, with H(p) = -sum_k p_k log p_k (natural log, 0 log 0 = 0):
//   total (predictive) entropy  H(pbar)
//   expected (aleatoric) entropy (1/D) sum_d H(p_d)
//   mutual information (epistemic) H(pbar) - (1/D) sum_d H(p_d)  >= 0
// (Depeweg et al. 2018; Smith and Gal 2018). Summaries are means over examples.
// A single draw has mutual information 0.
//
// Inputs follow Note [Metric conventions] in metrics.h (copied to CPU double).
// Everything here is pure and thread-safe except MixtureAccumulator, which is
// a plain value type (not safe for concurrent add()).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace bnn::evaluation {

// H(p_i) for every row of an N x K probability table: N doubles.
torch::Tensor row_entropy(const torch::Tensor& probs);

// Running mean of draws and of their row entropies, in double on the CPU.
// Draws are added one at a time so that memory does not grow with their number.
class MixtureAccumulator {
 public:
  // `probs` N x K; every draw must have the shape of the first. `weight` > 0
  // (members of different sample counts are weighted equally by giving each of
  // a member's S samples weight 1/S).
  void add(const torch::Tensor& probs, double weight = 1.0);
  // Folds another accumulator in as if its draws had been added here, scaled by `weight`.
  void add(const MixtureAccumulator& other, double weight = 1.0);

  bool empty() const { return total_weight_ == 0; }
  torch::Tensor mean() const;              // pbar, N x K
  torch::Tensor expected_entropy() const;  // (1/D) sum_d H(p_d), N

 private:
  torch::Tensor prob_sum_, entropy_sum_;
  double total_weight_ = 0;
};

struct UncertaintySummary {
  int64_t draws = 0;  // D
  double predictive_entropy = 0, expected_entropy = 0, mutual_information = 0;
  double accuracy = 0;
  // Per true class k: accuracy on the examples of class k (NaN when there are none).
  std::vector<double> per_class_accuracy;
  // confusion[t][p]: examples of true class t predicted as p (argmax of pbar,
  // ties to the lowest index).
  std::vector<std::vector<int64_t>> confusion;
};

// Means over examples of the quantities of Note [Uncertainty decomposition],
// and the class tables of pbar against `labels`.
UncertaintySummary summarize_uncertainty(const MixtureAccumulator& mixture, int64_t draws,
                                         const torch::Tensor& labels);

// {"draws", "predictive_entropy", "expected_entropy", "mutual_information",
//  "accuracy", "per_class_accuracy": [..] (null for a class without examples),
//  "confusion_matrix": [[..], ..]}.
nlohmann::json to_json(const UncertaintySummary& summary);

}  // namespace bnn::evaluation
