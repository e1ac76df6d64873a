#include "samplers/nogin.h"

#include <cmath>
#include <tuple>

namespace bnn::samplers {

Nogin::Nogin(GradientOracle& oracle, torch::Tensor anchor, LangevinOptions options, uint64_t seed)
    : KineticLangevin(oracle, std::move(anchor), std::move(options), seed) {
  TORCH_CHECK(oracle.has_per_example_gradients(),
              "sampler nogin needs per-example gradients to estimate the gradient-noise covariance, and this "
              "gradient oracle does not provide them");
  const double h = options_.step_size(), T = options_.temperature();
  const double nm = static_cast<double>(oracle.num_batches());
  lambda2_ = std::tanh(options_.friction() * h / 2);
  lambda_ = std::sqrt(lambda2_);
  noise_scale_ = h * h * nm * (nm - 1) / (4 * T * T);
  allocate_noise({x_.numel()});
  kick_ = torch::empty_like(x_);
  mean_ = torch::empty_like(x_);
  scratch_ = torch::empty_like(x_);
}

std::string Nogin::pretty_string() const {
  return describe("Nogin", "covariance=" + to_string(options_.noise_covariance()));
}

void Nogin::damp_diagonal(torch::Tensor& v, torch::Tensor& centred, double lambda2, double c,
                          torch::Tensor& scratch) {
  // s = lambda2 + c sum_i D_i^2; v <- (2 / (1 + s) - 1) v, elementwise.
  centred.mul_(centred);
  at::sum_out(scratch, centred, {0});
  scratch.mul_(c).add_(1.0 + lambda2).reciprocal_().mul_(2.0).sub_(1.0);
  v.mul_(scratch);
}

void Nogin::damp_low_rank(torch::Tensor& v, const torch::Tensor& centred, double lambda2, double c,
                          torch::Tensor& scratch) {
  // q = (a I + c D^T D)^{-1} v = (v - c D^T M^{-1} D v) / a, M = a I + c D D^T;
  // v <- 2 q - v = (2/a - 1) v - (2c/a) D^T M^{-1} D v.
  const double a = 1.0 + lambda2;
  const int64_t n = centred.size(0);
  torch::Tensor m = torch::mm(centred, centred.t()).to(torch::kDouble).mul_(c);
  m.diagonal().add_(a);
  torch::Tensor factor = std::get<0>(at::linalg_cholesky_ex(m));
  torch::Tensor w = torch::mv(centred, v).to(torch::kDouble).reshape({n, 1});
  // Two triangular solves: unlike cholesky_solve they check no info flags (no host synchronisation).
  torch::Tensor y = at::linalg_solve_triangular(factor, w, /*upper=*/false);
  torch::Tensor z = at::linalg_solve_triangular(factor.t(), y, /*upper=*/true).reshape({n}).to(centred.dtype());
  at::mv_out(scratch, centred.t(), z);
  v.mul_(2.0 / a - 1.0).sub_(scratch, 2.0 * c / a);
}

torch::Tensor Nogin::do_step() {
  const double h = options_.step_size();
  x_.add_(v_, h / 2);
  bounce();
  torch::Tensor loss, rows;
  const torch::Tensor& force = gradient_.evaluate_per_example(order_.next(), rows, &loss);
  const int64_t n = rows.size(0);
  TORCH_CHECK(n >= 2, "sampler nogin needs at least 2 examples per batch to estimate the gradient-noise "
                      "covariance, got ", n);
  const double c = noise_scale_ * static_cast<double>(n) / static_cast<double>(n - 1);
  at::mean_out(mean_, rows, {0});
  rows.sub_(mean_);
  draw_noise();
  // kick = -(h/2) G + lambda R, as (G + (-2 lambda / h) R) * (-h/2): two passes, no allocation.
  torch::add_out(kick_, force, noise_, -2.0 * lambda_ / h).mul_(-h / 2);
  v_.add_(kick_);
  if (options_.noise_covariance() == NoiseCovariance::kDiagonal) {
    damp_diagonal(v_, rows, lambda2_, c, scratch_);
  } else {
    damp_low_rank(v_, rows, lambda2_, c, scratch_);
  }
  v_.add_(kick_);
  x_.add_(v_, h / 2);
  bounce();
  return loss;
}

}  // namespace bnn::samplers
