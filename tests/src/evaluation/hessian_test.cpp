// Tests for src/evaluation/hessian.h: power iteration on quadratics with known
// spectra, and the model's double-backward Hessian-vector products against
// central differences of its gradient.
#include "src/evaluation/hessian.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "samplers/random.h"
#include "tests/support/error_text.h"

namespace bnn::evaluation {
namespace {

// H = Q diag(eigenvalues) Q^T with a random orthogonal Q (fixed seed).
torch::Tensor quadratic_hessian(const std::vector<double>& eigenvalues, uint64_t seed) {
  const auto d = static_cast<int64_t>(eigenvalues.size());
  auto gen = samplers::make_generator(torch::kCPU, seed);
  const torch::Tensor q = std::get<0>(torch::linalg_qr(torch::randn({d, d}, gen, torch::kDouble)));
  return q.matmul(torch::diag(torch::tensor(eigenvalues, torch::kDouble))).matmul(q.t());
}

// The loss 1/2 x^T H x has Hessian H, whatever x: H v by double backward of
// the loss itself, as log_posterior_hvp does for a network.
HessianVectorProduct quadratic_loss_hvp(const torch::Tensor& h) {
  return [h](const torch::Tensor& v) {
    const torch::Tensor x = torch::ones({h.size(0)}, torch::kDouble).requires_grad_(true);
    const torch::Tensor loss = 0.5 * x.dot(h.mv(x));
    const torch::Tensor g = torch::autograd::grad({loss}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    return torch::autograd::grad({g.dot(v)}, {x})[0];
  };
}

TEST(HessianSpectralNorm, QuadraticLossGivesItsLargestEigenvalue) {
  const torch::Tensor h = quadratic_hessian({10.0, 4.0, 2.0, 1.0, 0.5, -3.0, 0.1, 0.0}, /*seed=*/1);
  PowerIterationOptions power;
  power.max_iterations = 500;
  power.tolerance = 1e-12;
  const auto estimate = hessian_spectral_norm(quadratic_loss_hvp(h), 8, power,
                                              samplers::make_generator(torch::kCPU, 2));
  EXPECT_TRUE(estimate.converged);
  EXPECT_NEAR(estimate.spectral_norm, 10.0, 1e-8);
  EXPECT_NEAR(estimate.rayleigh, 10.0, 1e-8);
  // Also against LAPACK's eigenvalues of the same matrix.
  EXPECT_NEAR(estimate.spectral_norm, torch::linalg_eigvalsh(h).abs().max().item<double>(), 1e-8);
}

TEST(HessianSpectralNorm, DominantNegativeEigenvalueKeepsItsSign) {
  const torch::Tensor h = quadratic_hessian({2.0, 1.0, -7.0, 0.5}, /*seed=*/3);
  PowerIterationOptions power;
  power.max_iterations = 500;
  power.tolerance = 1e-12;
  const auto estimate = hessian_spectral_norm([&](const torch::Tensor& v) { return h.mv(v); }, 4, power,
                                              samplers::make_generator(torch::kCPU, 4));
  EXPECT_NEAR(estimate.spectral_norm, 7.0, 1e-8);
  EXPECT_NEAR(estimate.rayleigh, -7.0, 1e-8);
}

TEST(HessianSpectralNorm, StopsAtTheIterationLimit) {
  // H = 3 I: ||H v|| = 3 from the first product, but convergence needs two
  // agreeing iterations, so a limit of 1 reports none.
  PowerIterationOptions power;
  power.max_iterations = 1;
  const auto estimate = hessian_spectral_norm([](const torch::Tensor& v) { return v * 3.0; }, 5, power,
                                              samplers::make_generator(torch::kCPU, 5));
  EXPECT_FALSE(estimate.converged);
  EXPECT_EQ(estimate.iterations, 1);
  EXPECT_NEAR(estimate.spectral_norm, 3.0, 1e-12);
}

// Multinomial logistic regression as a Classifier, in double precision.
struct Softmax : models::Classifier {
  Softmax(int64_t inputs, int64_t classes) : linear(register_module("linear", torch::nn::Linear(inputs, classes))) {
    to(torch::kDouble);
  }
  torch::Tensor forward(const torch::Tensor& images) override { return linear(images.flatten(1)); }
  std::string pretty_string() const override { return "Softmax"; }
  torch::nn::Linear linear;
};

torch::Tensor flat_gradient(Softmax& model, const torch::Tensor& x, const torch::Tensor& y, double lambda,
                            double localization, const torch::Tensor& anchor, bool prior_on_biases = false) {
  model.zero_grad();
  const torch::Tensor w = model.linear->weight;
  torch::Tensor loss = torch::nn::functional::cross_entropy(
      model.forward(x), y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  loss = loss + 0.5 * lambda * w.pow(2).sum();
  if (prior_on_biases) loss = loss + 0.5 * lambda * model.linear->bias.pow(2).sum();
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.parameters()) flat.push_back(p.reshape({-1}));
  loss = loss + 0.5 * localization * (torch::cat(flat) - anchor).pow(2).sum();
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : model.parameters()) grads.push_back(p.grad().reshape({-1}).clone());
  return torch::cat(grads);
}

void set_flat(Softmax& model, const torch::Tensor& values) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& p : model.parameters()) {
    p.copy_(values.slice(0, offset, offset + p.numel()).view_as(p));
    offset += p.numel();
  }
}

TEST(LogPosteriorHvp, MatchesCentralDifferencesOfTheGradient) {
  torch::manual_seed(0);
  Softmax model(6, 3);
  auto gen = samplers::make_generator(torch::kCPU, 6);
  const torch::Tensor images = torch::randn({40, 1, 2, 3}, gen, torch::kDouble);
  const torch::Tensor labels = torch::remainder(torch::arange(40, torch::kLong), 3);
  const double lambda = 1.0, localization = 50.0;
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.parameters()) flat.push_back(p.detach().reshape({-1}).clone());
  const torch::Tensor x = torch::cat(flat);
  const torch::Tensor anchor = x + 0.01;
  const torch::Tensor v = torch::randn({x.numel()}, gen, torch::kDouble);

  // chunk 7 does not divide 40: the sum over chunks must still be exact.
  const auto hvp = log_posterior_hvp(model, images, labels, lambda, localization, /*chunk=*/7);
  const torch::Tensor hv = hvp(v);

  const double eps = 1e-5;
  set_flat(model, x + eps * v);
  const torch::Tensor plus = flat_gradient(model, images, labels, lambda, localization, anchor);
  set_flat(model, x - eps * v);
  const torch::Tensor minus = flat_gradient(model, images, labels, lambda, localization, anchor);
  set_flat(model, x);
  const torch::Tensor expected = (plus - minus) / (2 * eps);
  EXPECT_TRUE(torch::allclose(hv, expected, /*rtol=*/1e-6, /*atol=*/1e-6))
      << "max difference " << (hv - expected).abs().max().item<double>();

  // prior.biases: lambda v on the 3 bias entries too (they follow the 18 weights).
  const auto all = log_posterior_hvp(model, images, labels, lambda, localization, /*chunk=*/7,
                                     /*prior_on_biases=*/true)(v);
  EXPECT_TRUE(torch::allclose(all.slice(0, 0, 18), hv.slice(0, 0, 18), 0, 1e-12));
  EXPECT_TRUE(torch::allclose(all.slice(0, 18), hv.slice(0, 18) + lambda * v.slice(0, 18), 0, 1e-12));
  set_flat(model, x + eps * v);
  const torch::Tensor plus_all = flat_gradient(model, images, labels, lambda, localization, anchor, true);
  set_flat(model, x - eps * v);
  const torch::Tensor minus_all = flat_gradient(model, images, labels, lambda, localization, anchor, true);
  set_flat(model, x);
  EXPECT_TRUE(torch::allclose(all, (plus_all - minus_all) / (2 * eps), /*rtol=*/1e-6, /*atol=*/1e-6));
}

TEST(LogPosteriorHvp, BadInputIsRefused) {
  Softmax model(6, 3);
  const torch::Tensor images = torch::randn({4, 6}, torch::kDouble);
  using testing::error_of;
  EXPECT_NE(error_of([&] { log_posterior_hvp(model, images, torch::zeros({3}, torch::kLong), 1.0); })
                .find("same positive number of examples"),
            std::string::npos);
  const auto hvp = log_posterior_hvp(model, images, torch::zeros({4}, torch::kLong), 1.0);
  EXPECT_NE(error_of([&] { hvp(torch::zeros({5}, torch::kDouble)); }).find("flat vector of 21 entries"),
            std::string::npos);
}

}  // namespace
}  // namespace bnn::evaluation
