#include "src/evaluation/ensemble.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "src/evaluation/metrics.h"
#include "src/evaluation/student_t.h"

namespace bnn::evaluation {
namespace {

// Which way a metric improves; entropy describes and has no better side.
enum class Better { kHigher, kLower, kNeither };

// One entry per reported metric, in output order, so that the JSON keys, the CSV
// columns and the table stay in step with Metrics and EnsembleRow.
struct MetricField {
  const char* name;        // JSON key and CSV column prefix
  const char* short_name;  // table label
  double Metrics::*value;
  Summary EnsembleRow::*summary;
  Better better;  // paired_margins_markdown's columns: those with a better side
};

// The columns against a reference posterior, where rows have one.
struct ReferenceField {
  const char* name;
  const char* short_name;
  Summary EnsembleRow::*summary;
};

constexpr ReferenceField kReferenceFields[] = {
    {"agreement", "agree", &EnsembleRow::agreement},
    {"total_variation", "tv", &EnsembleRow::total_variation},
};

bool any_reference(const std::vector<EnsembleRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const EnsembleRow& r) { return r.has_reference; });
}

constexpr MetricField kFields[] = {
    {"accuracy", "acc", &Metrics::accuracy, &EnsembleRow::accuracy, Better::kHigher},
    {"nll", "nll", &Metrics::nll, &EnsembleRow::nll, Better::kLower},
    {"ace", "ace", &Metrics::ace, &EnsembleRow::ace, Better::kLower},
    {"rps", "rps", &Metrics::rps, &EnsembleRow::rps, Better::kLower},
    {"ece", "ece", &Metrics::ece, &EnsembleRow::ece, Better::kLower},
    {"brier", "brier", &Metrics::brier, &EnsembleRow::brier, Better::kLower},
    {"entropy", "ent", &Metrics::entropy, &EnsembleRow::entropy, Better::kNeither},
};

void check_inputs(const std::string& method, const std::vector<torch::Tensor>& member_probs) {
  TORCH_CHECK(!method.empty(), "ensemble method name must not be empty");
  TORCH_CHECK(method.find_first_of(",\"\n\r") == std::string::npos,
              "ensemble method name must not contain commas, quotes or newlines, got '",
              method, "'");
  TORCH_CHECK(!member_probs.empty(), "ensemble '", method, "' has no members");
  for (size_t m = 0; m < member_probs.size(); ++m) {
    TORCH_CHECK(member_probs[m].defined(), "ensemble '", method, "': member ", m,
                " has undefined probabilities");
    TORCH_CHECK(member_probs[m].sizes() == member_probs[0].sizes(), "ensemble '", method,
                "': member ", m, " has probabilities of shape ", member_probs[m].sizes(),
                " but member 0 has shape ", member_probs[0].sizes());
  }
}

// Mean of members [first, first + count) in double on the CPU, summed in member order.
torch::Tensor group_mean(const std::vector<torch::Tensor>& members, int64_t first,
                         int64_t count) {
  torch::Tensor sum = members[first].clone();
  for (int64_t m = first + 1; m < first + count; ++m) sum += members[m];
  return sum / static_cast<double>(count);
}

EnsembleRow score_size(const std::string& method, const std::vector<torch::Tensor>& members,
                       const torch::Tensor& labels, int64_t size, const torch::Tensor& reference) {
  EnsembleRow row;
  row.method = method;
  row.size = size;
  row.groups = static_cast<int64_t>(members.size()) / size;
  std::vector<Metrics> per_group;
  per_group.reserve(row.groups);
  std::vector<double> agreement, total_variation;
  for (int64_t g = 0; g < row.groups; ++g) {
    const torch::Tensor mean = group_mean(members, g * size, size);
    per_group.push_back(compute_metrics(mean, labels));
    if (reference.defined()) {
      agreement.push_back(top1_agreement(mean, reference));
      total_variation.push_back(evaluation::total_variation(mean, reference));
    }
  }
  if (reference.defined()) {
    row.has_reference = true;
    row.agreement = summarize(agreement);
    row.total_variation = summarize(total_variation);
  }
  for (const MetricField& field : kFields) {
    std::vector<double> values;
    values.reserve(per_group.size());
    for (const Metrics& m : per_group) values.push_back(m.*field.value);
    row.*field.summary = summarize(values);
  }
  return row;
}

}  // namespace

Summary summarize(const std::vector<double>& values) {
  const auto n = static_cast<double>(values.size());
  Summary s;
  for (const double v : values) s.mean += v;
  s.mean /= n;
  double squares = 0.0;
  for (const double v : values) squares += (v - s.mean) * (v - s.mean);
  s.std = values.size() > 1 ? std::sqrt(squares / (n - 1)) : std::numeric_limits<double>::quiet_NaN();
  s.values = values;
  return s;
}

std::string mean_and_spread(const Summary& s, int decimals, const char* separator) {
  return std::isnan(s.std) ? fmt::format("{:.{}f}{}-", s.mean, decimals, separator)
                           : fmt::format("{:.{}f}{}{:.{}f}", s.mean, decimals, separator, s.std, decimals);
}

std::string csv_fields(const Summary& s) {
  return std::isnan(s.std) ? fmt::format("{:.17g},", s.mean) : fmt::format("{:.17g},{:.17g}", s.mean, s.std);
}

std::vector<EnsembleRow> ensemble_table(const std::string& method,
                                        const std::vector<torch::Tensor>& member_probs,
                                        const torch::Tensor& labels, const torch::Tensor& reference) {
  check_inputs(method, member_probs);
  if (reference.defined()) {
    TORCH_CHECK(reference.sizes() == member_probs[0].sizes(), "ensemble '", method,
                "': reference probabilities of shape ", reference.sizes(), " but members' of shape ",
                member_probs[0].sizes());
  }
  // One CPU double copy per member, shared by every group that uses it.
  std::vector<torch::Tensor> members;
  members.reserve(member_probs.size());
  for (const torch::Tensor& p : member_probs) {
    TORCH_CHECK(p.is_floating_point(), "ensemble '", method,
                "': member probabilities must have a floating dtype, got ", p.scalar_type());
    members.push_back(p.detach().to(torch::kCPU, torch::kDouble).contiguous());
  }
  const auto total = static_cast<int64_t>(members.size());
  std::vector<EnsembleRow> rows;
  for (const int64_t size : ensemble_sizes(total)) {
    rows.push_back(score_size(method, members, labels, size, reference));
  }
  return rows;
}

std::vector<int64_t> ensemble_sizes(int64_t members) {
  TORCH_CHECK(members >= 1, "ensemble sizes of ", members, " members");
  std::vector<int64_t> sizes;
  for (int64_t size = 1; size <= members; size *= 2) sizes.push_back(size);
  if (sizes.back() != members) sizes.push_back(members);
  return sizes;
}

nlohmann::json summary_json(const Summary& s) {
  return {{"mean", s.mean},
          {"std", std::isnan(s.std) ? nlohmann::json(nullptr) : nlohmann::json(s.std)},
          {"values", s.values}};
}

nlohmann::json to_json(const std::vector<EnsembleRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const EnsembleRow& row : rows) {
    nlohmann::json entry = {{"method", row.method}, {"size", row.size}, {"groups", row.groups}};
    for (const MetricField& field : kFields) {
      const Summary& s = row.*field.summary;
      entry[field.name] = summary_json(s);
    }
    if (row.has_reference) {
      for (const ReferenceField& field : kReferenceFields) {
        const Summary& s = row.*field.summary;
        entry[field.name] = summary_json(s);
      }
    }
    list.push_back(std::move(entry));
  }
  return {{"ensembles", std::move(list)}};
}

std::string to_csv(const std::vector<EnsembleRow>& rows) {
  std::string out = "method,size,groups";
  for (const MetricField& field : kFields) {
    fmt::format_to(std::back_inserter(out), ",{0}_mean,{0}_std", field.name);
  }
  const bool reference = any_reference(rows);
  if (reference) {
    for (const ReferenceField& field : kReferenceFields) {
      fmt::format_to(std::back_inserter(out), ",{0}_mean,{0}_std", field.name);
    }
  }
  out += '\n';
  for (const EnsembleRow& row : rows) {
    fmt::format_to(std::back_inserter(out), "{},{},{}", row.method, row.size, row.groups);
    for (const MetricField& field : kFields) {
      out += "," + csv_fields(row.*field.summary);
    }
    if (reference) {
      for (const ReferenceField& field : kReferenceFields) {
        if (!row.has_reference) {
          out += ",,";
          continue;
        }
        out += "," + csv_fields(row.*field.summary);
      }
    }
    out += '\n';
  }
  return out;
}

std::string to_table(const std::vector<EnsembleRow>& rows) {
  std::vector<const EnsembleRow*> ordered;
  for (const EnsembleRow& row : rows) ordered.push_back(&row);
  // Stable, so methods keep the order in which the caller listed them.
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const EnsembleRow* a, const EnsembleRow* b) { return a->size < b->size; });

  const auto label = [](const EnsembleRow& row) {
    return fmt::format("size {} ({} group{})", row.size, row.groups, row.groups == 1 ? "" : "s");
  };
  size_t label_width = 0, method_width = 0;
  for (const EnsembleRow* row : ordered) {
    label_width = std::max(label_width, label(*row).size());
    method_width = std::max(method_width, row->method.size());
  }

  std::string out;
  for (size_t r = 0; r < ordered.size(); ++r) {
    const EnsembleRow& row = *ordered[r];
    if (r > 0 && ordered[r - 1]->size != row.size) out += '\n';
    fmt::format_to(std::back_inserter(out), "{:<{}}  {:<{}}", label(row), label_width,
                   row.method, method_width);
    const auto cell = [](const Summary& s) { return mean_and_spread(s, 4, "±"); };
    for (const MetricField& field : kFields) {
      fmt::format_to(std::back_inserter(out), "  {} {}", field.short_name, cell(row.*field.summary));
    }
    if (row.has_reference) {
      for (const ReferenceField& field : kReferenceFields) {
        fmt::format_to(std::back_inserter(out), "  {} {}", field.short_name, cell(row.*field.summary));
      }
    }
    out += '\n';
  }
  return out;
}

std::string to_markdown(const std::vector<EnsembleRow>& rows) {
  std::string out = "| size | groups | method |";
  std::string rule = "|---:|---:|:---|";
  for (const MetricField& field : kFields) {
    fmt::format_to(std::back_inserter(out), " {} |", field.name);
    rule += "---:|";
  }
  const bool reference = any_reference(rows);
  if (reference) {
    for (const ReferenceField& field : kReferenceFields) {
      fmt::format_to(std::back_inserter(out), " {} |", field.name);
      rule += "---:|";
    }
  }
  out += "\n" + rule + "\n";
  std::vector<const EnsembleRow*> ordered;
  for (const EnsembleRow& row : rows) ordered.push_back(&row);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const EnsembleRow* a, const EnsembleRow* b) { return a->size < b->size; });
  for (const EnsembleRow* r : ordered) {
    const EnsembleRow& row = *r;
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} |", row.size, row.groups, row.method);
    for (const MetricField& field : kFields) {
      fmt::format_to(std::back_inserter(out), " {} |", mean_and_spread(row.*field.summary));
    }
    if (reference) {
      for (const ReferenceField& field : kReferenceFields) {
        if (row.has_reference) {
          fmt::format_to(std::back_inserter(out), " {} |", mean_and_spread(row.*field.summary));
        } else {
          out += " |";
        }
      }
    }
    out += '\n';
  }
  return out;
}

PairedMargin paired_margin(const Summary& ours, const Summary& theirs, bool higher_is_better) {
  TORCH_CHECK(!ours.values.empty() && ours.values.size() == theirs.values.size(),
              "paired margin: the two rows hold ", ours.values.size(), " and ", theirs.values.size(),
              " group values; pairing needs the same groups, at least one");
  const double sign = higher_is_better ? 1.0 : -1.0;
  std::vector<double> differences;
  double scale = 0.0;
  for (size_t g = 0; g < ours.values.size(); ++g) {
    differences.push_back(sign * (ours.values[g] - theirs.values[g]));
    scale = std::max({scale, std::abs(ours.values[g]), std::abs(theirs.values[g])});
  }
  const Summary d = summarize(differences);
  PairedMargin result;
  result.margin = d.mean;
  // summarize's spread is the sample one (over n - 1): the standard error is std / sqrt(n).
  if (differences.size() > 1) result.error = d.std / std::sqrt(static_cast<double>(differences.size()));
  result.p = paired_p_value(differences, scale);
  result.same = ours.values == theirs.values;
  return result;
}

std::string paired_margins_markdown(const std::vector<EnsembleRow>& rows, const std::string& method,
                                    const std::vector<std::string>& against, double alpha) {
  std::map<int64_t, const EnsembleRow*> ours;
  std::map<int64_t, std::vector<const EnsembleRow*>> theirs;
  for (const EnsembleRow& row : rows) {
    if (row.method == method) ours[row.size] = &row;
    if (std::find(against.begin(), against.end(), row.method) != against.end()) theirs[row.size].push_back(&row);
  }
  // Every cell first, so that the bound counts every margin tested.
  struct Cell {
    PairedMargin margin;
    std::string against;
  };
  std::vector<std::pair<const EnsembleRow*, std::vector<Cell>>> lines;
  int64_t tested = 0;
  for (const auto& [size, row] : ours) {
    const auto other = theirs.find(size);
    if (other == theirs.end()) continue;
    std::vector<Cell> cells;
    for (const MetricField& metric : kFields) {
      if (metric.better == Better::kNeither) continue;
      const bool higher_is_better = metric.better == Better::kHigher;
      const double sign = higher_is_better ? 1.0 : -1.0;
      const EnsembleRow* better = *std::max_element(
          other->second.begin(), other->second.end(), [&](const EnsembleRow* a, const EnsembleRow* b) {
            return sign * (a->*metric.summary).mean < sign * (b->*metric.summary).mean;
          });
      cells.push_back({paired_margin(row->*metric.summary, better->*metric.summary, higher_is_better),
                       better->method});
      // As scripts/compare_metrics.py --paired: rows equal group by group are not tested, and do not
      // tighten the bound for the others.
      tested += cells.back().margin.p.has_value() && !cells.back().margin.same;
    }
    lines.emplace_back(row, std::move(cells));
  }
  if (lines.empty()) return "";
  std::string out = "| size | groups |";
  std::string rule = "|---:|---:|";
  for (const MetricField& metric : kFields) {
    if (metric.better == Better::kNeither) continue;
    fmt::format_to(std::back_inserter(out), " {} |", metric.name);
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  const double bound = tested > 0 ? alpha / static_cast<double>(tested) : 0.0;
  for (const auto& [row, cells] : lines) {
    fmt::format_to(std::back_inserter(out), "| {} | {} |", row->size, row->groups);
    for (const Cell& cell : cells) {
      const PairedMargin& m = cell.margin;
      std::string number = fmt::format("{:+.4f}", m.margin);
      if (m.error) number += fmt::format(" ± {:.4f}", *m.error);
      if (m.p && !m.same && *m.p < bound) number = "**" + number + "**";
      fmt::format_to(std::back_inserter(out), " {} ({}{}) |", number, cell.against,
                     m.p ? fmt::format(", p {:.2g}", *m.p) : std::string());
    }
    out += '\n';
  }
  if (tested > 0) {
    fmt::format_to(std::back_inserter(out),
                   "\nBold: p below {:g} / {} = {:.2g} (the margins tested, Bonferroni), a margin beyond the groups' "
                   "noise either way.\n",
                   alpha, tested, bound);
  }
  return out;
}

}  // namespace bnn::evaluation
