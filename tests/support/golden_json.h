// Test helper: the golden values made by scripts/make_metric_golden.py and
// scripts/make_ood_golden.py.
#pragma once

#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace bnn::testing {

// tests/data/<file>, parsed.
inline nlohmann::json load_golden(const std::string& file) {
  const std::string path = std::string(BNN_TEST_DATA_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

inline nlohmann::json load_metric_golden() {
  const std::string path = BNN_TEST_DATA_DIR "/metrics_golden.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

// N x K double tensor from a JSON list of rows.
inline torch::Tensor probs_from_json(const nlohmann::json& rows) {
  const auto n = static_cast<int64_t>(rows.size());
  const auto k = static_cast<int64_t>(rows.at(0).size());
  torch::Tensor p = torch::empty({n, k}, torch::kDouble);
  auto acc = p.accessor<double, 2>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) acc[i][c] = rows.at(i).at(c).get<double>();
  }
  return p;
}

// A golden summary's "std": NaN where it is null (a single group has no spread).
inline double golden_std(const nlohmann::json& summary) {
  const auto& s = summary.at("std");
  return s.is_null() ? std::numeric_limits<double>::quiet_NaN() : s.get<double>();
}

inline torch::Tensor labels_from_json(const nlohmann::json& labels) {
  return torch::tensor(labels.get<std::vector<int64_t>>(), torch::kLong);
}

}  // namespace bnn::testing
