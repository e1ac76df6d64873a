#include "samplers/stochastic_gradient.h"

namespace bnn::samplers {

StochasticGradient::StochasticGradient(GradientOracle& oracle, torch::Tensor anchor, const LangevinOptions& options)
    : oracle_(oracle),
      anchor_(std::move(anchor)),
      estimator_(options.estimator()),
      anchor_mode_(options.anchor_gradients()) {
  torch::NoGradGuard no_grad;
  options.validate();
  const torch::Tensor x = oracle_.parameters();
  TORCH_CHECK(anchor_.sizes().equals(x.sizes()), "anchor has shape ", anchor_.sizes(), " but parameters have ",
              x.sizes());
  const int64_t num_batches = oracle_.num_batches();
  const double temperature = options.temperature();
  data_scale_ = static_cast<double>(num_batches) / temperature;

  const double loc = options.localized() ? 1.0 / (options.rho() * options.rho()) : 0.0;
  temperature_ = temperature;
  localization_ = loc;
  diag_ = (oracle_.prior_mask().to(x.dtype()) * options.prior_precision() + loc) / temperature;
  offset_ = anchor_ * (loc / temperature);

  if (estimator_ == GradientEstimator::kControlVariate) {
    TORCH_CHECK(x.equal(anchor_), "the control variate needs the parameters at x* when the sampler starts");
    if (anchor_mode_ == AnchorGradients::kStored) {
      anchor_grads_ = torch::empty({num_batches, x.numel()}, x.options());
    }
    // offset = x*/rho^2 - S*, both over T.
    offset_.sub_(anchor_sum(), 1.0 / temperature);
    if (anchor_mode_ == AnchorGradients::kRecomputed) saved_x_ = torch::empty_like(x);
  }
  force_ = torch::empty_like(x);
}

torch::Tensor StochasticGradient::anchor_sum() {
  const torch::Tensor x = oracle_.parameters();
  torch::Tensor sum = torch::zeros_like(x);
  for (int64_t b = 0; b < oracle_.num_batches(); ++b) {
    oracle_.evaluate(b);
    const torch::Tensor g = oracle_.gradient();
    sum.add_(g);
    if (anchor_grads_.defined()) anchor_grads_[b].copy_(g);
  }
  return sum;
}

void StochasticGradient::resum_anchor() {
  if (estimator_ != GradientEstimator::kControlVariate) return;
  torch::NoGradGuard no_grad;
  TORCH_CHECK(!anchor_grads_.defined(), "stored anchor gradients belong to fixed batches: recompute them");
  const torch::Tensor x = oracle_.parameters();
  const torch::Tensor here = x.clone();
  x.copy_(anchor_);
  const torch::Tensor sum = anchor_sum();
  x.copy_(here);
  // In place: fused passes may hold offset_'s storage.
  offset_.copy_(anchor_ * (localization_ / temperature_)).sub_(sum, 1.0 / temperature_);
}

int64_t StochasticGradient::anchor_bytes() const {
  return anchor_grads_.defined() ? anchor_grads_.numel() * anchor_grads_.element_size() : 0;
}

torch::Tensor StochasticGradient::potential(torch::Tensor* data_loss) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = oracle_.parameters();
  torch::Tensor data = torch::zeros({}, x.options().dtype(torch::kDouble));
  for (int64_t b = 0; b < oracle_.num_batches(); ++b) data.add_(oracle_.loss(b).to(torch::kDouble));
  if (data_loss) *data_loss = data;
  // diag_ * T - 1/rho^2 is lambda m; both quadratic terms summed in double.
  const torch::Tensor xd = x.to(torch::kDouble);
  const torch::Tensor prior = ((diag_.to(torch::kDouble) * temperature_ - localization_) * xd * xd).sum();
  torch::Tensor f = data + 0.5 * prior;
  if (localization_ > 0) f = f + 0.5 * localization_ * (xd - anchor_.to(torch::kDouble)).pow(2).sum();
  return f / temperature_;
}

const torch::Tensor& StochasticGradient::evaluate(int64_t b, torch::Tensor* loss) {
  return evaluate_impl(b, nullptr, loss);
}

const torch::Tensor& StochasticGradient::evaluate_per_example(int64_t b, torch::Tensor& rows, torch::Tensor* loss) {
  return evaluate_impl(b, &rows, loss);
}

detail::ForceTerms StochasticGradient::evaluate_terms(int64_t b, torch::Tensor* loss) {
  torch::NoGradGuard no_grad;
  torch::Tensor x = oracle_.parameters();
  const bool control_variate = estimator_ == GradientEstimator::kControlVariate;
  const bool recomputed = control_variate && anchor_mode_ == AnchorGradients::kRecomputed;
  detail::ForceTerms terms;
  if (recomputed) {  // diag x - (N_m/T) g*_b, as evaluate_impl forms it in force_
    evaluate_at_anchor(b, /*rows=*/false);
    if (!partial_.defined()) partial_ = torch::empty_like(x);
    torch::mul_out(partial_, diag_, x);
    partial_.sub_(oracle_.gradient(), data_scale_);
    terms.mode = detail::ForceMode::kPartial;
    terms.partial = partial_.data_ptr<float>();
  } else if (anchor_grads_.defined()) {
    terms.mode = detail::ForceMode::kStoredAnchors;
    terms.anchor_grad = anchor_grads_.data_ptr<float>() + b * anchor_grads_.size(1);
  }
  torch::Tensor l = oracle_.evaluate(b);
  if (loss) *loss = l;
  gradient_ = oracle_.gradient();
  TORCH_CHECK(gradient_.is_contiguous() && gradient_.scalar_type() == torch::kFloat && gradient_.device() == x.device(),
              "fused sampler passes need a contiguous float32 gradient on the parameters' device");
  terms.diag = diag_.data_ptr<float>();
  terms.offset = offset_.data_ptr<float>();
  terms.grad = gradient_.data_ptr<float>();
  terms.scale = static_cast<float>(data_scale_);
  terms.minus_scale = static_cast<float>(-data_scale_);
  return terms;
}

// At x*: g*_b (left in the oracle's gradient) and, with `rows`, the
// per-example anchor rows (copied to anchor_rows_). Swaps x* in, evaluates,
// and puts x back.
void StochasticGradient::evaluate_at_anchor(int64_t b, bool rows) {
  torch::Tensor x = oracle_.parameters();
  if (!saved_x_.defined()) saved_x_ = torch::empty_like(x);
  saved_x_.copy_(x);
  x.copy_(anchor_);
  if (rows) {
    oracle_.evaluate_per_example(b);
    const torch::Tensor anchor_rows = oracle_.per_example_gradients();
    if (!anchor_rows_.defined() || !anchor_rows_.sizes().equals(anchor_rows.sizes())) {
      anchor_rows_ = torch::empty_like(anchor_rows);
    }
    anchor_rows_.copy_(anchor_rows);
  } else {
    oracle_.evaluate(b);
  }
  x.copy_(saved_x_);
}

const torch::Tensor& StochasticGradient::evaluate_impl(int64_t b, torch::Tensor* rows, torch::Tensor* loss) {
  torch::NoGradGuard no_grad;
  torch::Tensor x = oracle_.parameters();
  const bool control_variate = estimator_ == GradientEstimator::kControlVariate;
  const bool recomputed = control_variate && anchor_mode_ == AnchorGradients::kRecomputed;
  if (recomputed || (control_variate && rows)) evaluate_at_anchor(b, rows != nullptr);
  torch::mul_out(force_, diag_, x);
  if (recomputed) force_.sub_(oracle_.gradient(), data_scale_);
  torch::Tensor l = rows ? oracle_.evaluate_per_example(b) : oracle_.evaluate(b);
  if (loss) *loss = l;
  force_.add_(oracle_.gradient(), data_scale_).sub_(offset_);
  if (anchor_grads_.defined()) force_.sub_(anchor_grads_[b], data_scale_);
  if (rows) {
    *rows = oracle_.per_example_gradients();
    if (control_variate) rows->sub_(anchor_rows_);
  }
  return force_;
}

}  // namespace bnn::samplers
