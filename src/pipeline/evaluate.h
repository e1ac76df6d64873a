// `bnn evaluate`: the finished members of one experiment, from one or several
// run directories, scored as ensembles (src/evaluation/ensemble.h), with the
// uncertainty decomposition (src/evaluation/uncertainty.h), figures
// (src/evaluation/figures.h) and a Markdown report.
//
// Outputs in the output directory, each written atomically:
//   metrics.json, metrics.csv, metrics.txt   ensemble tables (sizes 1, 2, 4, .. and M);
//                      metrics.json also has each group's values and "members",
//                      the member folders in the order the groups take them
//   metrics_ood.csv    with evaluation.ood: OOD detection rows (src/evaluation/ood.h),
//                      also under "ood" in metrics.json and in metrics.txt
//   uncertainty.json   the selection used, and per method the decomposition of
//                      the full ensemble's entropy, per-class accuracy and the
//                      confusion matrix
//   figures/           PNG and SVG figures, their data and gnuplot script
//   report.html        report.md as one HTML page, figures embedded (src/evaluation/html.h)
//   report.md          all of the above as one document, with split R-hat and
//                      ESS of each member's sampling-phase training loss, and
//                      R-hat across members against epoch (figure
//                      rhat_vs_epoch; Note [R-hat across members] in src/evaluation/report.h)
//
// Note [Burn-in and thinning at evaluation]: a run keeps sample s (the global
// sampler step count, the XXXXXXXX of samples/step_XXXXXXXX.npy) when
// s > sampler.burn_in * N_m and s - sampler.burn_in * N_m is a multiple of the
// run's thinning t (sampler.thin steps, or N_m for thin 0). By default the
// Bayesian ensemble is bayes_probs.npy, the running mean the member kept in
// float32 over exactly those samples. With --burn-in B (epochs, as
// sampler.burn_in) or --thin K (a multiple of the run's thinning) it is
// recomputed from the stored samples: those with s > B * N_m are kept,
// and of them the K-th, 2K-th, ... So evaluation can only discard more samples
// than the run did (B >= sampler.burn_in, K >= 1), and the result is exactly
// the sample set a run with sampler.burn_in = B and sampler.thin = K t would
// have averaged whenever t divides N_m (always so for the default t = N_m), up
// to float32 rounding (samples stored as float16 round further: Note [Stored
// sample probabilities] in src/pipeline/sampling_phase.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "src/evaluation/ensemble.h"

namespace bnn::pipeline {

struct EvaluateOptions {
  std::optional<int64_t> burn_in;  // epochs; unset = the run's sampler.burn_in
  std::optional<int64_t> thin;     // keep every K-th stored sample; unset = all
  std::vector<int64_t> members;    // member indices; empty = every finished member
  bool figures = true;             // draw figures (needs gnuplot; see figures.h)
  // N x K predictive probabilities of a gold-standard posterior (e.g. long-run
  // HMC) over the run's test set: every row also gets its top-1 agreement and
  // total variation against them (src/evaluation/metrics.h). Empty = none.
  std::filesystem::path reference_probs;
  // Members of the run left unfinished are said at info level, not as a
  // warning: bnn run, whose own log says why (--members, failed members,
  // members other processes train).
  bool quiet_about_missing = false;
};

// Steps of the stored samples that evaluation keeps (Note [Burn-in and thinning
// at evaluation]): those > burn_in_steps, then the thin-th, 2 thin-th, ... of
// them, in increasing order. `stored` must be sorted.
std::vector<int64_t> select_sample_steps(const std::vector<int64_t>& stored, int64_t burn_in_steps, int64_t thin);

// Note [Stop signals] (src/runtime/stop_signal.h): a stop signal that came
// while evaluate_runs waited for another process's evaluation lock; nothing
// was written.
class EvaluationStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Merges the finished members of `run_dirs` (ordered by member index), selects
// members and samples as `options` say, and writes the outputs listed above to
// `out_dir`. Directories with different configurations (run.device and
// run.threads aside) or test labels, a member finished in two of them, a
// selected member finished in none, or a burn-in/thinning that keeps no sample
// of some member are ConfigErrors, and so are reference probabilities of
// another shape, outside [0, 1], or with a row not summing to 1 (within 1e-3). A failure to draw figures is logged as a
// warning and recorded in report.md; the metrics are written first either way.
std::vector<evaluation::EnsembleRow> evaluate_runs(const std::vector<std::filesystem::path>& run_dirs,
                                                   const std::filesystem::path& out_dir,
                                                   const EvaluateOptions& options = {});

// The terminal tables evaluate_runs wrote to `out_dir`: its metrics.txt (the
// ensemble table, then the OOD detection tables if any).
std::string metrics_text(const std::filesystem::path& out_dir);

}  // namespace bnn::pipeline
