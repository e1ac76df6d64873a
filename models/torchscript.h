// A classifier written in PyTorch and saved with torch.jit.script or
// torch.jit.trace (model.name torchscript, model.path FILE.pt).
//
// Note [TorchScript models]
// - The module's parameters and buffers are the tensors its code computes
//   with; they are registered a second time, under their PyTorch names
//   ("0.weight", "features.1.running_mean"), in a tree of plain modules
//   mirroring the script module's. FlatParameters, checkpoints, stored samples
//   and the prior (biases told apart by name) therefore see it exactly as a
//   built-in model, and re-pointing a parameter into the flat buffer
//   re-points the script module's too (set_data keeps the tensor object).
// - Initialisation from the seed (model.init seed): every parameter of two or
//   more dimensions named "<layer>.weight" and its "<layer>.bias" are redrawn
//   from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = numel / size(0):
//   PyTorch's default for Linear and Conv layers, so members start from
//   different points as with the built-in models. Other parameters
//   (BatchNorm's scale and shift) keep the file's values. model.init file
//   starts every member from the file's weights (say, a pre-trained network).
// - BatchNorm layers are the submodules holding tensors "running_mean" and
//   "running_var". Their momentum m is a constant compiled into the module's
//   code, so it cannot be set to 1 as for the built-in models (Note
//   [BatchNorm] in models/classifier.h). It is measured at load: one
//   train-mode forward from running statistics 0, one from 1, m = 1 - the
//   difference (num_batches_tracked reset to 0 each time, so that a layer with
//   momentum None, a cumulative average, measures 1); where the layer's
//   `momentum` attribute agrees, its exact value is used. Recalibration then
//   zeroes the statistics and num_batches_tracked, runs one train-mode forward
//   over the calibration images and divides by m: the statistics of those
//   images, as for the built-in models, up to one rounding when m != 1. A
//   layer the forward applies twice measures 1 - (1 - m)^2 and ends with a
//   blend of its two inputs' statistics, which no single value describes:
//   give each use a layer of its own.
// - Checks at load, each failing with one line naming the file: it exists and
//   is a script module with a forward method and float32 parameters; forward
//   on two inputs of the data set's shape returns a 2 x num_classes tensor;
//   every BatchNorm layer updates its statistics in train mode and uses
//   (without changing) them in eval mode. A module traced with BatchNorm fails
//   the last check, since tracing fixes the mode it was traced in: script it.
//
// Note [Tied and frozen parameters]: a tensor the module holds under two
// names (a layer assigned to two attributes, tied weights) is one parameter,
// under its first name in named_parameters order, as PyTorch's own
// parameters() counts it. A parameter saved with requires_grad False (a
// frozen, say pre-trained, layer) is not trained, sampled, redrawn or under
// the prior: the mirror leaves it out, so only the script module holds it, at
// the file's value (the run's copy, model.pt, restores it wherever the run is
// read again), and no checkpoint or stored sample repeats it. A BatchNorm
// layer held under two names is one layer.
// An error raised by the module's own code while training or predicting
// fails the member (a c10::Error, as any model's), naming the file.
// Inputs are N x C x H x W (N x D x 1 x 1 for feature arrays), as for every
// bnn model; dropout and other train-mode behaviour of the module's own code
// apply while training and sampling.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/script.h>
#include <torch/torch.h>

#include "models/classifier.h"

namespace bnn::models {

struct TorchScriptOptions {
  std::string path;
  std::vector<int64_t> input_shape;  // C, H, W of the data set
  int64_t num_classes = 0;
  bool init_from_file = false;  // model.init file; else redrawn (the caller seeds the global generator)
};

class TorchScriptClassifier : public Classifier {
 public:
  // Loads and checks the module (Note [TorchScript models]); throws
  // std::invalid_argument "model file PATH: what is wrong".
  explicit TorchScriptClassifier(const TorchScriptOptions& options);

  torch::Tensor forward(const torch::Tensor& images) override;
  std::string pretty_string() const override;
  bool has_batch_norm() override { return !batch_norms_.empty(); }
  void recalibrate(const torch::Tensor& images) override;

  void train(bool on = true) override;
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;

  // The measured momentum of each BatchNorm layer, in named_modules order.
  std::vector<double> batch_norm_momenta() const;
  torch::jit::Module& script_module() { return module_; }

 private:
  struct BatchNormLayer {
    std::string name;
    torch::Tensor running_mean, running_var, num_batches_tracked;  // the last may be undefined
    double momentum = 1.0;
  };

  void find_batch_norms();
  void measure_momenta(const torch::Tensor& probe);
  void check_eval_mode(const torch::Tensor& probe);
  void mirror_tensors();
  void redraw_weights();
  // module_.forward, an error of the module's own code made a c10::Error.
  c10::IValue call_forward(const torch::Tensor& images);
  [[noreturn]] void fail(const std::string& why) const;

  TorchScriptOptions options_;
  torch::jit::Module module_;
  std::vector<BatchNormLayer> batch_norms_;
  int64_t tied_ = 0;    // parameter names of a tensor already named (Note [Tied and frozen parameters])
  int64_t frozen_ = 0;  // parameters saved with requires_grad False
  std::vector<std::shared_ptr<torch::nn::Module>> mirror_;  // the plain modules of the mirror tree
};

}  // namespace bnn::models
