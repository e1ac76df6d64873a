#include "src/pipeline/divergence.h"

#include <cmath>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "data_loaders/npy.h"
#include "samplers/registry.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/run_directory.h"

namespace bnn::pipeline {

std::optional<Divergence> check_divergence(const std::string& trace_rows, const std::string& anchor_phase,
                                           const config::Config& config, int64_t num_classes,
                                           std::optional<double> anchor_accuracy) {
  std::istringstream in(trace_rows);
  bool have_reference = false;
  Divergence d;
  double loss_sum = 0, accuracy_sum = 0;
  int64_t epochs = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream row(line);
    std::vector<std::string> f;
    for (std::string x; std::getline(row, x, ',');) f.push_back(x);
    if (f.size() < 4) continue;
    double loss = 0, accuracy = 0;
    int64_t epoch = 0;
    try {
      loss = std::stod(f[2]);
      accuracy = std::stod(f[3]);
      epoch = std::stoll(f[1]);
    } catch (const std::exception&) {
      continue;  // not a row (bnn evaluate names a damaged trace.csv)
    }
    if (f[0] == anchor_phase) {
      have_reference = true;
      d.reference_loss = loss;
      d.reference_accuracy = accuracy;
    } else if (f[0] == "sample" && epoch > config.sampler.burn_in) {
      loss_sum += loss;
      accuracy_sum += accuracy;
      ++epochs;
    }
  }
  if (!have_reference) return std::nullopt;
  if (anchor_accuracy) d.reference_accuracy = *anchor_accuracy;
  const auto& s = config.sampler;
  d.chain_loss = epochs > 0 ? loss_sum / static_cast<double>(epochs) : d.reference_loss;
  d.chain_accuracy = epochs > 0 ? accuracy_sum / static_cast<double>(epochs) : d.reference_accuracy;
  const double uniform = num_classes >= 2 ? std::log(static_cast<double>(num_classes)) : 0.0;
  if (num_classes >= 2 && d.reference_loss - uniform > s.max_loss_increase) {
    d.reason = fmt::format(
        "x* itself: the training loss of its last {} epoch is {:.4g}, above a uniform guess's log {} = {:.4g} by "
        "more than sampler.max_loss_increase {}; {}",
        anchor_phase, d.reference_loss, num_classes, uniform, s.max_loss_increase,
        anchor_phase == "map" ? "L-BFGS did not find the MAP point"
                              : "the Adam and SWA phases diverged (lower adam.lr or swa.lr)");
    return d;
  }
  if (epochs == 0) return std::nullopt;
  const bool loss_up = d.chain_loss - d.reference_loss > s.max_loss_increase;
  const bool accuracy_down = d.reference_accuracy - d.chain_accuracy > s.max_accuracy_drop;
  if (!loss_up && !accuracy_down) return std::nullopt;
  // SWA's row holds the mean loss over its last epoch's iterates, and the
  // last iterate's accuracy; L-BFGS's, x*'s own.
  const std::string against =
      anchor_phase == "swa"
          ? fmt::format("against SWA's last epoch's mean training loss {:.4g} and {} test accuracy {:.4g}",
                        d.reference_loss, anchor_accuracy ? "x*'s" : "its last iterate's", d.reference_accuracy)
          : fmt::format("against x*'s training loss {:.4g} and test accuracy {:.4g}", d.reference_loss,
                        d.reference_accuracy);
  d.reason = fmt::format(
      "after burn-in the chain's mean training loss is {:.4g} and its test accuracy {:.4g}, {} ({}: "
      "sampler.max_loss_increase {}, sampler.max_accuracy_drop {}); lower sampler.step_size{}",
      d.chain_loss, d.chain_accuracy, against,
      loss_up && accuracy_down ? "both past" : loss_up ? "loss past" : "accuracy past", s.max_loss_increase,
      s.max_accuracy_drop,
      samplers::reads_option(s.name, samplers::SamplerOption::kFriction) ? " or raise sampler.friction" : "");
  return d;
}

std::optional<double> anchor_accuracy(const std::filesystem::path& member, const config::Config& config) {
  const auto probs = point_probs_path(member, anchor_point(config)), labels = member.parent_path() / kLabelsFile;
  std::error_code ec;
  if (!std::filesystem::exists(probs, ec) || !std::filesystem::exists(labels, ec)) return std::nullopt;
  try {
    return accuracy_of(data_loaders::read_npy(probs), data_loaders::read_npy(labels));
  } catch (const std::exception&) {
    return std::nullopt;  // bnn evaluate names a damaged file when it reads it
  }
}

std::optional<double> accuracy_of(const torch::Tensor& probs, const torch::Tensor& labels) {
  if (probs.dim() != 2 || labels.dim() != 1 || probs.size(0) != labels.size(0) || probs.size(0) == 0 ||
      labels.is_floating_point()) {
    return std::nullopt;
  }
  return probs.argmax(1).eq(labels.to(torch::kLong)).to(torch::kDouble).mean().item<double>();
}

std::optional<Divergence> check_member_divergence(const std::filesystem::path& member, const config::Config& config,
                                                  int64_t num_classes) {
  const auto path = member / kTraceFile;
  if (!std::filesystem::exists(path)) return std::nullopt;
  const std::string text = io::read_file(path);
  const auto header_end = text.find('\n');
  return check_divergence(header_end == std::string::npos ? "" : text.substr(header_end + 1), anchor_point(config),
                          config, num_classes, anchor_accuracy(member, config));
}

}  // namespace bnn::pipeline
