// Ensemble scoring (docs/design.md section 5): members' predictive probabilities are
// merged into ensembles of size 1, 2, 4, ... (and M) and each size is reported as the mean
// and spread of the metrics over disjoint groups of members, for Adam, SWA and the
// Bayesian sampler side by side. Also renders those rows as JSON, CSV and a
// terminal table. All functions are pure and thread-safe; results are
// deterministic (see Note [Metric conventions] in src/evaluation/metrics.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace bnn::evaluation {

// Mean and sample standard deviation (ddof = 1, over n - 1, as the paper's
// reference code reports it: torch's Tensor.std()) of one metric across groups;
// std is NaN (no spread to estimate) when there is a single group. `values`
// holds the groups' own values in group order, so that two tables over the
// same members (Adam and SMS-UBU of one run, or two runs from the same seeds)
// can be compared group by group, paired.
struct Summary {
  double mean = 0, std = 0;
  std::vector<double> values;
};

// The Summary of `values` (at least one), which it keeps.
Summary summarize(const std::vector<double>& values);

// {"mean": .., "std": .., "values": [..]}: a Summary as metrics.json holds it;
// "std" is null for a single group.
nlohmann::json summary_json(const Summary& s);

// "m ± s" with `decimals` decimals, "m ± -" for a single group; `separator`
// goes between (" ± " in Markdown, "±" in the terminal).
std::string mean_and_spread(const Summary& s, int decimals = 4, const char* separator = " ± ");

// The CSV fields "mean,std" with 17 significant digits (round trips); std
// is empty for a single group.
std::string csv_fields(const Summary& s);

struct EnsembleRow {
  std::string method;  // "adam", "swa", "bayes"
  int64_t size = 0;    // ensemble size es
  int64_t groups = 0;  // number of disjoint groups floor(M / es)
  Summary accuracy, nll, ace, rps, ece, brier, entropy;
  // Against reference predictive probabilities, when ensemble_table got them
  // (bnn evaluate --reference-probs): top1_agreement and total_variation.
  bool has_reference = false;
  Summary agreement, total_variation;
};

// The ensemble sizes of M >= 1 members: 1, 2, 4, ... (powers of two) up to M,
// and M itself where it is not one (the whole ensemble, one group).
std::vector<int64_t> ensemble_sizes(int64_t members);

// member_probs: M >= 1 tensors of the same shape N x K, one per member (for the
// Bayesian method already averaged over that member's retained samples); labels: N.
// For each es of ensemble_sizes(M), members are split into
// floor(M / es) disjoint consecutive groups [g es, (g + 1) es) -- members left over
// are not used at that size -- probabilities are averaged within each group, and
// the metrics of compute_metrics are summarised across groups. `method` names the
// rows; it must be non-empty and free of commas, quotes and newlines (it becomes a
// CSV field). With `reference` (N x K probabilities of a gold-standard
// posterior) the rows also summarise each group's agreement with it.
std::vector<EnsembleRow> ensemble_table(const std::string& method,
                                        const std::vector<torch::Tensor>& member_probs,
                                        const torch::Tensor& labels,
                                        const torch::Tensor& reference = torch::Tensor());

// {"ensembles": [{"method": .., "size": .., "groups": .., "accuracy": {"mean": m,
// "std": s, "values": [group 0's, group 1's, ...]}, "nll": {..}, "ace": {..},
// "rps": {..}, "ece": {..}, "brier": {..}, "entropy": {..}}, ...]} in the order of
// `rows`; rows with a reference add "agreement" and "total_variation". Group g
// of size es is members [g es, (g + 1) es) for every method.
nlohmann::json to_json(const std::vector<EnsembleRow>& rows);

// One header line (method,size,groups,accuracy_mean,accuracy_std,...,entropy_std)
// and one line per row, numbers with 17 significant digits so they round-trip
// (a std field is empty where the size has one group);
// agreement_mean,agreement_std,total_variation_mean,total_variation_std follow
// when the rows have a reference.
std::string to_csv(const std::vector<EnsembleRow>& rows);

// One method's margin over another's at one ensemble size, taken group by
// group (group g holds the same members for every method): the mean over
// groups of sign (ours_g - theirs_g), sign +1 where a higher value is better,
// and its standard error, the differences' standard deviation (ddof 1) over
// sqrt(n), and the paired t-test's two-sided p-value that the margin is 0
// (student_t.h, paired_p_value: the exact sign test where every group
// differs alike); neither for a single group. `same`: the two rows are
// equal group by group (nothing to test). Needs both Summaries' values, of
// one length.
struct PairedMargin {
  double margin = 0;
  std::optional<double> error;
  std::optional<double> p;
  bool same = false;
};
PairedMargin paired_margin(const Summary& ours, const Summary& theirs, bool higher_is_better);

// A GitHub-flavoured Markdown table of `method`'s paired margins over the
// better of `against` (by mean, metric by metric: higher accuracy; lower NLL,
// ACE, RPS, ECE and Brier score), one line per ensemble size where `method`
// and one of `against` have rows; each cell "+0.0010 ± 0.0003 (swa, p 0.011)",
// the method beaten or not and the p-value in parentheses, the number in bold
// where p is below alpha / (the number of margins tested: those with a
// p-value whose rows are not the same), and a line saying so below the table
// where any was tested. Empty when no size has both.
std::string paired_margins_markdown(const std::vector<EnsembleRow>& rows, const std::string& method,
                                    const std::vector<std::string>& against, double alpha = 0.01);

// A table for the terminal: rows grouped by ensemble size (ascending), methods in
// their order of appearance one under the other, metrics as mean±std with 4 decimals
// (mean±- for one group).
std::string to_table(const std::vector<EnsembleRow>& rows);

// A GitHub-flavoured Markdown table: rows grouped by ensemble size (ascending),
// methods in their order of appearance; columns size, groups, method and every metric as mean ± std with 4 decimals.
std::string to_markdown(const std::vector<EnsembleRow>& rows);

}  // namespace bnn::evaluation
