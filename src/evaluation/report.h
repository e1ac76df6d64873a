// The Markdown report of an evaluation (report.md): the ensemble tables, the
// uncertainty of the full ensemble, per-class accuracy, the confusion matrix,
// the sampling diagnostics, R-hat across members and the figures. The
// numbers come from the evaluation (src/pipeline/evaluate.h); this file only
// renders them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/evaluation/diagnostics.h"
#include "src/evaluation/ensemble.h"
#include "src/evaluation/figures.h"
#include "src/evaluation/ood.h"
#include "src/evaluation/uncertainty.h"

namespace bnn::evaluation {

// Split R-hat and ESS need at least this many draws per chain (diagnostics.h).
inline constexpr size_t kMinDiagnosticDraws = 4;

// A member's training loss of each sampling epoch after `burn_in` epochs, in order.
std::vector<double> sampling_losses(const LossTrace& trace, int64_t burn_in);

struct ReportInputs {
  std::vector<std::string> run_dirs;
  // The experiment.
  std::string model, dataset, sampler;
  double step_size = 0;
  int64_t sampling_epochs = 0;
  std::vector<std::string> point_estimates;  // "adam", "swa" or "map"
  std::vector<std::string> methods;          // the point estimates and "bayes"
  // The members evaluated and their samples.
  std::vector<std::string> members;  // their directory names
  std::vector<LossTrace> traces;     // one per member, in order
  int64_t test_examples = 0;
  int64_t samples = 0;         // retained samples used, all members together
  bool recomputed = false;     // Bayesian ensemble recomputed from stored samples
  int64_t float16_samples = 0; // of those, stored as float16 (Note [Stored sample probabilities])
  int64_t burn_in = 0;         // epochs, as evaluated
  int64_t run_burn_in = 0;     // epochs, as the run used (sampler.burn_in)
  int64_t thin = 1;
  bool draws_are_samples = true;
  // The results.
  std::vector<EnsembleRow> rows;
  std::map<std::string, UncertaintySummary> summaries;  // by method
  std::vector<RhatAtEpoch> rhat_curve;                  // across members
  std::string rhat_not_computed;                        // why rhat_curve is empty (rhat_across_members)
  FigureOutcome figures;
  bool figures_requested = true;
  std::string reference_probs;  // --reference-probs, or empty
  // The data set's class names (preprocess.json), shown instead of indices; empty = indices.
  std::vector<std::string> class_names;
  // Note [Out-of-distribution sets]: per set, its name and examples; the detection rows.
  std::vector<std::pair<std::string, int64_t>> ood_sets;
  std::vector<OodRow> ood_rows;
  // Shown first, e.g. members whose chain diverged (src/pipeline/divergence.h).
  std::vector<std::string> warnings;
  // Each arithmetic the members ran under (status.json, Note [Member
  // checkpoints] in src/pipeline/member_checkpoint.h) with how many members
  // ran under it, and how many members changed arithmetic on a resume; empty
  // when no member recorded it (an older bnn).
  std::vector<std::pair<std::string, int64_t>> arithmetic;
  int64_t arithmetic_changed = 0;
};

std::string render_report(const ReportInputs& in);

// The report's "Sampling diagnostics" section: per member, split R-hat and
// the ESS of its sampling-phase training loss after `burn_in` epochs, an ESS
// at its lower bound on tau marked "(bound)" and explained below the table.
std::string diagnostics_section(const std::vector<LossTrace>& traces, int64_t burn_in);

// Note [R-hat across members]: split R-hat of the members' sampling losses
// per epoch, over epochs burn_in+1 .. e for each e (rhat_vs_epoch). Members
// start from different SWA points, so this measures whether the loss level
// mixes between modes, not the within-mode mixing that `bnn rhat` measures
// (chains from one x*). The curve, or where it cannot be had, why: fewer
// than 2 members, members of different sampling epochs, or fewer than
// kMinDiagnosticDraws epochs after the burn-in.
struct MembersRhat {
  std::vector<RhatAtEpoch> curve;
  std::string why_not;  // a sentence for the report, where `curve` is empty
};
MembersRhat rhat_across_members(const std::vector<LossTrace>& traces, int64_t burn_in);

}  // namespace bnn::evaluation
