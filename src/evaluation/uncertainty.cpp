#include "src/evaluation/uncertainty.h"

#include <cmath>
#include <limits>

#include "src/evaluation/metrics.h"

namespace bnn::evaluation {
namespace {

torch::Tensor to_cpu_double(const torch::Tensor& probs) {
  TORCH_CHECK(probs.defined() && probs.dim() == 2 && probs.size(1) >= 2,
              "probabilities must be an N x K tensor with K >= 2, got ",
              probs.defined() ? probs.sizes() : torch::IntArrayRef{});
  TORCH_CHECK(probs.is_floating_point(), "probabilities must have a floating dtype, got ", probs.scalar_type());
  return probs.detach().to(torch::kCPU, torch::kDouble).contiguous();
}

}  // namespace

torch::Tensor row_entropy(const torch::Tensor& probs) {
  const torch::Tensor p = to_cpu_double(probs);
  // 0 log 0 = 0: xlogy(0, 0) is 0.
  return -torch::xlogy(p, p).sum(/*dim=*/1);
}

void MixtureAccumulator::add(const torch::Tensor& probs, double weight) {
  TORCH_CHECK(weight > 0 && std::isfinite(weight), "mixture weight must be positive and finite, got ", weight);
  const torch::Tensor p = to_cpu_double(probs);
  if (empty()) {
    prob_sum_ = torch::zeros_like(p);
    entropy_sum_ = torch::zeros({p.size(0)}, p.options());
  }
  TORCH_CHECK(p.sizes() == prob_sum_.sizes(), "mixture draws must share one shape: expected ", prob_sum_.sizes(),
              ", got ", p.sizes());
  prob_sum_.add_(p, weight);
  entropy_sum_.add_(row_entropy(p), weight);
  total_weight_ += weight;
}

void MixtureAccumulator::add(const MixtureAccumulator& other, double weight) {
  TORCH_CHECK(!other.empty(), "cannot add an empty mixture");
  TORCH_CHECK(weight > 0 && std::isfinite(weight), "mixture weight must be positive and finite, got ", weight);
  const double scale = weight / other.total_weight_;
  if (empty()) {
    prob_sum_ = torch::zeros_like(other.prob_sum_);
    entropy_sum_ = torch::zeros_like(other.entropy_sum_);
  }
  TORCH_CHECK(other.prob_sum_.sizes() == prob_sum_.sizes(), "mixtures must share one shape: expected ",
              prob_sum_.sizes(), ", got ", other.prob_sum_.sizes());
  prob_sum_.add_(other.prob_sum_, scale);
  entropy_sum_.add_(other.entropy_sum_, scale);
  total_weight_ += weight;
}

torch::Tensor MixtureAccumulator::mean() const {
  TORCH_CHECK(!empty(), "mean of an empty mixture");
  return prob_sum_ / total_weight_;
}

torch::Tensor MixtureAccumulator::expected_entropy() const {
  TORCH_CHECK(!empty(), "expected entropy of an empty mixture");
  return entropy_sum_ / total_weight_;
}

UncertaintySummary summarize_uncertainty(const MixtureAccumulator& mixture, int64_t draws,
                                         const torch::Tensor& labels) {
  TORCH_CHECK(draws >= 1, "a mixture has at least one draw, got ", draws);
  const torch::Tensor pbar = mixture.mean();
  UncertaintySummary s;
  s.draws = draws;
  s.accuracy = accuracy(pbar, labels);  // also checks labels against pbar
  const torch::Tensor total = row_entropy(pbar);
  const torch::Tensor expected = mixture.expected_entropy();
  s.predictive_entropy = total.mean().item<double>();
  s.expected_entropy = expected.mean().item<double>();
  // Jensen: total >= expected per example; clamp float rounding of a single draw at 0.
  s.mutual_information = (total - expected).clamp_min(0).mean().item<double>();

  const int64_t k = pbar.size(1);
  const torch::Tensor predicted = pbar.argmax(/*dim=*/1);
  const torch::Tensor truth = labels.to(torch::kCPU, torch::kLong);
  s.confusion.assign(k, std::vector<int64_t>(k, 0));
  const auto* pred = predicted.data_ptr<int64_t>();
  const torch::Tensor truth_c = truth.contiguous();
  const auto* y = truth_c.data_ptr<int64_t>();
  for (int64_t i = 0; i < pbar.size(0); ++i) ++s.confusion[y[i]][pred[i]];
  for (int64_t t = 0; t < k; ++t) {
    int64_t count = 0;
    for (const int64_t c : s.confusion[t]) count += c;
    s.per_class_accuracy.push_back(count == 0 ? std::numeric_limits<double>::quiet_NaN()
                                              : static_cast<double>(s.confusion[t][t]) /
                                                    static_cast<double>(count));
  }
  return s;
}

nlohmann::json to_json(const UncertaintySummary& summary) {
  nlohmann::json per_class = nlohmann::json::array();
  for (const double a : summary.per_class_accuracy) {
    per_class.push_back(std::isnan(a) ? nlohmann::json(nullptr) : nlohmann::json(a));
  }
  return {{"draws", summary.draws},
          {"predictive_entropy", summary.predictive_entropy},
          {"expected_entropy", summary.expected_entropy},
          {"mutual_information", summary.mutual_information},
          {"accuracy", summary.accuracy},
          {"per_class_accuracy", per_class},
          {"confusion_matrix", summary.confusion}};
}

}  // namespace bnn::evaluation
