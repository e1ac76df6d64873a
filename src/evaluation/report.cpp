#include "src/evaluation/report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bnn::evaluation {
namespace {

// Class c as the tables show it: its name where the data set has names
// (Markdown's pipe escaped), else its index.
std::string class_label(const std::vector<std::string>& names, size_t c) {
  if (c >= names.size()) return std::to_string(c);
  std::string out;
  for (const char ch : names[c]) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

std::string class_table(const std::vector<std::string>& methods,
                        const std::map<std::string, UncertaintySummary>& summaries,
                        const std::vector<std::string>& names) {
  std::string out = "| class |";
  std::string rule = names.empty() ? "|---:|" : "|:---|";
  for (const std::string& method : methods) {
    out += fmt::format(" {} |", method);
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  const size_t k = summaries.at("bayes").per_class_accuracy.size();
  for (size_t c = 0; c < k; ++c) {
    out += fmt::format("| {} |", class_label(names, c));
    for (const std::string& method : methods) {
      const double a = summaries.at(method).per_class_accuracy[c];
      out += std::isnan(a) ? " – |" : fmt::format(" {:.4f} |", a);
    }
    out += '\n';
  }
  return out;
}

std::string confusion_table(const UncertaintySummary& s, const std::vector<std::string>& names) {
  const size_t k = s.confusion.size();
  std::string out = "| true \\ predicted |";
  std::string rule = names.empty() ? "|---:|" : "|:---|";
  for (size_t c = 0; c < k; ++c) {
    out += fmt::format(" {} |", class_label(names, c));
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (size_t t = 0; t < k; ++t) {
    out += fmt::format("| **{}** |", class_label(names, t));
    for (size_t p = 0; p < k; ++p) out += fmt::format(" {} |", s.confusion[t][p]);
    out += '\n';
  }
  return out;
}

std::string number_or_dash(double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : "–"; }

}  // namespace

MembersRhat rhat_across_members(const std::vector<LossTrace>& traces, int64_t burn_in) {
  if (traces.size() < 2) {
    return {{}, fmt::format("Not computed: R-hat across members needs at least 2 members ({} here).", traces.size())};
  }
  std::vector<torch::Tensor> rows;
  std::set<size_t> epochs;
  for (const LossTrace& t : traces) {
    const std::vector<double> losses = sampling_losses(t, /*burn_in=*/0);
    epochs.insert(losses.size());
    rows.push_back(torch::tensor(losses, torch::kDouble));
  }
  if (epochs.size() > 1) {
    return {{},
            fmt::format("Not computed: R-hat across members needs the same sampling epochs in every member (here "
                        "from {} to {}).",
                        *epochs.begin(), *epochs.rbegin())};
  }
  const auto have = static_cast<int64_t>(*epochs.begin());
  if (have < burn_in + static_cast<int64_t>(kMinDiagnosticDraws)) {
    return {{},
            fmt::format("Not computed: R-hat across members needs at least {} sampling epochs after the burn-in of "
                        "{} epoch(s) ({} here).",
                        kMinDiagnosticDraws, burn_in, std::max<int64_t>(have - burn_in, 0))};
  }
  return {rhat_by_epoch(torch::stack(rows), burn_in), ""};
}

namespace {

std::string rhat_section(const std::vector<RhatAtEpoch>& curve, const std::string& why_not, size_t members,
                         int64_t burn_in) {
  std::string out = "\n## R-hat against epoch\n\n";
  if (curve.empty()) return out + why_not + "\n";
  fmt::format_to(std::back_inserter(out),
                 "R-hat and split R-hat across the {} members of the per-epoch sampling-phase training loss, using "
                 "the epochs from the end of burn-in ({} epoch(s)) to each epoch (figure rhat_vs_epoch). The members "
                 "start from different SWA points x*, so this measures between-mode mixing of the training loss "
                 "(do the modes reach the same loss level?), unlike `bnn rhat`, whose chains all start near one x*."
                 "\n\n| epoch | draws | R-hat | split R-hat |\n|---:|---:|---:|---:|\n",
                 members, burn_in);
  // At most about ten rows, evenly spaced, the last epoch always among them.
  const size_t stride = (curve.size() + 9) / 10;
  for (size_t i = 0; i < curve.size(); ++i) {
    if ((curve.size() - 1 - i) % stride != 0) continue;
    const auto& p = curve[i];
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} |\n", p.epoch, p.draws, number_or_dash(p.rhat),
                   number_or_dash(p.split_rhat));
  }
  return out;
}

}  // namespace

std::string diagnostics_section(const std::vector<LossTrace>& traces, int64_t burn_in) {
  std::string out = fmt::format(
      "\n## Sampling diagnostics\n\n"
      "Per member, the training loss of each sampling epoch after the burn-in of {} epoch(s), taken as one "
      "chain: split R-hat (near 1 when its two halves agree; above 1.1 the chain still drifts) and the effective "
      "sample size of its mean (src/evaluation/diagnostics.h; at least {} epochs needed). Members start from "
      "different SWA points, so these per-member figures measure mixing within a mode; the R-hat across members "
      "(next section) asks whether the modes reach the same loss level.\n\n"
      "| member | epochs | split R-hat | ESS |\n|:---|---:|---:|---:|\n",
      burn_in, kMinDiagnosticDraws);
  bool bounded = false;
  for (const LossTrace& trace : traces) {
    const std::vector<double> losses = sampling_losses(trace, burn_in);
    std::string rhat = "–", ess = "–";
    if (losses.size() >= kMinDiagnosticDraws) {
      const torch::Tensor chain =
          torch::tensor(losses, torch::kDouble).reshape({1, static_cast<int64_t>(losses.size())});
      try {
        rhat = fmt::format("{:.4f}", split_rhat(chain));
        const double value = effective_sample_size(chain);
        const double draws = static_cast<double>(losses.size());
        // At the lower bound on tau (diagnostics.h): no autocorrelation left to estimate.
        const bool at_bound = std::abs(value - draws * std::log10(draws)) <= 1e-9 * value;
        bounded = bounded || at_bound;
        ess = fmt::format("{:.1f}{}", value, at_bound ? " (bound)" : "");
      } catch (const c10::Error&) {
        rhat = ess = "constant loss";
      }
    }
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} |\n", trace.member, losses.size(), rhat, ess);
  }
  if (bounded) {
    out += "\n(bound): the chain shows no positive autocorrelation to estimate, and the ESS is its bound N log10(N) "
           "for N epochs (Stan's guard against antithetic chains). Below 10 epochs that bound is less than N: read "
           "such a value as a chain too short to measure, not as strong autocorrelation.\n";
  }
  return out;
}

std::vector<double> sampling_losses(const LossTrace& trace, int64_t burn_in) {
  std::vector<double> losses;
  int64_t epoch = 0;
  for (size_t e = 0; e < trace.phase.size(); ++e) {
    if (trace.phase[e] == "sample" && ++epoch > burn_in) losses.push_back(trace.loss[e]);
  }
  return losses;
}

std::string render_report(const ReportInputs& in) {
  std::string out = "# bnn evaluation report\n\n";
  std::string dirs;
  for (const auto& d : in.run_dirs) dirs += (dirs.empty() ? "" : ", ") + fmt::format("`{}`", d);
  fmt::format_to(std::back_inserter(out),
                 "- Run directories: {}\n- Experiment: model `{}` on `{}`, sampler `{}` (h = {}), {} sampling "
                 "epochs\n- Members: {} ({})\n- Test examples: {}\n",
                 dirs, in.model, in.dataset, in.sampler, in.step_size, in.sampling_epochs, in.traces.size(),
                 fmt::join(in.members, ", "), in.test_examples);
  if (in.recomputed) {
    fmt::format_to(std::back_inserter(out),
                   "- Bayesian ensemble: recomputed from the stored samples after a burn-in of {} "
                   "epoch(s), every {} stored sample(s): {} samples in all{}\n",
                   in.burn_in, in.thin, in.samples,
                   in.float16_samples == 0
                       ? std::string()
                       : fmt::format("; {} of them stored as float16, which reads a probability below 3e-8 as 0 and "
                                     "so can raise the NLL (evaluation.sample_probs_dtype)",
                                     in.float16_samples));
  } else {
    fmt::format_to(std::back_inserter(out),
                   "- Bayesian ensemble: each member's bayes_probs.npy (samples after the run's burn-in of {} "
                   "epoch(s); {})\n",
                   in.run_burn_in,
                   in.samples > 0 ? fmt::format("{} stored samples in all", in.samples)
                                  : std::string("their probabilities not stored (evaluation.save_sample_probs "
                                                "false), so the uncertainty below is over members"));
  }
  if (!in.arithmetic.empty()) {
    std::vector<std::string> parts;
    for (const auto& [arithmetic, count] : in.arithmetic) {
      parts.push_back(fmt::format("{} ({} member{})", arithmetic, count, count == 1 ? "" : "s"));
    }
    fmt::format_to(std::back_inserter(out), "- Arithmetic: {}", fmt::join(parts, "; "));
    if (in.arithmetic_changed > 0) {
      fmt::format_to(std::back_inserter(out),
                     "; {} member{} changed arithmetic on a resume, and agree{} with an uninterrupted run to float "
                     "rounding only",
                     in.arithmetic_changed, in.arithmetic_changed == 1 ? "" : "s",
                     in.arithmetic_changed == 1 ? "s" : "");
    }
    out += "\n";
  }
  if (!in.warnings.empty()) {
    out += "\n## Warnings\n\n";
    for (const auto& w : in.warnings) out += fmt::format("- **{}**\n", w);
  }
  out += "\n## Ensemble metrics\n\nMean ± standard deviation over disjoint groups of members "
         "(docs/design.md §5; the same numbers as metrics.csv).\n\n";
  out += to_markdown(in.rows);
  if (!in.reference_probs.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "\nagreement and total_variation compare each ensemble with the reference predictive "
                   "probabilities `{}`: the fraction of test examples whose most probable class is the "
                   "reference's, and the mean over test examples of ½ Σ_k |p_k − q_k|.\n",
                   in.reference_probs);
  }
  const std::string margins = paired_margins_markdown(in.rows, "bayes", in.point_estimates);
  if (!margins.empty()) {
    out += "\n## The Bayesian ensemble against the point estimates, paired\n\n"
           "At each ensemble size, the Bayesian ensemble's margin over the better point estimate of that size "
           "(named in parentheses), metric by metric; positive: the Bayesian ensemble is better (higher accuracy; "
           "lower NLL, ACE, RPS, ECE and Brier score). Group g holds the same members for every method, so the "
           "margin is taken group by group, and ± is its standard error over the groups (the differences' "
           "standard deviation over √n): what the members share cancels. p is the paired t-test's two-sided "
           "p-value (n − 1 degrees of freedom; the exact sign test where every group differs alike), so that a "
           "margin of few groups, whose spread is itself a guess, is not over-read. The comparator is chosen "
           "by its mean, so a margin is measured against the harder one: a gain is if anything understated, "
           "a loss somewhat overstated. A size with one group has neither.\n\n" +
           margins;
  }

  fmt::format_to(std::back_inserter(out),
                 "\n## Uncertainty of the full ensemble ({} member{})\n\n"
                 "Means over test examples of the predictive entropy H(p̄), the expected entropy of the draws "
                 "and their difference, the mutual information (epistemic part). Draws are members for the point "
                 "estimates ({}), and {} for the Bayesian ensemble (uncertainty.json).\n\n"
                 "| method | draws | accuracy | predictive entropy | expected entropy | mutual information |\n"
                 "|:---|---:|---:|---:|---:|---:|\n",
                 in.traces.size(), in.traces.size() == 1 ? "" : "s", fmt::join(in.point_estimates, ", "),
                 in.draws_are_samples ? "every retained sample of every member" : "members");
  for (const std::string& method : in.methods) {
    const auto& s = in.summaries.at(method);
    fmt::format_to(std::back_inserter(out), "| {} | {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |\n", method, s.draws,
                   s.accuracy, s.predictive_entropy, s.expected_entropy, s.mutual_information);
  }
  out += "\n## Per-class accuracy of the full ensemble\n\n" + class_table(in.methods, in.summaries, in.class_names);
  out += "\n## Confusion matrix of the full Bayesian ensemble\n\nRows: true class; columns: predicted class.\n\n" +
         confusion_table(in.summaries.at("bayes"), in.class_names);

  if (!in.ood_sets.empty()) {
    out += "\n## Out-of-distribution detection\n\n"
           "How well each ensemble's uncertainty tells an OOD set from the test set, scored by predictive entropy, "
           "1 − maximum probability and mutual information (src/evaluation/ood.h, Note [OOD detection metrics]): "
           "AUROC and AUPR with the OOD examples as positives (higher is better; AUPR of an uninformative score is "
           "the OOD fraction), and FPR95, the fraction of OOD examples taken for in-distribution when 95 % of the "
           "test examples are (lower is better). Mean ± standard deviation over disjoint groups of members; the "
           "Bayesian ensemble's scores come from the stored samples. Mutual information needs more than one "
           "draw, so single point estimates have none.\n";
    for (const auto& [set, examples] : in.ood_sets) {
      fmt::format_to(std::back_inserter(out), "\n### {} ({} examples against {} test examples)\n\n", set, examples,
                     in.test_examples);
      out += ood_markdown(in.ood_rows, set);
    }
  }
  out += diagnostics_section(in.traces, in.burn_in);
  out += rhat_section(in.rhat_curve, in.rhat_not_computed, in.traces.size(), in.burn_in);

  out += "\n## Figures\n\n";
  if (!in.figures_requested) return out + "Not drawn (--no-figures).\n";
  if (!in.figures.error.empty()) return out + fmt::format("Not drawn: {}.\n", in.figures.error);
  for (const auto& name : in.figures.figures) {
    fmt::format_to(std::back_inserter(out), "![{0}](figures/{0}.png)\n\n[{0}.svg](figures/{0}.svg)\n\n", name);
  }
  return out;
}

}  // namespace bnn::evaluation
