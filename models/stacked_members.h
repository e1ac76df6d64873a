// K members of one architecture evaluated as one model.
//
// Note [Stacked members]: one of the designs for training several members
// on one GPU (Note [Members per device] in src/runtime/device_streams.h is
// the one bnn run uses). A small network at batch 200 launches a few hundred
// short kernels per step; K members as K models launch K times as many. Here
// the K members' parameters are stacked so that every layer runs once for
// all of them:
//   - activations of convolutional layers are B x (K*C) x H x W, member k's
//     channels at [k*C, (k+1)*C): a convolution of the members is one
//     grouped convolution (groups = K x the member's groups) with the
//     members' weights concatenated along the output channels, and
//     BatchNorm2d, max-pooling and elementwise activations act per channel,
//     hence per member, unchanged;
//   - Flatten turns that into B x K x (C*H*W), which is each member's own
//     flattening; a Linear layer is one batched matrix product over the
//     members (weights K x out x in), and BatchNorm1d is one BatchNorm over
//     the K*F features;
//   - each member sees its own images: forward takes K x B x ... and returns
//     K x B x classes.
// BatchNorm's batch statistics are per channel over the batch, so each
// member's statistics are over its own images, as for the model alone. The
// sum of the members' losses has, for member k's slice of each stacked
// parameter, member k's own gradient. What is the same as the members run
// one by one is the arithmetic, not the bits: the grouped convolution and
// the batched product sum in their own order (tests/models/stacked_members_test.cpp
// compares in double precision to 1e-9 relative).
//
// Supported layers, the ones bnn's built-in models are made of: Conv2d
// (zero padding), Linear, BatchNorm1d/2d, MaxPool2d, Softplus, ReLU, Flatten
// (from dimension 1 to the end). A model is a chain of these in the order
// its modules were registered (Mlp and the paper's CNNs). Anything else is
// refused with the layer's name. bench/member_designs.cpp times this design
// against the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/classifier.h"

namespace bnn::models {

class StackedMembers {
 public:
  // Copies the parameters and buffers of `members` (K >= 1 models of one
  // architecture, on one device). Throws std::invalid_argument naming the
  // first layer it cannot stack or in which the members differ.
  explicit StackedMembers(const std::vector<std::shared_ptr<Classifier>>& members);

  int64_t members() const { return members_; }

  // images: K x B x (the model's input shape). Returns K x B x classes.
  torch::Tensor forward(const torch::Tensor& images);

  // Floating-point operations of the last forward pass per member and
  // example, counting a multiply-add of the convolutions and matrix products
  // as 2 (elementwise layers left out). A backward pass costs about twice
  // that.
  double forward_flops_per_example() const { return forward_flops_; }

  // The stacked parameters (leaves that require grad), one per parameter of
  // a member, in the order of the member's parameters().
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }

  // Member k's part of stacked parameter i (a view), in the shape of the
  // member's parameter i; with grad = true, of its gradient.
  torch::Tensor member_slice(size_t i, int64_t k, bool grad = false) const;

  // Member k's part of every BatchNorm running statistic, in the order of
  // the member's buffers() (num_batches_tracked, which BatchNorm with a
  // momentum does not use, is left out).
  std::vector<torch::Tensor> member_running_stats(int64_t k) const;

  // Train mode: batch statistics, which also replace the running ones with
  // momentum 1.0. Eval mode: the running statistics.
  void train(bool on = true) { training_ = on; }

  // Moves the stacked tensors to `device`; with channels_last, the
  // convolution weights are laid out channels-last (the caller passes
  // channels-last images). Not after use_flat_buffers().
  void to(torch::Device device, bool channels_last = false);

  // Note [Stacked flat buffers]: a member's parameters live in one flat
  // vector (models/flat_parameters.h, the order of parameters()), and
  // copying it into the stacked tensors parameter by parameter would launch
  // one kernel per parameter and member, as many as the forward pass has. So
  // the stacked parameters become views into one buffer (their gradients
  // into another, the running statistics into a third), and a table of
  // positions says where each coordinate of member k's flat vector lies in
  // it: member k's part of stacked parameter i, which starts at K * m_i
  // (m_i: parameter i's offset in a member's flat vector), is at
  // K * m_i + k * n_i (n_i: its size), whether the members are concatenated
  // or stacked along dimension 0. Then a member goes in, and its gradient
  // comes out, with one indexed copy each. Call once, after to().
  void use_flat_buffers();
  // Member k's flat parameters (d values, the order of a member's
  // parameters()) into its parts of the stacked parameters.
  void load_member(int64_t k, const torch::Tensor& flat);
  // Member k's part of the stacked gradient into `flat_grad` (d values).
  void read_member_gradient(int64_t k, torch::Tensor& flat_grad) const;
  // Member k's running statistics, flattened in member_running_stats(k)'s
  // order, in and out (see flatten_running_stats).
  void load_member_stats(int64_t k, const torch::Tensor& flat_stats);
  void read_member_stats(int64_t k, torch::Tensor& flat_stats) const;
  // Zeroes the stacked gradient (the backward pass adds to it).
  void zero_grad();
  // Member k's parameters and running statistics set to zero.
  void clear_member(int64_t k);
  // True where a training forward pass replaces every running statistic
  // (every BatchNorm has momentum 1, as bnn's models have): the members'
  // running statistics need not be loaded before it.
  bool replaces_running_stats() const { return replaces_running_stats_; }

  // Moves `member`'s BatchNorm running means and variances (the order of
  // member_running_stats) into one flat buffer and returns it, the buffers
  // becoming views into it, as FlatParameters does with the parameters.
  // Undefined if it has none.
  static torch::Tensor flatten_running_stats(Classifier& member);

 private:
  enum class Kind { kConv2d, kLinear, kBatchNorm, kMaxPool2d, kSoftplus, kReLU, kFlatten };
  struct Layer {
    Kind kind;
    std::shared_ptr<torch::nn::Module> module;  // member 0's; the options below point into it
    const torch::nn::detail::ConvNdOptions<2>* conv = nullptr;
    const torch::nn::BatchNormOptions* batch_norm = nullptr;
    bool batch_norm_1d = false;
    const torch::nn::MaxPool2dOptions* pool = nullptr;
    const torch::nn::SoftplusOptions* softplus = nullptr;
    int first_parameter = -1;                   // index into parameters_ (weight, then bias)
    bool has_bias = false;
    int first_stat = -1;                        // index into running_ (mean, then var)
  };
  enum class Layout { kConcatenated, kStacked };  // along dimension 0 of the member's tensor / a new one
  struct Slot {
    Layout layout;
    std::vector<int64_t> member_shape;
  };

  torch::Tensor stack(const std::vector<torch::Tensor>& parts, Layout layout) const;
  torch::Tensor slice(const torch::Tensor& stacked, const Slot& slot, int64_t k) const;

  int64_t members_ = 0;
  bool training_ = true;
  bool channels_last_ = false;
  double forward_flops_ = 0;
  std::vector<Layer> layers_;
  std::vector<torch::Tensor> parameters_;
  std::vector<Slot> parameter_slots_;
  std::vector<torch::Tensor> running_;
  std::vector<Slot> running_slots_;
  bool replaces_running_stats_ = true;
  // Note [Stacked flat buffers]; undefined until use_flat_buffers().
  torch::Tensor values_, grads_, stats_;
  torch::Tensor positions_;        // K x d: member k's coordinate j lies at values_[positions_[k][j]]
  torch::Tensor stat_positions_;   // K x s, likewise for stats_
};

}  // namespace bnn::models
