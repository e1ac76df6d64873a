// No host synchronisation inside a sampling step or an Adam step. With
// CUDA's sync debug mode set to "error", any operation that makes the host
// wait for the GPU (an .item(), a blocking copy between host and device)
// throws. One epoch of SMS-UBU and of SGHMC on fmnist_cnn, with the control
// variate and bounces, the data and the chain on the GPU, must run through
// it, and so must the Adam and SWA phases' steps over the flat parameters.
// A host that waits inside a step serialises members that share a GPU
// (--members-per-device).
//
// Needs a CUDA LibTorch with c10/cuda's headers and the CUDA toolkit's
// (tests/CMakeLists.txt defines BNN_HAVE_C10_CUDA) and a visible GPU; skips,
// visibly, otherwise.
#include <cmath>
#include <memory>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#if defined(BNN_HAVE_C10_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/fused_step.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/registry.h"
#include "src/pipeline/model_oracle.h"
#include "src/pipeline/optimiser_phases.h"
#include "src/runtime/device_streams.h"

namespace bnn::pipeline {
namespace {

#if defined(BNN_HAVE_C10_CUDA)
// Sets the sync debug mode for its lifetime; restores "disabled" after.
struct SyncIsAnError {
  SyncIsAnError() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR); }
  ~SyncIsAnError() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED); }
};

data_loaders::Split random_images_on_the_gpu() {
  const torch::Device cuda(torch::kCUDA, 0);
  data_loaders::Split train;
  train.images = torch::randn({800, 1, 28, 28}).to(cuda);
  train.labels = torch::randint(10, {800}, torch::kLong).to(cuda);
  return train;
}

std::shared_ptr<models::Classifier> cnn_on_the_gpu() {
  models::ModelSpec spec;
  spec.name = "fmnist_cnn";
  auto model = models::make_model(spec, 2);
  model->to(torch::Device(torch::kCUDA, 0));
  return model;
}

// fmnist_cnn on cuda:0, with 800 random images on the GPU in 4 batches of 200.
struct OnTheGpu {
  data_loaders::Partition partition{random_images_on_the_gpu(), /*batch_size=*/200, /*seed=*/1};
  std::shared_ptr<models::Classifier> model = cnn_on_the_gpu();
  models::FlatParameters flat{*model};
  ModelOracle oracle{*model, flat, partition};
};
#endif

// Skips, visibly, without c10/cuda or a GPU; else sets up OnTheGpu.
class CudaSync : public ::testing::Test {
 protected:
  void SetUp() override {
#if !defined(BNN_HAVE_C10_CUDA)
    GTEST_SKIP() << "built without c10/cuda and CUDA toolkit headers: the host-synchronisation check did not run";
#else
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device visible: the host-synchronisation check did not run";
    }
    gpu_ = std::make_unique<OnTheGpu>();
#endif
  }
#if defined(BNN_HAVE_C10_CUDA)
  std::unique_ptr<OnTheGpu> gpu_;
#endif
};

TEST_F(CudaSync, SamplingStepsDoNotWaitForTheGpu) {
#if defined(BNN_HAVE_C10_CUDA)
  models::FlatParameters& flat = gpu_->flat;
  ModelOracle& oracle = gpu_->oracle;

  // The check is live: a read of a GPU value on the host throws.
  {
    SyncIsAnError guard;
    EXPECT_ANY_THROW(flat.values().sum().item<double>());
  }
  for (const std::string name : {"sms_ubu", "sghmc"}) {
    const torch::Tensor anchor = flat.values().clone();
    const auto options = samplers::LangevinOptions(1e-4).friction(7.0).rho(0.1).rho_max(0.6).prior_precision(50)
                             .estimator(samplers::GradientEstimator::kControlVariate);
    auto sampler = samplers::make_sampler(name, oracle, anchor, options, /*seed=*/3);  // anchor gradients: may sync
    if (samplers::cuda_kernels_built()) {  // then the steps checked are bnn's kernels (Note [Buffered passes])
      const auto* kinetic = dynamic_cast<const samplers::KineticLangevin*>(sampler.get());
      ASSERT_NE(kinetic, nullptr) << name;
      EXPECT_EQ(kinetic->fused_path(), "buffered passes on " + flat.values().device().str()) << name;
      EXPECT_TRUE(kinetic->fused_steps()) << name << ": the passes are made but not used (BNN_FUSED_STEPS=0?)";
    }
    torch::cuda::synchronize();
    {
      SyncIsAnError guard;
      try {
        for (int64_t i = 0; i < oracle.num_batches(); ++i) sampler->step();
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << ": a sampling step waited for the GPU: " << e.what();
      }
    }
    torch::cuda::synchronize();
    EXPECT_TRUE(torch::isfinite(flat.values()).all().item<bool>()) << name;
    EXPECT_FALSE(flat.values().equal(anchor)) << name;
    EXPECT_LE((flat.values() - anchor).abs().max().item<double>(), 0.6 + 1e-6) << name;
    torch::NoGradGuard no_grad;
    flat.values().copy_(anchor);
  }
#endif
}

// OptimiserPhases::epoch's step, as it runs it: the batch's gradient, the
// mean and the prior term on the flat gradient, the flat Adam's update. (The
// epoch's one read of the summed loss, after its last step, is not in here.)
TEST_F(CudaSync, AdamStepsDoNotWaitForTheGpu) {
#if defined(BNN_HAVE_C10_CUDA)
  models::FlatParameters& flat = gpu_->flat;
  ModelOracle& oracle = gpu_->oracle;
  auto adam = make_adam(flat, *gpu_->model, /*flat_layout=*/true, 1e-3);
  const torch::Tensor start = flat.values().clone();
  const torch::Tensor order = torch::randperm(oracle.num_batches(), torch::TensorOptions().dtype(torch::kLong));
  torch::Tensor loss_sum = torch::zeros({}, flat.values().options());
  torch::cuda::synchronize();
  {
    SyncIsAnError guard;
    try {
      for (int64_t i = 0; i < oracle.num_batches(); ++i) {
        loss_sum += oracle.evaluate(order[i].item<int64_t>());
        {
          torch::NoGradGuard no_grad;
          flat.grads().mul_(1.0 / 200).addcmul_(flat.prior_mask(), flat.values(), 50.0 / 800);
        }
        adam->step();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "an Adam step waited for the GPU: " << e.what();
    }
  }
  torch::cuda::synchronize();
  EXPECT_TRUE(std::isfinite(loss_sum.item<double>()));
  EXPECT_TRUE(torch::isfinite(flat.values()).all().item<bool>());
  EXPECT_FALSE(flat.values().equal(start));
#endif
}

// Note [Members per device]: each worker's kernels go to a stream of its own
// (else members sharing a GPU would queue on its default stream, one after
// another, and every other test would still pass), two workers' streams
// differ, and the thread's stream is restored after; a stacked group's
// worker, or one alone, keeps the default stream.
TEST_F(CudaSync, EachWorkerQueuesOnAStreamOfItsOwn) {
#if defined(BNN_HAVE_C10_CUDA)
  const torch::Device cuda(torch::kCUDA, 0);
  const c10::cuda::CUDAStream before = c10::cuda::getCurrentCUDAStream(0);
  ASSERT_EQ(before, c10::cuda::getDefaultCUDAStream(0));
  c10::cuda::CUDAStream first = before, second = before;
  {
    const runtime::WorkerStream one(cuda);
    EXPECT_TRUE(one.own_stream());
    first = c10::cuda::getCurrentCUDAStream(0);
    EXPECT_NE(first, c10::cuda::getDefaultCUDAStream(0));
    EXPECT_EQ(c10::cuda::current_device(), 0);
    const torch::Tensor queued = torch::ones({1 << 20}, torch::TensorOptions().device(cuda)).cumsum(0);
    {
      const runtime::WorkerStream two(cuda);
      second = c10::cuda::getCurrentCUDAStream(0);
    }
    EXPECT_EQ(c10::cuda::getCurrentCUDAStream(0), first);  // the inner worker's end gives this one back
    EXPECT_EQ(queued[-1].item<float>(), static_cast<float>(1 << 20));
  }
  EXPECT_NE(first, second);
  EXPECT_NE(second, c10::cuda::getDefaultCUDAStream(0));
  EXPECT_EQ(c10::cuda::getCurrentCUDAStream(0), before);
  {
    const runtime::WorkerStream shared(cuda, /*own_stream=*/false);
    EXPECT_FALSE(shared.own_stream());
    EXPECT_EQ(c10::cuda::getCurrentCUDAStream(0), c10::cuda::getDefaultCUDAStream(0));
  }
#endif
}

}  // namespace
}  // namespace bnn::pipeline
