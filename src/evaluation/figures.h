// Figures of an evaluation, PNG and SVG, drawn by gnuplot (Debian package
// gnuplot-nox, installed by scripts/install-deps.sh; its pngcairo and svg
// terminals need no display):
//   metrics_vs_size       accuracy, NLL, ACE and RPS against ensemble size for
//                         every method, mean +- std over groups (paper Figs. 4-6)
//   reliability_<method>  top-label and class-wise reliability diagrams of the
//                         method's full ensemble
//   loss_traces           training loss per member and epoch across the Adam,
//                         SWA and sampling phases, phase boundaries marked
//   ood_<set>             per method, histograms of the full ensemble's
//                         predictive entropy on the test and the OOD set, and
//                         the ROC curves of detecting the OOD set by it
//   rhat_vs_epoch         R-hat and split R-hat after burn-in against the last
//                         epoch used, one line per curve, the 1.1 and 1.01
//                         alarm levels drawn (also drawn alone by `bnn rhat`)
// Note [Figures]: the numbers go to figures/data/*.dat and the drawing
// instructions to figures/figures.gp (both written atomically, so a user can
// restyle and rerun `gnuplot figures.gp` in figures/); gnuplot then writes each
// image to a temporary name. gnuplot exits 0 even where its writes failed (a
// full disk leaves empty or cut files), so every image is checked whole (a
// PNG to its IEND chunk, an SVG to </svg>) before any is renamed over the
// one there; otherwise the earlier ones stay. Given a set of staged files
// (Note [Staged writes] in src/io/atomic_file.h), the images join it instead
// of being renamed, and replace the earlier ones only with the caller's
// tables and reports. The program is `gnuplot` on PATH, or $BNN_GNUPLOT. Without it nothing is drawn and
// draw_figures() says why: figures are an extra, never a reason to lose metrics.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "src/evaluation/diagnostics.h"
#include "src/evaluation/ensemble.h"
#include "src/evaluation/metrics.h"
#include "src/io/atomic_file.h"

namespace bnn::evaluation {

struct ReliabilityBin {
  double lower = 0, upper = 0;  // (lower, upper]; the first bin also holds 0
  int64_t count = 0;
  double confidence = 0;  // mean predicted probability in the bin (0 if empty)
  double frequency = 0;   // mean outcome in the bin (0 if empty)
};

// Top-label: one point per example, (max_k p_ik, 1{argmax_k p_ik = y_i}), in the
// equal-width bins of ece() (so sum_b count_b / N |frequency_b - confidence_b| is
// the ECE).
std::vector<ReliabilityBin> top_label_reliability(const torch::Tensor& probs, const torch::Tensor& labels,
                                                  int64_t bins = kEceBins);

// Class-wise: one point per example and class, (p_ik, 1{y_i = k}), pooled over
// classes, in the same equal-width bins.
std::vector<ReliabilityBin> classwise_reliability(const torch::Tensor& probs, const torch::Tensor& labels,
                                                  int64_t bins = kEceBins);

// One member's trace.csv: the training loss of each epoch, in order.
struct LossTrace {
  std::string member;  // e.g. "member_000"
  std::vector<std::string> phase;  // "adam", "swa", "sample" per epoch
  std::vector<double> loss;
};

// One line of rhat_vs_epoch: R-hat over chains after burn-in (rhat_by_epoch()).
// NaN values are left out of the plot.
struct RhatCurve {
  std::string label;  // e.g. "repeat 0"
  std::vector<RhatAtEpoch> points;
};

// ood_<set>: per method, the predictive entropy of the full ensemble on the
// test set and on the OOD set (Note [OOD detection metrics] in ood.h).
struct OodFigure {
  std::string set;
  std::vector<std::string> methods;
  std::vector<torch::Tensor> test_entropy, ood_entropy;  // one per method
};

struct FigureInputs {
  std::vector<EnsembleRow> rows;
  // Per method, in display order: the full ensemble's mean probabilities.
  std::vector<std::pair<std::string, torch::Tensor>> ensemble_probs;
  torch::Tensor labels;
  std::vector<LossTrace> traces;
  // rhat_vs_epoch is drawn when some curve has a split R-hat.
  std::vector<RhatCurve> rhat_curves;
  std::string rhat_title;
  std::vector<OodFigure> ood;
};

struct FigureOutcome {
  std::vector<std::string> figures;  // base names drawn, each as .png and .svg
  std::string error;                 // empty on success; else why nothing was drawn
};

// Writes the data and script of Note [Figures] under `dir` and runs gnuplot.
// Returns the figures drawn, or the reason none were (gnuplot missing or
// failing, or a file that could not be written); throws only on inputs that
// break its preconditions (TORCH_CHECK). With `staged`, the images drawn are
// its to rename (staged->commit()), and none is renamed here.
FigureOutcome draw_figures(const FigureInputs& inputs, const std::filesystem::path& dir,
                           io::StagedFiles* staged = nullptr);

// Whether some point of `curves` has a finite split R-hat: none has where
// every chain stood still (a within-chain variance of 0), or where too few
// draws were kept.
bool has_split_rhat(const std::vector<RhatCurve>& curves);

// rhat_vs_epoch alone, titled `title`, the same way (its own figures.gp),
// `staged` as for draw_figures. `curves` must hold a split R-hat somewhere
// (TORCH_CHECK).
FigureOutcome draw_rhat_figure(const std::vector<RhatCurve>& curves, const std::string& title,
                               const std::filesystem::path& dir, io::StagedFiles* staged = nullptr);

}  // namespace bnn::evaluation
