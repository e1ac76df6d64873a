#include "src/evaluation/hessian.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace bnn::evaluation {

SpectralNormEstimate hessian_spectral_norm(const HessianVectorProduct& hvp, int64_t dim,
                                           const PowerIterationOptions& power, at::Generator generator,
                                           const torch::TensorOptions& options) {
  TORCH_CHECK(dim >= 1, "power iteration needs dimension >= 1, got ", dim);
  TORCH_CHECK(power.max_iterations >= 1, "max_iterations must be at least 1, got ", power.max_iterations);
  TORCH_CHECK(power.tolerance > 0, "tolerance must be positive, got ", power.tolerance);
  torch::Tensor v = torch::randn({dim}, generator, options);
  v /= v.norm();
  SpectralNormEstimate estimate;
  double previous = 0;
  for (int64_t k = 1; k <= power.max_iterations; ++k) {
    const torch::Tensor w = hvp(v);
    TORCH_CHECK(w.sizes() == v.sizes(), "Hessian-vector product returned shape ", w.sizes(), " for a vector of ",
                v.sizes());
    const double norm = w.norm().item<double>();
    TORCH_CHECK(std::isfinite(norm), "Hessian-vector product is not finite at iteration ", k);
    estimate.spectral_norm = norm;
    estimate.rayleigh = v.dot(w).item<double>();
    estimate.iterations = k;
    if (norm == 0) {  // H v = 0: v is in the kernel; the zero matrix has norm 0
      estimate.converged = true;
      break;
    }
    if (k > 1 && std::abs(norm - previous) <= power.tolerance * norm) {
      estimate.converged = true;
      break;
    }
    previous = norm;
    v = w / norm;
  }
  return estimate;
}

HessianVectorProduct log_posterior_hvp(models::Classifier& model, const torch::Tensor& images,
                                       const torch::Tensor& labels, double prior_precision,
                                       double localization, int64_t chunk, bool prior_on_biases) {
  TORCH_CHECK(images.size(0) == labels.size(0) && images.size(0) > 0, "images (", images.sizes(), ") and labels (",
              labels.sizes(), ") must hold the same positive number of examples");
  return log_posterior_hvp(
      model, [images](int64_t start, int64_t n) { return images.slice(0, start, start + n); }, labels,
      prior_precision, localization, chunk, prior_on_biases);
}

HessianVectorProduct log_posterior_hvp(models::Classifier& model, InputSlice inputs, const torch::Tensor& labels,
                                       double prior_precision, double localization, int64_t chunk,
                                       bool prior_on_biases) {
  TORCH_CHECK(labels.dim() == 1 && labels.size(0) > 0, "labels (", labels.sizes(),
              ") must hold a positive number of examples");
  TORCH_CHECK(chunk >= 1, "chunk must be positive, got ", chunk);
  TORCH_CHECK(prior_precision >= 0 && localization >= 0, "prior precision (", prior_precision,
              ") and localization 1/rho^2 (", localization, ") must be non-negative");
  std::vector<torch::Tensor> params;
  std::vector<double> prior;  // lambda for x_w, 0 for biases unless prior_on_biases
  int64_t dim = 0;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    params.push_back(item.value());
    const std::string& name = item.key();
    const bool bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    prior.push_back(bias && !prior_on_biases ? 0.0 : prior_precision);
    dim += item.value().numel();
  }
  return [&model, inputs = std::move(inputs), labels, params, prior, dim, localization,
          chunk](const torch::Tensor& v) {
    TORCH_CHECK(v.dim() == 1 && v.numel() == dim, "Hessian-vector product needs a flat vector of ", dim,
                " entries, got shape ", v.sizes());
    // The quadratic terms have constant Hessians: lambda mask v and v / rho^2.
    std::vector<torch::Tensor> pieces;
    int64_t offset = 0;
    for (size_t j = 0; j < params.size(); ++j) {
      const int64_t n = params[j].numel();
      pieces.push_back(v.slice(0, offset, offset + n).view_as(params[j]).to(params[j].options()));
      offset += n;
    }
    std::vector<torch::Tensor> out;
    for (size_t j = 0; j < params.size(); ++j) {
      out.push_back(pieces[j] * (prior[j] + localization));
    }
    for (int64_t start = 0; start < labels.size(0); start += chunk) {
      const int64_t end = std::min(start + chunk, labels.size(0));
      const torch::Tensor loss = torch::nn::functional::cross_entropy(
          model.forward(inputs(start, end - start)), labels.slice(0, start, end),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
      const auto grads = torch::autograd::grad({loss}, params, /*grad_outputs=*/{}, /*retain_graph=*/true,
                                               /*create_graph=*/true);
      torch::Tensor dot = torch::zeros({}, loss.options());
      for (size_t j = 0; j < params.size(); ++j) dot = dot + (grads[j] * pieces[j]).sum();
      const auto hv = torch::autograd::grad({dot}, params, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                            /*create_graph=*/false, /*allow_unused=*/true);
      for (size_t j = 0; j < params.size(); ++j) {
        if (hv[j].defined()) out[j] += hv[j].detach();
      }
    }
    std::vector<torch::Tensor> flat;
    for (const auto& t : out) flat.push_back(t.reshape({-1}));
    return torch::cat(flat).to(v.options());
  };
}

}  // namespace bnn::evaluation
