#include "models/torchscript.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bnn::models {
namespace {

// The line of a LibTorch or TorchScript interpreter error that says what went
// wrong: the interpreter's message ends with Python's "RuntimeError: ..."
// after a traceback of the module's code; other errors say it first.
std::string brief(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto start = line.find_first_not_of(" \t");
    if (start != std::string::npos) lines.push_back(line.substr(start));
  }
  if (lines.empty()) return "no message";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto at = it->find("Error: ");
    if (at != std::string::npos && it->find(' ') > at) return it->substr(at + 7);
  }
  return lines.front();
}

std::string brief(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return brief(c10->what_without_backtrace());
  return brief(std::string(e.what()));
}

// A parameter named "weight", or "<module>.weight".
bool is_weight_name(const std::string& name) {
  const std::string suffix = ".weight";
  return name == "weight" ||
         (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

// The named tensors of `list` (a script module's named_parameters or
// named_buffers), each tensor once, under its first name (Note [Tied and
// frozen parameters]).
template <typename NamedList>
std::vector<torch::jit::Named<at::Tensor>> once_each(const NamedList& list) {
  std::vector<torch::jit::Named<at::Tensor>> out;
  std::set<const c10::TensorImpl*> seen;
  for (const auto& t : list) {
    if (seen.insert(t.value.unsafeGetTensorImpl()).second) out.push_back(t);
  }
  return out;
}

// Two inputs of the data set's shape with distinct, reproducible values.
torch::Tensor probe_input(const std::vector<int64_t>& shape) {
  std::vector<int64_t> sizes = {2};
  sizes.insert(sizes.end(), shape.begin(), shape.end());
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return torch::sin(torch::arange(n, torch::kFloat) * 0.37).reshape(sizes);
}

}  // namespace

TorchScriptClassifier::TorchScriptClassifier(const TorchScriptOptions& options) : options_(options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (options_.path.empty()) fail("no file given (model.path)");
  if (!fs::exists(options_.path, ec)) fail("no such file");
  if (fs::is_directory(options_.path, ec)) fail("is a directory, not a module saved by torch.jit.save");
  TORCH_CHECK(options_.input_shape.size() == 3, "model input shape must be {C, H, W}");
  try {
    module_ = torch::jit::load(options_.path, torch::kCPU);
  } catch (const std::exception& e) {
    fail("not a TorchScript module saved by torch.jit.save (" + brief(e) + ")");
  }
  if (!module_.find_method("forward")) {
    std::vector<std::string> names;
    for (const auto& method : module_.get_methods()) names.push_back(method.name());
    fail(fmt::format("the module has no forward method (its methods: {}); bnn calls forward(inputs) for the logits",
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  int64_t names = 0;
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    if (p.value.scalar_type() != torch::kFloat) {
      fail(fmt::format("parameter {} is {}; bnn computes in float32 (call .float() on the model before saving it)",
                       p.name, c10::toString(p.value.scalar_type())));
    }
    ++names;
  }
  const auto parameters = once_each(module_.named_parameters(/*recurse=*/true));
  tied_ = names - static_cast<int64_t>(parameters.size());
  const auto count = std::count_if(parameters.begin(), parameters.end(),
                                   [](const auto& p) { return p.value.requires_grad(); });
  frozen_ = static_cast<int64_t>(parameters.size()) - count;
  if (count == 0) {
    fail(frozen_ > 0 ? "every parameter of the module is frozen (requires_grad False): nothing to train"
                     : "the module has no parameters to train");
  }

  find_batch_norms();
  std::vector<torch::Tensor> saved;
  for (const auto& layer : batch_norms_) {
    for (const auto& t : {layer.running_mean, layer.running_var, layer.num_batches_tracked}) {
      saved.push_back(t.defined() ? t.clone() : t);
    }
  }
  const torch::Tensor probe = probe_input(options_.input_shape);
  {
    torch::NoGradGuard no_grad;
    module_.eval();
    c10::IValue out;
    try {
      out = module_.forward({probe});
    } catch (const std::exception& e) {
      fail(fmt::format("forward fails on a batch of shape [{}] (two inputs of the data set's shape): {}",
                       fmt::join(probe.sizes(), ", "), brief(e)));
    }
    if (!out.isTensor()) fail(fmt::format("forward returns a {}, not a tensor of logits", out.tagKind()));
    const torch::Tensor logits = out.toTensor();
    if (logits.dim() != 2 || logits.size(0) != 2 || logits.size(1) != options_.num_classes) {
      fail(fmt::format("forward returns shape [{}] for a batch of shape [{}]; bnn needs [2, {}], a logit per class "
                       "of the data set",
                       fmt::join(logits.sizes(), ", "), fmt::join(probe.sizes(), ", "), options_.num_classes));
    }
    if (!at::isFloatingType(logits.scalar_type())) {
      fail(fmt::format("forward returns {} logits; bnn needs floating-point logits, differentiable in the "
                       "parameters (no argmax, rounding or integer casts at the end)",
                       c10::toString(logits.scalar_type())));
    }
    if (!torch::isfinite(logits).all().item<bool>()) {
      fail(fmt::format("forward returns NaN or infinite logits for a batch of shape [{}] with values in [-1, 1] "
                       "(bnn's inputs are standardized unless data.standardize is false, and so negative in places: "
                       "a log or sqrt of them is NaN)",
                       fmt::join(probe.sizes(), ", ")));
    }
  }
  {
    // Gradients flow from the logits to the parameters (not detached, not
    // under torch.no_grad); eval mode leaves BatchNorm statistics alone. On
    // even where the caller loads the model under a NoGradGuard.
    const torch::AutoGradMode grad_on(true);
    module_.eval();
    torch::Tensor logits;
    try {
      logits = module_.forward({probe}).toTensor();
    } catch (const std::exception& e) {
      fail(fmt::format("forward fails with gradients enabled on a batch of shape [{}]: {}",
                       fmt::join(probe.sizes(), ", "), brief(e)));
    }
    if (!logits.requires_grad()) {
      fail("the logits forward returns carry no gradient to the parameters (detached, or computed under "
           "torch.no_grad()): bnn trains by gradients of the loss");
    }
  }
  measure_momenta(probe);
  check_eval_mode(probe);
  {
    torch::NoGradGuard no_grad;
    size_t i = 0;
    for (const auto& layer : batch_norms_) {
      for (auto t : {layer.running_mean, layer.running_var, layer.num_batches_tracked}) {
        if (t.defined()) t.copy_(saved[i]);
        ++i;
      }
    }
  }
  if (!options_.init_from_file) redraw_weights();
  mirror_tensors();
  train(true);
}

void TorchScriptClassifier::fail(const std::string& why) const {
  throw std::invalid_argument(fmt::format("model file {}: {}", options_.path, why));
}

void TorchScriptClassifier::find_batch_norms() {
  std::set<const c10::TensorImpl*> seen;  // a layer held under two names is one layer
  for (const auto& item : module_.named_modules()) {
    const torch::jit::Module& sub = item.value;
    if (!sub.hasattr("running_mean") || !sub.hasattr("running_var")) continue;
    const c10::IValue mean = sub.attr("running_mean");
    const c10::IValue var = sub.attr("running_var");
    if (!mean.isTensor() || !var.isTensor()) continue;  // track_running_stats=False: None
    if (!seen.insert(mean.toTensor().unsafeGetTensorImpl()).second) continue;
    BatchNormLayer layer;
    layer.name = item.name.empty() ? "(the module itself)" : item.name;
    layer.running_mean = mean.toTensor();
    layer.running_var = var.toTensor();
    if (sub.hasattr("num_batches_tracked") && sub.attr("num_batches_tracked").isTensor()) {
      layer.num_batches_tracked = sub.attr("num_batches_tracked").toTensor();
    }
    if (sub.hasattr("momentum")) {
      const c10::IValue m = sub.attr("momentum");
      if (m.isDouble()) layer.momentum = m.toDouble();  // compared with the measurement below
      if (m.isNone()) layer.momentum = 1.0;
    } else {
      layer.momentum = -1.0;  // unknown until measured
    }
    batch_norms_.push_back(layer);
  }
}

void TorchScriptClassifier::measure_momenta(const torch::Tensor& probe) {
  if (batch_norms_.empty()) return;
  torch::NoGradGuard no_grad;
  auto forward_from = [&](double statistic) {
    for (auto& layer : batch_norms_) {
      layer.running_mean.fill_(statistic);
      layer.running_var.fill_(statistic);
      if (layer.num_batches_tracked.defined()) layer.num_batches_tracked.zero_();
    }
    module_.train(true);
    try {
      module_.forward({probe});
    } catch (const std::exception& e) {
      fail(fmt::format("forward fails in train mode on a batch of shape [{}]: {}", fmt::join(probe.sizes(), ", "),
                       brief(e)));
    }
  };
  forward_from(0.0);
  std::vector<torch::Tensor> from_zero;
  for (const auto& layer : batch_norms_) from_zero.push_back(layer.running_mean.to(torch::kDouble));
  forward_from(1.0);
  for (size_t i = 0; i < batch_norms_.size(); ++i) {
    BatchNormLayer& layer = batch_norms_[i];
    // From 0: m b. From 1: (1 - m) + m b.
    const double kept = (layer.running_mean.to(torch::kDouble) - from_zero[i]).mean().item<double>();
    const double measured = 1.0 - kept;
    if (!(measured > 1e-6)) {
      fail(fmt::format("BatchNorm layer {} does not update its running statistics in train mode; a module traced "
                       "(torch.jit.trace) in eval mode stays in eval mode, so bnn could not recalibrate it: script "
                       "the model with torch.jit.script instead",
                       layer.name));
    }
    if (measured > 1.0 + 1e-4) {
      fail(fmt::format("BatchNorm layer {} updates its running statistics with momentum {:.6g}, outside (0, 1]",
                       layer.name, measured));
    }
    // The attribute's exact value where it matches what the code does.
    if (!(layer.momentum > 0 && std::abs(layer.momentum - measured) < 1e-4)) layer.momentum = measured;
  }
  module_.eval();
}

void TorchScriptClassifier::check_eval_mode(const torch::Tensor& probe) {
  torch::NoGradGuard no_grad;
  module_.eval();
  std::vector<torch::Tensor> before;
  for (const auto& layer : batch_norms_) before.push_back(layer.running_mean.clone());
  const std::string traced =
      "a module traced (torch.jit.trace) in train mode stays in train mode, and bnn predicts in eval mode with "
      "recalibrated statistics: script the model with torch.jit.script instead";
  torch::Tensor both, again, first;
  try {
    both = module_.forward({probe}).toTensor();
    again = module_.forward({probe}).toTensor();
    first = module_.forward({probe.narrow(0, 0, 1)}).toTensor();
  } catch (const std::exception& e) {
    fail(fmt::format("forward fails in eval mode on a single input ({}); {}", brief(e), traced));
  }
  if (!torch::allclose(both, again, /*rtol=*/1e-5, /*atol=*/1e-6)) {  // a GPU's kernels may round differently
    fail("in eval mode forward gives other logits for the same batch each time (random numbers drawn in forward, "
         "or dropout: " +
         traced + "); bnn's predictions and samples need a deterministic forward");
  }
  for (size_t i = 0; i < batch_norms_.size(); ++i) {
    if (!batch_norms_[i].running_mean.equal(before[i])) {
      fail(fmt::format("BatchNorm layer {} changes its running statistics in eval mode; {}", batch_norms_[i].name,
                       traced));
    }
  }
  if (!torch::allclose(both.narrow(0, 0, 1), first, /*rtol=*/1e-4, /*atol=*/1e-5)) {
    fail("in eval mode the logits of an input depend on the other inputs of its batch (BatchNorm with batch "
         "statistics: track_running_stats=False, or " +
         traced + ")");
  }
}

void TorchScriptClassifier::redraw_weights() {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> by_name;  // every name, a tied tensor's second too
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) by_name[p.name] = p.value;
  // Frozen ones stay as saved; a layer's trainable bias is redrawn with its weight's fan-in either way.
  for (const auto& [name, w] : once_each(module_.named_parameters(/*recurse=*/true))) {
    if (w.dim() < 2 || !is_weight_name(name)) continue;
    const double fan_in = static_cast<double>(w.numel() / w.size(0));
    const double bound = 1.0 / std::sqrt(fan_in);
    if (w.requires_grad()) w.uniform_(-bound, bound);
    const auto bias = by_name.find(name.substr(0, name.size() - 6) + "bias");
    if (bias != by_name.end() && bias->second.requires_grad()) bias->second.uniform_(-bound, bound);
  }
}

void TorchScriptClassifier::mirror_tensors() {
  std::map<std::string, torch::nn::Module*> nodes = {{"", this}};
  std::function<torch::nn::Module&(const std::string&)> node = [&](const std::string& path) -> torch::nn::Module& {
    if (const auto it = nodes.find(path); it != nodes.end()) return *it->second;
    const auto dot = path.rfind('.');
    torch::nn::Module& parent = node(dot == std::string::npos ? "" : path.substr(0, dot));
    const std::string leaf = dot == std::string::npos ? path : path.substr(dot + 1);
    auto child = std::make_shared<torch::nn::Module>(leaf);
    parent.register_module(leaf, child);
    mirror_.push_back(child);
    nodes[path] = child.get();
    return *child;
  };
  auto split = [](const std::string& name) {
    const auto dot = name.rfind('.');
    return dot == std::string::npos ? std::pair<std::string, std::string>{"", name}
                                    : std::pair<std::string, std::string>{name.substr(0, dot), name.substr(dot + 1)};
  };
  // Note [Tied and frozen parameters]
  for (const auto& p : once_each(module_.named_parameters(/*recurse=*/true))) {
    if (!p.value.requires_grad()) continue;  // frozen: the script module's alone
    const auto [path, leaf] = split(p.name);
    node(path).register_parameter(leaf, p.value, /*requires_grad=*/true);
  }
  for (const auto& b : once_each(module_.named_buffers(/*recurse=*/true))) {
    const auto [path, leaf] = split(b.name);
    node(path).register_buffer(leaf, b.value);
  }
}

torch::Tensor TorchScriptClassifier::forward(const torch::Tensor& images) { return call_forward(images).toTensor(); }

c10::IValue TorchScriptClassifier::call_forward(const torch::Tensor& images) {
  try {
    return module_.forward({images});
  } catch (const c10::Error&) {
    throw;  // LibTorch's own (out of memory among them): handled as any model's
  } catch (const std::exception& e) {
    // An error the module's code raises (TorchScript's JITException) becomes
    // a c10::Error, so that it fails the member as any other model's would.
    TORCH_CHECK(false, "model file ", options_.path, ": forward fails on a batch of shape [",
                fmt::format("{}", fmt::join(images.sizes(), ", ")), "]: ", brief(e));
  }
}

std::string TorchScriptClassifier::pretty_string() const {
  std::string type = "module";
  if (const auto name = module_.type()->name()) type = name->qualifiedName();
  const std::string prefix = "__torch__.";
  if (type.rfind(prefix, 0) == 0) type = type.substr(prefix.size());
  // Scripting names a second class of the same Python name ___torch_mangle_N.
  type = std::regex_replace(type, std::regex("___torch_mangle_[0-9]+\\."), "");
  std::string text = fmt::format("TorchScript {}: {}", std::filesystem::path(options_.path).filename().string(), type);
  if (!batch_norms_.empty()) {
    text += fmt::format(", {} BatchNorm layer{}", batch_norms_.size(), batch_norms_.size() == 1 ? "" : "s");
  }
  if (tied_ > 0) text += fmt::format(", {} tied parameter name{} (trained once)", tied_, tied_ == 1 ? "" : "s");
  if (frozen_ > 0) text += fmt::format(", {} frozen parameter{} (kept as saved)", frozen_, frozen_ == 1 ? "" : "s");
  return text;
}

void TorchScriptClassifier::recalibrate(const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  if (!batch_norms_.empty()) {
    for (auto& layer : batch_norms_) {
      layer.running_mean.zero_();
      layer.running_var.zero_();
      if (layer.num_batches_tracked.defined()) layer.num_batches_tracked.zero_();
    }
    train(true);
    call_forward(images);
    for (auto& layer : batch_norms_) {
      if (layer.momentum != 1.0) {
        layer.running_mean.div_(layer.momentum);
        layer.running_var.div_(layer.momentum);
      }
    }
  }
  train(false);
}

std::vector<double> TorchScriptClassifier::batch_norm_momenta() const {
  std::vector<double> out;
  for (const auto& layer : batch_norms_) out.push_back(layer.momentum);
  return out;
}

void TorchScriptClassifier::train(bool on) {
  module_.train(on);
  torch::nn::Module::train(on);
}

void TorchScriptClassifier::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  module_.to(device, dtype, non_blocking);
  torch::nn::Module::to(device, dtype, non_blocking);
}

void TorchScriptClassifier::to(torch::Dtype dtype, bool non_blocking) {
  module_.to(dtype, non_blocking);
  torch::nn::Module::to(dtype, non_blocking);
}

void TorchScriptClassifier::to(torch::Device device, bool non_blocking) {
  module_.to(device, non_blocking);
  torch::nn::Module::to(device, non_blocking);
}

}  // namespace bnn::models
