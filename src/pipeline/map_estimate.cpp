#include "src/pipeline/map_estimate.h"

namespace bnn::pipeline {

MapResult find_map(samplers::GradientOracle& oracle, const std::vector<torch::Tensor>& parameters,
                   int64_t num_examples, double prior_precision, const config::MapConfig& options) {
  TORCH_CHECK(num_examples > 0, "find_map: no training examples");
  torch::Tensor x = oracle.parameters();
  torch::Tensor g = oracle.gradient();
  const torch::Tensor mask = oracle.prior_mask().to(x.dtype());
  const double n = static_cast<double>(num_examples);
  const double prior_scale = prior_precision / n;
  torch::Tensor sum = torch::zeros_like(g);
  MapResult result;
  torch::Tensor mean_loss;
  // F(x) and its gradient into g (so into the parameters' .grad views).
  auto objective = [&]() -> torch::Tensor {
    ++result.evaluations;
    sum.zero_();
    torch::Tensor loss = torch::zeros({}, x.options().dtype(torch::kDouble));
    for (int64_t b = 0; b < oracle.num_batches(); ++b) {
      loss += oracle.evaluate(b).to(torch::kDouble);
      sum.add_(g);
    }
    torch::NoGradGuard no_grad;
    g.copy_(sum).div_(n).addcmul_(mask, x, prior_scale);
    mean_loss = loss / n;
    return (mean_loss + 0.5 * prior_scale * (mask * x * x).sum().to(torch::kDouble)).to(x.dtype());
  };
  torch::optim::LBFGSOptions lbfgs_options(1.0);
  lbfgs_options.max_iter(options.iterations)
      .max_eval(options.iterations * 5 / 4 + 1)
      .tolerance_grad(options.tolerance)
      .history_size(options.history)
      .line_search_fn("strong_wolfe");
  torch::optim::LBFGS lbfgs(parameters, lbfgs_options);
  lbfgs.step(objective);
  result.objective = objective().item<double>();
  result.mean_loss = mean_loss.item<double>();
  result.max_gradient = g.abs().max().item<double>();
  result.converged = result.max_gradient <= options.tolerance;
  return result;
}

}  // namespace bnn::pipeline
