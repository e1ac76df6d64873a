// An analytic target for sampler tests (ensmallen's problems/ idea): d
// independent one-dimensional chains held as one vector, with a potential
// split into N_m "minibatches",
//   U(x) = sum_b (a_b / 2) (x - m_b)^2,   evaluate(b) -> g_b = a_b (x - m_b),
// so that with prior precision lambda on the masked coordinates and
// localization 1/rho^2 around x*, the target is Gaussian with
//   precision P = sum_b a_b + lambda mask + 1/rho^2,
//   mean      = (sum_b a_b m_b + x*/rho^2) / P.
// Per-example gradients (for NOGIN): each batch holds two identical examples,
// rows g_b / 2, so the estimated gradient-noise covariance is zero.
#pragma once

#include <vector>

#include <torch/torch.h>

#include "samplers/gradient_oracle.h"

namespace bnn::testing {

class QuadraticOracle : public samplers::GradientOracle {
 public:
  // Parameters, gradients and the mask live on `device` (a CUDA device for
  // the GPU sampler tests).
  // float32 (`dtype`) exercises the fused sampler steps (Note [Fused steps]).
  QuadraticOracle(int64_t d, std::vector<double> a, std::vector<double> m, torch::Tensor mask, double start,
                  torch::Device device = torch::kCPU, torch::ScalarType dtype = torch::kDouble)
      : a_(std::move(a)), m_(std::move(m)), mask_(mask.to(device)) {
    x_ = torch::full({d}, start, torch::TensorOptions(dtype).device(device));
    g_ = torch::zeros_like(x_);
  }
  torch::Tensor parameters() override { return x_; }
  torch::Tensor gradient() override { return g_; }
  torch::Tensor prior_mask() override { return mask_; }
  int64_t num_batches() const override { return static_cast<int64_t>(a_.size()); }
  torch::Tensor evaluate(int64_t b) override {
    ++evaluations_;
    torch::sub_out(g_, x_, m_[b]).mul_(a_[b]);
    return torch::zeros({}, x_.options());
  }
  bool has_per_example_gradients() const override { return true; }
  torch::Tensor evaluate_per_example(int64_t b) override {
    torch::Tensor l = evaluate(b);
    rows_ = g_.div(2).unsqueeze(0).repeat({2, 1});
    return l;
  }
  torch::Tensor per_example_gradients() override { return rows_; }
  // sum over coordinates of (a_b / 2) (x - m_b)^2, so that sum_b loss(b) is U.
  torch::Tensor loss(int64_t b) override { return (x_ - m_[b]).pow(2).sum() * (a_[b] / 2); }

  double precision_sum() const {
    double s = 0;
    for (double a : a_) s += a;
    return s;
  }
  double weighted_mean_sum() const {
    double s = 0;
    for (size_t b = 0; b < a_.size(); ++b) s += a_[b] * m_[b];
    return s;
  }
  int64_t evaluations() const { return evaluations_; }

 private:
  std::vector<double> a_, m_;
  torch::Tensor mask_, x_, g_, rows_;
  int64_t evaluations_ = 0;
};

}  // namespace bnn::testing
