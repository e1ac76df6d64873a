// Note [Buffered passes] on a GPU: bnn's CUDA kernels make the same steps as
// the tensor operations, for every sampler that has them, every way of
// forming the force, with bounces. Both paths draw the same normals from the
// chain's CUDA generator; ATen's CUDA kernels may round a few operations
// differently, so the chains agree to float rounding, not to the bit.
// Skips, visibly, without a GPU or without the kernels built.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "samplers/fused_step.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/registry.h"
#include "tests/samplers/force_forms.h"
#include "tests/samplers/quadratic_oracle.h"

namespace bnn::samplers {
namespace {

TEST(CudaSamplers, BufferedPassesAgreeWithTheTensorOperations) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible: bnn's CUDA kernels did not run";
  if (!cuda_kernels_built()) {
    GTEST_SKIP() << "bnn was built without its CUDA kernels (cmake/cuda_kernels.cmake): they did not run";
  }
  const torch::Device cuda(torch::kCUDA, 0);
  constexpr int64_t kDim = 100003;
  constexpr double kAnchor = 0.3, kBox = 0.4;
  for (const auto& name : sampler_names()) {
    if (!testing::has_fused_step(name)) continue;
    for (const testing::Estimator& e : testing::kEstimators) {
      SCOPED_TRACE(name + ", " + e.name);
      torch::Tensor mask = torch::zeros({kDim}, torch::kDouble);
      mask.narrow(0, 0, kDim / 2).fill_(1.0);
      testing::QuadraticOracle a(kDim, {1.0, 2.0, 0.5, 1.5}, {-1.0, 0.5, 2.0, 0.0}, mask, kAnchor, cuda,
                                 torch::kFloat);
      testing::QuadraticOracle b(kDim, {1.0, 2.0, 0.5, 1.5}, {-1.0, 0.5, 2.0, 0.0}, mask, kAnchor, cuda,
                                 torch::kFloat);
      auto options = LangevinOptions(0.05).friction(2.0).rho(0.3).rho_max(kBox).estimator(e.estimator)
                         .anchor_gradients(e.anchors);
      if (name == "csghmc") options.cycle_length(4);
      const torch::Tensor anchor = torch::full({kDim}, kAnchor, torch::TensorOptions(torch::kFloat).device(cuda));
      auto fused = make_sampler(name, a, anchor, options, 7);
      auto reference = make_sampler(name, b, anchor, options, 7);
      auto& kinetic = dynamic_cast<KineticLangevin&>(*fused);
      ASSERT_EQ(kinetic.fused_path(), "buffered passes on cuda:0");
      ASSERT_TRUE(kinetic.fused_steps());
      dynamic_cast<KineticLangevin&>(*reference).set_fused_steps(false);
      torch::NoGradGuard no_grad;
      fused->velocity().mul_(3.0);  // many coordinates leave the box: the bounces run
      reference->velocity().mul_(3.0);
      // The oracle's step loss is 0; its potential U = sum_b loss(b) follows the chains step by step.
      const auto potential = [](testing::QuadraticOracle& o) {
        double u = 0.0;
        for (int64_t k = 0; k < o.num_batches(); ++k) u += o.loss(k).item<double>();
        return u;
      };
      for (int step = 0; step < 6; ++step) {
        fused->step();
        reference->step();
        const double u_f = potential(a), u_r = potential(b);
        EXPECT_NEAR(u_f, u_r, 1e-4 * (1.0 + std::abs(u_r))) << "step " << step;
      }
      const double dx = (a.parameters() - b.parameters()).abs().max().item<double>();
      const double dv = (fused->velocity() - reference->velocity()).abs().max().item<double>();
      EXPECT_LE(dx, 1e-5);
      EXPECT_LE(dv, 1e-4);
      EXPECT_LE((a.parameters() - kAnchor).abs().max().item<double>(), kBox + 1e-6);
      EXPECT_TRUE(torch::isfinite(a.parameters()).all().item<bool>());
    }
  }
}

}  // namespace
}  // namespace bnn::samplers
