#include "models/stacked_members.h"

#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace bnn::models {

namespace F = torch::nn::functional;

namespace {

// The layers of `model` in the order its modules were registered: the
// modules without children.
std::vector<std::shared_ptr<torch::nn::Module>> leaves(torch::nn::Module& model) {
  std::vector<std::shared_ptr<torch::nn::Module>> out;
  for (const auto& m : model.modules(/*include_self=*/false)) {
    if (m->children().empty()) out.push_back(m);
  }
  return out;
}

// The layer with its options, as LibTorch prints it.
std::string describe(const torch::nn::Module& module) {
  std::ostringstream out;
  module.pretty_print(out);
  return out.str();
}

[[noreturn]] void refuse(size_t layer, const torch::nn::Module& module, const std::string& why) {
  throw std::invalid_argument(
      fmt::format("stacked members: layer {} ({}) {}", layer, module.name(), why));
}

// The options of a BatchNorm1d or BatchNorm2d; nullptr for other layers.
const torch::nn::BatchNormOptions* batch_norm_options(const torch::nn::Module& module) {
  if (const auto* bn = dynamic_cast<const torch::nn::BatchNorm1dImpl*>(&module)) return &bn->options;
  if (const auto* bn = dynamic_cast<const torch::nn::BatchNorm2dImpl*>(&module)) return &bn->options;
  return nullptr;
}

}  // namespace

StackedMembers::StackedMembers(const std::vector<std::shared_ptr<Classifier>>& members)
    : members_(static_cast<int64_t>(members.size())) {
  if (members.empty()) throw std::invalid_argument("stacked members: no members");
  std::vector<std::vector<std::shared_ptr<torch::nn::Module>>> chains;
  for (const auto& m : members) chains.push_back(leaves(*m));
  const auto& first = chains.front();
  for (size_t k = 1; k < chains.size(); ++k) {
    if (chains[k].size() != first.size()) {
      throw std::invalid_argument(fmt::format("stacked members: member {} has {} layers, member 0 has {}", k,
                                              chains[k].size(), first.size()));
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t j = 0; j < first.size(); ++j) {
    const auto& module = first[j];
    for (size_t k = 1; k < chains.size(); ++k) {
      if (describe(*chains[k][j]) != describe(*module)) {
        refuse(j, *module,
               fmt::format("differs in member {}: {} against {}", k, describe(*chains[k][j]), describe(*module)));
      }
    }
    Layer layer{Kind::kSoftplus, module};
    Layout layout = Layout::kConcatenated;
    if (auto conv = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(module)) {
      if (torch::enumtype::get_enum_name(conv->options.padding_mode()) != "kZeros") {
        refuse(j, *module, "pads other than with zeros");
      }
      layer.kind = Kind::kConv2d;
      layer.conv = &conv->options;
    } else if (std::dynamic_pointer_cast<torch::nn::LinearImpl>(module)) {
      layer.kind = Kind::kLinear;
      layout = Layout::kStacked;
    } else if (const auto* options = batch_norm_options(*module)) {
      if (!options->momentum().has_value()) refuse(j, *module, "has no momentum (a cumulative average)");
      layer.kind = Kind::kBatchNorm;
      layer.batch_norm = options;
      layer.batch_norm_1d = std::dynamic_pointer_cast<torch::nn::BatchNorm1dImpl>(module) != nullptr;
    } else if (auto pool = std::dynamic_pointer_cast<torch::nn::MaxPool2dImpl>(module)) {
      layer.kind = Kind::kMaxPool2d;
      layer.pool = &pool->options;
    } else if (auto softplus = std::dynamic_pointer_cast<torch::nn::SoftplusImpl>(module)) {
      layer.kind = Kind::kSoftplus;
      layer.softplus = &softplus->options;
    } else if (std::dynamic_pointer_cast<torch::nn::ReLUImpl>(module)) {
      layer.kind = Kind::kReLU;
    } else if (auto flatten = std::dynamic_pointer_cast<torch::nn::FlattenImpl>(module)) {
      if (flatten->options.start_dim() != 1 || flatten->options.end_dim() != -1) {
        refuse(j, *module, "flattens other dimensions than 1 to the end");
      }
      layer.kind = Kind::kFlatten;
    } else {
      refuse(j, *module, "is not supported (Conv2d, Linear, BatchNorm1d/2d, MaxPool2d, Softplus, ReLU, Flatten are)");
    }

    const auto named = module->named_parameters(/*recurse=*/false);
    if (!named.is_empty()) {
      // Weight first, then bias, as the layers register them (forward relies on it).
      if (named.begin()->key() != "weight") refuse(j, *module, "does not register its weight first");
      layer.first_parameter = static_cast<int>(parameters_.size());
      layer.has_bias = named.contains("bias");
      for (const auto& item : named) {
        std::vector<torch::Tensor> parts;
        for (const auto& chain : chains) parts.push_back(chain[j]->named_parameters(false)[item.key()]);
        parameters_.push_back(stack(parts, layout).detach().requires_grad_(true));
        parameter_slots_.push_back({layout, parts.front().sizes().vec()});
      }
    }
    if (layer.kind == Kind::kBatchNorm) {
      const auto buffers = module->named_buffers(/*recurse=*/false);
      if (buffers.contains("running_mean")) {
        layer.first_stat = static_cast<int>(running_.size());
        for (const char* name : {"running_mean", "running_var"}) {
          std::vector<torch::Tensor> parts;
          for (const auto& chain : chains) parts.push_back(chain[j]->named_buffers(false)[name]);
          running_.push_back(stack(parts, Layout::kConcatenated));
          running_slots_.push_back({Layout::kConcatenated, parts.front().sizes().vec()});
        }
        if (*layer.batch_norm->momentum() != 1.0) replaces_running_stats_ = false;
      }
    }
    layers_.push_back(layer);
  }
  if (parameters_.size() != members.front()->parameters().size()) {
    throw std::invalid_argument("stacked members: the model has parameters outside its layers");
  }
}

torch::Tensor StackedMembers::stack(const std::vector<torch::Tensor>& parts, Layout layout) const {
  return layout == Layout::kConcatenated ? torch::cat(parts, 0) : torch::stack(parts, 0);
}

torch::Tensor StackedMembers::slice(const torch::Tensor& stacked, const Slot& slot, int64_t k) const {
  if (!stacked.defined()) return stacked;
  TORCH_CHECK(k >= 0 && k < members_, "stacked members: member ", k, " of ", members_);
  if (slot.layout == Layout::kStacked) return stacked.select(0, k);
  const int64_t n = slot.member_shape.front();
  return stacked.narrow(0, k * n, n);
}

torch::Tensor StackedMembers::member_slice(size_t i, int64_t k, bool grad) const {
  TORCH_CHECK(i < parameters_.size(), "stacked members: parameter ", i, " of ", parameters_.size());
  return slice(grad ? parameters_[i].grad() : parameters_[i], parameter_slots_[i], k);
}

std::vector<torch::Tensor> StackedMembers::member_running_stats(int64_t k) const {
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < running_.size(); ++i) out.push_back(slice(running_[i], running_slots_[i], k));
  return out;
}

void StackedMembers::to(torch::Device device, bool channels_last) {
  TORCH_CHECK(!values_.defined(), "stacked members: to() after use_flat_buffers()");
  torch::NoGradGuard no_grad;
  channels_last_ = channels_last;
  for (auto& p : parameters_) {
    auto moved = p.detach().to(device);
    if (channels_last && moved.dim() == 4) moved = moved.contiguous(torch::MemoryFormat::ChannelsLast);
    p = moved.requires_grad_(true);
  }
  for (auto& r : running_) r = r.to(device);
}

namespace {

// Moves `tensors` into one new flat buffer of their dtype and device (each
// becoming a view into it, through set_data), and returns the buffer with
// the K x (total / K) table of positions of Note [Stacked flat buffers]:
// tensor i holds K equal parts, one per member.
std::pair<torch::Tensor, torch::Tensor> into_flat_buffer(std::vector<torch::Tensor>& tensors, int64_t K) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  const auto options = tensors.front().options();
  const auto index = torch::TensorOptions().dtype(torch::kLong);
  torch::Tensor buffer = torch::empty({total}, options);
  torch::Tensor positions = torch::empty({K, total / K}, index);
  int64_t offset = 0;
  for (auto& t : tensors) {
    const int64_t n = t.numel();
    const int64_t part = n / K;
    torch::Tensor slot = buffer.narrow(0, offset, n);
    slot.copy_(t.reshape({n}));
    t.set_data(slot.view(t.sizes()));
    positions.narrow(1, offset / K, part)
        .copy_(torch::arange(K, index).unsqueeze(1) * part + offset + torch::arange(part, index));
    offset += n;
  }
  return {buffer, positions.to(options.device())};
}

void check_flat(const torch::Tensor& flat, const torch::Tensor& positions, const char* what) {
  TORCH_CHECK(flat.dim() == 1 && flat.is_contiguous() && flat.numel() == positions.size(1), "stacked members: ",
              what, " must be a contiguous vector of ", positions.size(1), " values, got ", flat.sizes());
}

}  // namespace

void StackedMembers::use_flat_buffers() {
  TORCH_CHECK(!values_.defined(), "stacked members: use_flat_buffers() twice");
  TORCH_CHECK(!channels_last_, "stacked members: flat buffers hold contiguous weights, not channels-last ones");
  torch::NoGradGuard no_grad;
  std::tie(values_, positions_) = into_flat_buffer(parameters_, members_);
  grads_ = torch::zeros_like(values_);
  int64_t offset = 0;
  for (auto& p : parameters_) {
    p.mutable_grad() = grads_.narrow(0, offset, p.numel()).view(p.sizes());
    offset += p.numel();
  }
  if (!running_.empty()) std::tie(stats_, stat_positions_) = into_flat_buffer(running_, members_);
}

void StackedMembers::load_member(int64_t k, const torch::Tensor& flat) {
  TORCH_CHECK(values_.defined(), "stacked members: load_member() before use_flat_buffers()");
  check_flat(flat, positions_, "a member's parameters");
  torch::NoGradGuard no_grad;
  values_.index_copy_(0, positions_[k], flat);
}

void StackedMembers::read_member_gradient(int64_t k, torch::Tensor& flat_grad) const {
  TORCH_CHECK(grads_.defined(), "stacked members: read_member_gradient() before use_flat_buffers()");
  check_flat(flat_grad, positions_, "a member's gradient");
  torch::NoGradGuard no_grad;
  at::index_select_out(flat_grad, grads_, 0, positions_[k]);
}

void StackedMembers::load_member_stats(int64_t k, const torch::Tensor& flat_stats) {
  if (!stats_.defined()) return;
  check_flat(flat_stats, stat_positions_, "a member's running statistics");
  torch::NoGradGuard no_grad;
  stats_.index_copy_(0, stat_positions_[k], flat_stats);
}

void StackedMembers::read_member_stats(int64_t k, torch::Tensor& flat_stats) const {
  if (!stats_.defined()) return;
  check_flat(flat_stats, stat_positions_, "a member's running statistics");
  torch::NoGradGuard no_grad;
  at::index_select_out(flat_stats, stats_, 0, stat_positions_[k]);
}

void StackedMembers::zero_grad() {
  TORCH_CHECK(grads_.defined(), "stacked members: zero_grad() before use_flat_buffers()");
  grads_.zero_();
}

void StackedMembers::clear_member(int64_t k) {
  TORCH_CHECK(values_.defined(), "stacked members: clear_member() before use_flat_buffers()");
  torch::NoGradGuard no_grad;
  values_.index_fill_(0, positions_[k], 0.0);
  if (stats_.defined()) stats_.index_fill_(0, stat_positions_[k], 0.0);
}

torch::Tensor StackedMembers::flatten_running_stats(Classifier& member) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> stats;
  for (const auto& module : leaves(member)) {
    if (batch_norm_options(*module) == nullptr) continue;
    const auto buffers = module->named_buffers(/*recurse=*/false);
    if (!buffers.contains("running_mean")) continue;
    for (const char* name : {"running_mean", "running_var"}) stats.push_back(buffers[name]);
  }
  if (stats.empty()) return {};
  return into_flat_buffer(stats, 1).first;
}

torch::Tensor StackedMembers::forward(const torch::Tensor& images) {
  TORCH_CHECK(images.dim() >= 3 && images.size(0) == members_, "stacked members: images must be ", members_,
              " x B x (input shape), got ", images.sizes());
  const int64_t K = members_;
  const int64_t B = images.size(1);
  // Spatial: B x (K*C) x H x W. Flat: B x K x F (possibly a strided view).
  bool spatial = images.dim() == 5;
  torch::Tensor x;
  if (spatial) {
    x = images.transpose(0, 1).reshape({B, K * images.size(2), images.size(3), images.size(4)});
    if (channels_last_) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  } else {
    TORCH_CHECK(images.dim() == 3, "stacked members: images must be K x B x C x H x W or K x B x F, got ",
                images.sizes());
    x = images.transpose(0, 1);
  }
  double flops = 0;  // per member and example: 2 per multiply-add of the convolutions and products
  for (size_t j = 0; j < layers_.size(); ++j) {
    const Layer& layer = layers_[j];
    const torch::Tensor weight = layer.first_parameter >= 0 ? parameters_[layer.first_parameter] : torch::Tensor();
    const torch::Tensor bias = layer.has_bias ? parameters_[layer.first_parameter + 1] : torch::Tensor();
    const bool needs_spatial = layer.kind == Kind::kConv2d || layer.kind == Kind::kMaxPool2d;
    if (needs_spatial && !spatial) refuse(j, *layer.module, "needs images but follows a flattening");
    switch (layer.kind) {
      case Kind::kConv2d: {
        const auto& o = *layer.conv;
        x = F::conv2d(x, weight, F::Conv2dFuncOptions().bias(bias).stride(o.stride()).padding(o.padding())
                                     .dilation(o.dilation()).groups(K * o.groups()));
        flops += 2.0 * static_cast<double>(x.numel() / (B * K)) * static_cast<double>(weight[0].numel());
        break;
      }
      case Kind::kLinear: {
        if (spatial) refuse(j, *layer.module, "follows image layers without a Flatten");
        const auto xk = x.transpose(0, 1);  // K x B x in
        const auto y = bias.defined() ? torch::baddbmm(bias.unsqueeze(1), xk, weight.transpose(1, 2))
                                      : torch::bmm(xk, weight.transpose(1, 2));
        x = y.transpose(0, 1);
        flops += 2.0 * static_cast<double>(weight[0].numel());
        break;
      }
      case Kind::kBatchNorm: {
        const bool bn1 = layer.batch_norm_1d;
        const auto& o = *layer.batch_norm;
        if (bn1 && spatial) refuse(j, *layer.module, "is a BatchNorm1d on images");
        if (!bn1 && !spatial) refuse(j, *layer.module, "is a BatchNorm2d after a flattening");
        const torch::Tensor mean = layer.first_stat >= 0 ? running_[layer.first_stat] : torch::Tensor();
        const torch::Tensor var = layer.first_stat >= 0 ? running_[layer.first_stat + 1] : torch::Tensor();
        // The functional options' momentum is an optional up to LibTorch 2.6
        // and a double in 2.14; a plain double (set: refused above where it
        // is not) fits both.
        const double momentum = *o.momentum();
        auto options = F::BatchNormFuncOptions().weight(weight).bias(bias).eps(o.eps())
                           .momentum(momentum).training(training_ || !mean.defined());
        if (spatial) {
          x = F::batch_norm(x, mean, var, options);
        } else {
          const int64_t features = x.size(2);
          x = F::batch_norm(x.reshape({B, K * features}), mean, var, options).view({B, K, features});
        }
        break;
      }
      case Kind::kMaxPool2d: {
        const auto& o = *layer.pool;
        x = F::max_pool2d(x, F::MaxPool2dFuncOptions(o.kernel_size()).stride(o.stride()).padding(o.padding())
                                 .dilation(o.dilation()).ceil_mode(o.ceil_mode()));
        break;
      }
      case Kind::kSoftplus: {
        const auto& o = *layer.softplus;
        x = F::softplus(x, F::SoftplusFuncOptions().beta(o.beta()).threshold(o.threshold()));
        break;
      }
      case Kind::kReLU:
        x = torch::relu(x);
        break;
      case Kind::kFlatten:
        if (spatial) x = x.reshape({B, K, -1});
        spatial = false;
        break;
    }
  }
  TORCH_CHECK(!spatial, "stacked members: the model ends without flattening its images");
  forward_flops_ = flops;
  return x.transpose(0, 1).contiguous();
}

}  // namespace bnn::models
