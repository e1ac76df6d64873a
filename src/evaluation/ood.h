// Out-of-distribution detection: how well an ensemble's uncertainty tells
// inputs unlike the training data (an OOD set; Note [Out-of-distribution
// sets] in src/pipeline/ood.h) from the test set, for every method and
// ensemble size, and the tables and figure data that report it.
//
// Note [OOD detection metrics]: an uncertainty score u per example (higher =
// more likely OOD), for the N_in test examples and the N_out OOD examples.
// The OOD examples are the positives; thresholds are the distinct score
// values, and a threshold t flags the examples with u >= t.
//   AUROC  the area under the ROC curve (true against false positive rate,
//          both from 0 to 1, linear between thresholds) = P(u_out > u_in) +
//          1/2 P(u_out = u_in) over all pairs: ties count one half.
//   AUPR   average precision with OOD positive ("AUPR-out"): sum over
//          thresholds, from the highest, of (R_t - R_prev) P_t, with recall R_t
//          and precision P_t of the OOD examples flagged at t (no
//          interpolation; sklearn's average_precision_score). A score
//          carrying no information gives about N_out / (N_in + N_out).
//   FPR95  the fraction of OOD examples taken for in-distribution when 95 %
//          of the test examples are: the in-distribution examples are
//          accepted when u <= t, t the smallest score value that accepts at
//          least 95 % of them, and FPR95 is the fraction of OOD examples with
//          u <= t (Hendrycks and Gimpel 2017, Liang et al. 2018). Lower is better.
// Scores of a predictive mixture with mean pbar (Note [Uncertainty
// decomposition] in uncertainty.h):
//   entropy             H(pbar)
//   max_prob            1 - max_k pbar_k (scored so that higher is more uncertain)
//   mutual_information  H(pbar) - (1/D) sum_d H(p_d), only for mixtures of more
//                       than one draw (a single network has none)
// Everything here is pure; inputs are copied to CPU double.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "src/evaluation/ensemble.h"
#include "src/evaluation/uncertainty.h"

namespace bnn::evaluation {

struct DetectionMetrics {
  double auroc = 0, aupr = 0, fpr95 = 0;
};

// Note [OOD detection metrics] of 1-D scores; each set non-empty and finite.
DetectionMetrics detection_metrics(const torch::Tensor& in_scores, const torch::Tensor& out_scores);

// The ROC curve of Note [OOD detection metrics]: (false positive rate, true
// positive rate) from (0, 0) through every distinct threshold to (1, 1).
std::vector<std::pair<double, double>> roc_curve(const torch::Tensor& in_scores, const torch::Tensor& out_scores);

// The scores, in report order.
const std::vector<std::string>& ood_score_names();
// Per-example score `name` of a mixture (N doubles); `draws` is the number
// of draws it holds (mutual_information needs at least 2).
torch::Tensor ood_scores(const MixtureAccumulator& mixture, int64_t draws, const std::string& name);

struct OodRow {
  std::string set;     // the OOD set's name
  std::string method;  // "adam", "swa", "map", "bayes"
  int64_t size = 0;    // ensemble size
  int64_t groups = 0;
  std::string score;   // an ood_score_names() entry
  Summary auroc, aupr, fpr95;  // over groups, as ensemble_table's
};

// One member's predictions for detection: its mixture on the test set and on
// the OOD set, and the draws each holds (1 for a point estimate, the samples
// for the Bayesian method).
struct MemberMixtures {
  MixtureAccumulator test, ood;
  int64_t draws = 1;
};

// For the ensemble sizes of M = members.size() (ensemble_sizes), the groups of
// ensemble_table (floor(M / es) disjoint consecutive groups; members weigh
// equally within a group): every score's detection metrics of each group,
// summarised over groups. mutual_information rows appear only where every
// group holds more than one draw.
std::vector<OodRow> ood_table(const std::string& set, const std::string& method,
                              const std::vector<MemberMixtures>& members);

// {"set", "method", "size", "groups", "score", "auroc": {"mean", "std", "values"}, "aupr": {..}, "fpr95": {..}}
// per row (summary_json: "values" are the groups' own, in group order; "std"
// is over n - 1, null for one group).
nlohmann::json to_json(const std::vector<OodRow>& rows);
// set,method,size,groups,score,auroc_mean,auroc_std,aupr_mean,aupr_std,fpr95_mean,fpr95_std (17 digits; a
// std field is empty for one group, and the Markdown table's spread "-").
std::string ood_csv(const std::vector<OodRow>& rows);
// Per set, a terminal table: one line per size and method, AUROC / AUPR / FPR95 of every score.
std::string ood_text_table(const std::vector<OodRow>& rows);
// Per set, a Markdown table with the same content (rows of one set only: `set`).
std::string ood_markdown(const std::vector<OodRow>& rows, const std::string& set);

}  // namespace bnn::evaluation
