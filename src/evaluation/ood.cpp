#include "src/evaluation/ood.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "src/evaluation/ensemble.h"

namespace bnn::evaluation {
namespace {

struct ScoredExample {
  double u;
  bool out;
};

std::vector<double> checked_scores(const torch::Tensor& scores, const char* which) {
  TORCH_CHECK(scores.defined() && scores.dim() == 1 && scores.numel() > 0,
              "OOD detection needs a non-empty 1-D tensor of ", which, " scores");
  const torch::Tensor s = scores.detach().to(torch::kCPU, torch::kDouble).contiguous();
  std::vector<double> out(s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
  for (const double v : out) TORCH_CHECK(std::isfinite(v), "OOD detection: non-finite ", which, " score ", v);
  return out;
}

// Every example, highest score first; ties keep no particular order (they are grouped).
std::vector<ScoredExample> pooled(const std::vector<double>& in, const std::vector<double>& out) {
  std::vector<ScoredExample> all;
  all.reserve(in.size() + out.size());
  for (const double u : in) all.push_back({u, false});
  for (const double u : out) all.push_back({u, true});
  std::sort(all.begin(), all.end(), [](const ScoredExample& a, const ScoredExample& b) { return a.u > b.u; });
  return all;
}

// Calls visit(false positives, true positives) after each group of equal
// scores, from the highest threshold down.
template <typename Visit>
void for_each_threshold(const std::vector<ScoredExample>& all, Visit visit) {
  int64_t tp = 0, fp = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    for (; j < all.size() && all[j].u == all[i].u; ++j) (all[j].out ? tp : fp) += 1;
    visit(fp, tp);
    i = j;
  }
}

// Accepting the in-distribution examples with u <= t, t the smallest score
// that accepts 95 % of them: the fraction of OOD examples accepted with them.
double fpr_at_95(std::vector<double> in, std::vector<double> out) {
  std::sort(in.begin(), in.end());
  const auto n = static_cast<int64_t>(in.size());
  // The k-th smallest with k = ceil(0.95 n), counted exactly: 100 k >= 95 n.
  const int64_t k = (95 * n + 99) / 100;
  const double t = in[static_cast<size_t>(std::max<int64_t>(k, 1) - 1)];
  const auto accepted = std::count_if(out.begin(), out.end(), [t](double u) { return u <= t; });
  return static_cast<double>(accepted) / static_cast<double>(out.size());
}

// Rows of `set` grouped by (size, method) in order of appearance, scores in ood_score_names() order.
std::vector<std::vector<const OodRow*>> lines_of(const std::vector<OodRow>& rows, const std::string& set) {
  std::vector<std::vector<const OodRow*>> lines;
  std::map<std::pair<int64_t, std::string>, size_t> index;
  std::vector<const OodRow*> ordered;
  for (const OodRow& r : rows) {
    if (r.set == set) ordered.push_back(&r);
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const OodRow* a, const OodRow* b) { return a->size < b->size; });
  for (const OodRow* r : ordered) {
    const auto [it, inserted] = index.emplace(std::pair{r->size, r->method}, lines.size());
    if (inserted) lines.emplace_back();
    lines[it->second].push_back(r);
  }
  return lines;
}

std::vector<std::string> sets_of(const std::vector<OodRow>& rows) {
  std::vector<std::string> sets;
  for (const OodRow& r : rows) {
    if (std::find(sets.begin(), sets.end(), r.set) == sets.end()) sets.push_back(r.set);
  }
  return sets;
}

const OodRow* find_score(const std::vector<const OodRow*>& line, const std::string& score) {
  for (const OodRow* r : line) {
    if (r->score == score) return r;
  }
  return nullptr;
}

}  // namespace

DetectionMetrics detection_metrics(const torch::Tensor& in_scores, const torch::Tensor& out_scores) {
  const std::vector<double> in = checked_scores(in_scores, "in-distribution");
  const std::vector<double> out = checked_scores(out_scores, "OOD");
  const auto n_in = static_cast<double>(in.size()), n_out = static_cast<double>(out.size());
  DetectionMetrics m;
  double prev_fpr = 0, prev_tpr = 0;
  for_each_threshold(pooled(in, out), [&](int64_t fp, int64_t tp) {
    const double fpr = static_cast<double>(fp) / n_in, tpr = static_cast<double>(tp) / n_out;
    m.auroc += (fpr - prev_fpr) * (tpr + prev_tpr) / 2;
    m.aupr += (tpr - prev_tpr) * static_cast<double>(tp) / static_cast<double>(tp + fp);
    prev_fpr = fpr;
    prev_tpr = tpr;
  });
  m.fpr95 = fpr_at_95(in, out);
  return m;
}

std::vector<std::pair<double, double>> roc_curve(const torch::Tensor& in_scores, const torch::Tensor& out_scores) {
  const std::vector<double> in = checked_scores(in_scores, "in-distribution");
  const std::vector<double> out = checked_scores(out_scores, "OOD");
  std::vector<std::pair<double, double>> curve = {{0.0, 0.0}};
  for_each_threshold(pooled(in, out), [&](int64_t fp, int64_t tp) {
    curve.emplace_back(static_cast<double>(fp) / static_cast<double>(in.size()),
                       static_cast<double>(tp) / static_cast<double>(out.size()));
  });
  return curve;
}

const std::vector<std::string>& ood_score_names() {
  static const std::vector<std::string> names = {"entropy", "max_prob", "mutual_information"};
  return names;
}

torch::Tensor ood_scores(const MixtureAccumulator& mixture, int64_t draws, const std::string& name) {
  const torch::Tensor pbar = mixture.mean();
  if (name == "entropy") return row_entropy(pbar);
  if (name == "max_prob") return 1 - std::get<0>(pbar.max(/*dim=*/1));
  if (name == "mutual_information") {
    TORCH_CHECK(draws >= 2, "mutual information needs a mixture of at least two draws, got ", draws);
    return row_entropy(pbar) - mixture.expected_entropy();
  }
  TORCH_CHECK(false, "unknown OOD score '", name, "'");
}

std::vector<OodRow> ood_table(const std::string& set, const std::string& method,
                              const std::vector<MemberMixtures>& members) {
  TORCH_CHECK(!members.empty(), "OOD table of '", method, "' without members");
  const auto total = static_cast<int64_t>(members.size());
  std::vector<OodRow> rows;
  for (const int64_t size : ensemble_sizes(total)) {
    const int64_t groups = total / size;
    bool every_group_mixes = true;
    std::vector<std::pair<MixtureAccumulator, MixtureAccumulator>> mixtures;
    std::vector<int64_t> draws;
    for (int64_t g = 0; g < groups; ++g) {
      MixtureAccumulator test, ood;
      int64_t d = 0;
      for (int64_t m = g * size; m < (g + 1) * size; ++m) {
        test.add(members[m].test);  // members weigh equally, whatever their draws
        ood.add(members[m].ood);
        d += members[m].draws;
      }
      every_group_mixes = every_group_mixes && d >= 2;
      mixtures.emplace_back(std::move(test), std::move(ood));
      draws.push_back(d);
    }
    for (const std::string& score : ood_score_names()) {
      if (score == "mutual_information" && !every_group_mixes) continue;
      std::vector<double> auroc, aupr, fpr95;
      for (int64_t g = 0; g < groups; ++g) {
        const DetectionMetrics dm = detection_metrics(ood_scores(mixtures[g].first, draws[g], score),
                                                      ood_scores(mixtures[g].second, draws[g], score));
        auroc.push_back(dm.auroc);
        aupr.push_back(dm.aupr);
        fpr95.push_back(dm.fpr95);
      }
      rows.push_back({set, method, size, groups, score, summarize(auroc), summarize(aupr), summarize(fpr95)});
    }
  }
  return rows;
}

nlohmann::json to_json(const std::vector<OodRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const OodRow& r : rows) {
    list.push_back({{"set", r.set},
                    {"method", r.method},
                    {"size", r.size},
                    {"groups", r.groups},
                    {"score", r.score},
                    {"auroc", summary_json(r.auroc)},
                    {"aupr", summary_json(r.aupr)},
                    {"fpr95", summary_json(r.fpr95)}});
  }
  return list;
}

std::string ood_csv(const std::vector<OodRow>& rows) {
  std::string out = "set,method,size,groups,score,auroc_mean,auroc_std,aupr_mean,aupr_std,fpr95_mean,fpr95_std\n";
  for (const OodRow& r : rows) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{}\n", r.set, r.method, r.size, r.groups, r.score,
                   csv_fields(r.auroc), csv_fields(r.aupr), csv_fields(r.fpr95));
  }
  return out;
}

std::string ood_text_table(const std::vector<OodRow>& rows) {
  std::string out;
  for (const std::string& set : sets_of(rows)) {
    fmt::format_to(std::back_inserter(out), "OOD set {}: AUROC / AUPR / FPR95 (mean over groups)\n", set);
    size_t method_width = 0;
    for (const OodRow& r : rows) method_width = std::max(method_width, r.method.size());
    const auto lines = lines_of(rows, set);
    for (size_t l = 0; l < lines.size(); ++l) {
      const OodRow& first = *lines[l].front();
      if (l > 0 && lines[l - 1].front()->size != first.size) out += '\n';
      fmt::format_to(std::back_inserter(out), "size {:<3} {:<{}}", first.size, first.method, method_width);
      for (const std::string& score : ood_score_names()) {
        const OodRow* r = find_score(lines[l], score);
        const std::string label = score == "mutual_information" ? "mi" : score;
        if (r == nullptr) {
          fmt::format_to(std::back_inserter(out), "  {} -", label);
        } else {
          fmt::format_to(std::back_inserter(out), "  {} {:.4f}/{:.4f}/{:.4f}", label, r->auroc.mean, r->aupr.mean,
                         r->fpr95.mean);
        }
      }
      out += '\n';
    }
    out += '\n';
  }
  return out;
}

std::string ood_markdown(const std::vector<OodRow>& rows, const std::string& set) {
  std::string out = "| size | groups | method | score | AUROC | AUPR | FPR95 |\n|---:|---:|:---|:---|---:|---:|---:|\n";
  for (const auto& line : lines_of(rows, set)) {
    for (const OodRow* r : line) {
      fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} | {} | {} |\n", r->size, r->groups, r->method,
                     r->score, mean_and_spread(r->auroc), mean_and_spread(r->aupr),
                     mean_and_spread(r->fpr95));
    }
  }
  return out;
}

}  // namespace bnn::evaluation
