#include "src/evaluation/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

namespace bnn::evaluation {
namespace {

// The reference code clamps log-probabilities at -100 (as torch's BCELoss does).
constexpr double kLogClamp = -100.0;
// Softmax outputs in float32 may exceed 1 by a rounding error; anything further
// off means the caller passed logits or log-probabilities, not probabilities.
constexpr double kProbabilityTolerance = 1e-6;

// Probabilities as a CPU double N x K row-major block (see Note [Metric
// conventions] in the header); `storage` keeps the copied tensor alive.
struct ProbTable {
  torch::Tensor storage;
  const double* data = nullptr;
  int64_t n = 0;
  int64_t k = 0;

  double at(int64_t i, int64_t c) const { return data[i * k + c]; }
};

// A ProbTable plus its labels, as a CPU int64 vector.
struct Scored {
  ProbTable p;
  std::vector<int64_t> y;
};

ProbTable to_prob_table(const torch::Tensor& probs) {
  TORCH_CHECK(probs.defined(), "probs is an undefined tensor");
  TORCH_CHECK(probs.dim() == 2, "probs must be 2-D (N x K), got shape ", probs.sizes());
  TORCH_CHECK(probs.is_floating_point(), "probs must have a floating dtype, got ",
              probs.scalar_type());
  TORCH_CHECK(probs.size(0) > 0, "probs must hold at least one example, got shape ",
              probs.sizes());
  TORCH_CHECK(probs.size(1) >= 2, "probs must have K >= 2 classes, got shape ", probs.sizes());

  ProbTable table;
  table.storage = probs.detach().to(torch::kCPU, torch::kDouble).contiguous();
  table.data = table.storage.data_ptr<double>();
  table.n = probs.size(0);
  table.k = probs.size(1);
  for (int64_t i = 0; i < table.n; ++i) {
    for (int64_t c = 0; c < table.k; ++c) {
      const double v = table.at(i, c);
      TORCH_CHECK(std::isfinite(v) && v >= 0.0 && v <= 1.0 + kProbabilityTolerance, "probs[", i,
                  "][", c, "] = ", v, " is not a probability (must be finite and in [0, 1])");
    }
  }
  return table;
}

Scored to_scored(const torch::Tensor& probs, const torch::Tensor& labels) {
  Scored s{to_prob_table(probs), {}};
  TORCH_CHECK(labels.defined(), "labels is an undefined tensor");
  TORCH_CHECK(labels.dim() == 1 && labels.size(0) == s.p.n,
              "labels must be 1-D with one label per row of probs: probs has shape ",
              probs.sizes(), ", labels has shape ", labels.sizes());
  TORCH_CHECK(!labels.is_floating_point() && !labels.is_complex() &&
                  labels.scalar_type() != torch::kBool,
              "labels must have an integer dtype, got ", labels.scalar_type());

  const torch::Tensor y = labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* y_data = y.data_ptr<int64_t>();
  s.y.assign(y_data, y_data + s.p.n);
  for (int64_t i = 0; i < s.p.n; ++i) {
    TORCH_CHECK(s.y[i] >= 0 && s.y[i] < s.p.k, "labels[", i, "] = ", s.y[i],
                " is out of range [0, ", s.p.k, ") for probs of shape ", probs.sizes());
  }
  return s;
}

// Index of the largest entry of row i; ties go to the lowest index (as numpy's argmax).
int64_t argmax_row(const ProbTable& p, int64_t i) {
  int64_t best = 0;
  for (int64_t c = 1; c < p.k; ++c) {
    if (p.at(i, c) > p.at(i, best)) best = c;
  }
  return best;
}

double accuracy_of(const Scored& s) {
  int64_t correct = 0;
  for (int64_t i = 0; i < s.p.n; ++i) correct += argmax_row(s.p, i) == s.y[i] ? 1 : 0;
  return static_cast<double>(correct) / static_cast<double>(s.p.n);
}

double nll_of(const Scored& s) {
  double total = 0.0;
  for (int64_t i = 0; i < s.p.n; ++i) total += -std::max(std::log(s.p.at(i, s.y[i])), kLogClamp);
  return total / static_cast<double>(s.p.n);
}

double ace_of(const Scored& s, int64_t bins) {
  const int64_t n = s.p.n;
  // Written as in the definition, floor(r / (N / B)), so bin edges match the
  // reference and the numpy golden bit for bit even when B does not divide N.
  const double per_bin = static_cast<double>(n) / static_cast<double>(bins);
  std::vector<int64_t> order(n);
  std::vector<int64_t> count(bins);
  std::vector<double> hits(bins), confidence(bins);
  double total = 0.0;
  for (int64_t c = 0; c < s.p.k; ++c) {
    std::iota(order.begin(), order.end(), 0);
    // Stable: with tied probabilities the bins, hence the ACE, depend on the order.
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return s.p.at(a, c) < s.p.at(b, c); });
    std::fill(count.begin(), count.end(), 0);
    std::fill(hits.begin(), hits.end(), 0.0);
    std::fill(confidence.begin(), confidence.end(), 0.0);
    for (int64_t r = 0; r < n; ++r) {
      const auto b = std::min(
          static_cast<int64_t>(std::floor(static_cast<double>(r) / per_bin)), bins - 1);
      const int64_t i = order[r];
      count[b] += 1;
      hits[b] += s.y[i] == c ? 1.0 : 0.0;
      confidence[b] += s.p.at(i, c);
    }
    for (int64_t b = 0; b < bins; ++b) {
      if (count[b] == 0) continue;
      const auto nb = static_cast<double>(count[b]);
      total += std::abs(hits[b] / nb - confidence[b] / nb);
    }
  }
  return total / static_cast<double>(bins * s.p.k);
}

double rps_of(const Scored& s) {
  double total = 0.0;
  for (int64_t i = 0; i < s.p.n; ++i) {
    double cum_p = 0.0, cum_o = 0.0, row = 0.0;
    for (int64_t c = 0; c < s.p.k; ++c) {
      cum_p += s.p.at(i, c);
      cum_o += s.y[i] == c ? 1.0 : 0.0;
      row += (cum_p - cum_o) * (cum_p - cum_o);
    }
    total += row / static_cast<double>(s.p.k - 1);
  }
  return total / static_cast<double>(s.p.n);
}

double ece_of(const Scored& s, int64_t bins) {
  // Upper edges computed as b / B (not b * (1 / B)) so they match the golden script.
  std::vector<double> upper(bins);
  for (int64_t b = 0; b < bins; ++b) {
    upper[b] = static_cast<double>(b + 1) / static_cast<double>(bins);
  }
  std::vector<int64_t> count(bins);
  std::vector<double> hits(bins), confidence(bins);
  for (int64_t i = 0; i < s.p.n; ++i) {
    const int64_t pred = argmax_row(s.p, i);
    const double conf = s.p.at(i, pred);
    // Bin b holds (b/B, (b+1)/B]: the first upper edge >= conf. Zero lands in bin 0;
    // a confidence a rounding error above 1 stays in the last bin.
    const auto it = std::lower_bound(upper.begin(), upper.end(), conf);
    const int64_t b = std::min<int64_t>(it - upper.begin(), bins - 1);
    count[b] += 1;
    hits[b] += pred == s.y[i] ? 1.0 : 0.0;
    confidence[b] += conf;
  }
  double total = 0.0;
  for (int64_t b = 0; b < bins; ++b) {
    if (count[b] == 0) continue;
    const auto nb = static_cast<double>(count[b]);
    total += nb / static_cast<double>(s.p.n) * std::abs(hits[b] / nb - confidence[b] / nb);
  }
  return total;
}

double brier_of(const Scored& s) {
  double total = 0.0;
  for (int64_t i = 0; i < s.p.n; ++i) {
    for (int64_t c = 0; c < s.p.k; ++c) {
      const double diff = s.p.at(i, c) - (s.y[i] == c ? 1.0 : 0.0);
      total += diff * diff;
    }
  }
  return total / static_cast<double>(s.p.n);
}

double entropy_of(const ProbTable& p) {
  double total = 0.0;
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t c = 0; c < p.k; ++c) {
      const double v = p.at(i, c);
      if (v > 0.0) total -= v * std::log(v);
    }
  }
  return total / static_cast<double>(p.n);
}

void check_bins(int64_t bins) {
  TORCH_CHECK(bins >= 1, "the number of calibration bins must be at least 1, got ", bins);
}

}  // namespace

Metrics compute_metrics(const torch::Tensor& probs, const torch::Tensor& labels) {
  const Scored s = to_scored(probs, labels);
  Metrics m;
  m.accuracy = accuracy_of(s);
  m.nll = nll_of(s);
  m.ace = ace_of(s, kAceBins);
  m.rps = rps_of(s);
  m.ece = ece_of(s, kEceBins);
  m.brier = brier_of(s);
  m.entropy = entropy_of(s.p);
  return m;
}

namespace {

std::pair<ProbTable, ProbTable> paired(const torch::Tensor& probs, const torch::Tensor& reference) {
  ProbTable p = to_prob_table(probs);
  ProbTable q = to_prob_table(reference);
  TORCH_CHECK(p.n == q.n && p.k == q.k, "reference probabilities of shape ", reference.sizes(),
              " do not match probs of shape ", probs.sizes());
  return {std::move(p), std::move(q)};
}

}  // namespace

double top1_agreement(const torch::Tensor& probs, const torch::Tensor& reference) {
  const auto [p, q] = paired(probs, reference);
  int64_t same = 0;
  for (int64_t i = 0; i < p.n; ++i) same += argmax_row(p, i) == argmax_row(q, i) ? 1 : 0;
  return static_cast<double>(same) / static_cast<double>(p.n);
}

double total_variation(const torch::Tensor& probs, const torch::Tensor& reference) {
  const auto [p, q] = paired(probs, reference);
  double total = 0.0;
  for (int64_t i = 0; i < p.n; ++i) {
    double row = 0.0;
    for (int64_t c = 0; c < p.k; ++c) row += std::abs(p.at(i, c) - q.at(i, c));
    total += 0.5 * row;
  }
  return total / static_cast<double>(p.n);
}

double accuracy(const torch::Tensor& probs, const torch::Tensor& labels) {
  return accuracy_of(to_scored(probs, labels));
}

double nll(const torch::Tensor& probs, const torch::Tensor& labels) {
  return nll_of(to_scored(probs, labels));
}

double ace(const torch::Tensor& probs, const torch::Tensor& labels, int64_t bins) {
  check_bins(bins);
  return ace_of(to_scored(probs, labels), bins);
}

double rps(const torch::Tensor& probs, const torch::Tensor& labels) {
  return rps_of(to_scored(probs, labels));
}

double ece(const torch::Tensor& probs, const torch::Tensor& labels, int64_t bins) {
  check_bins(bins);
  return ece_of(to_scored(probs, labels), bins);
}

double brier(const torch::Tensor& probs, const torch::Tensor& labels) {
  return brier_of(to_scored(probs, labels));
}

double predictive_entropy(const torch::Tensor& probs) {
  return entropy_of(to_prob_table(probs));
}

}  // namespace bnn::evaluation
