// Note [Flat Adam]: the member's Adam over the one flat parameter vector
// gives the iterates of LibTorch's Adam over the module's tensors, bit for
// bit; a checkpoint records which layout it holds, and one with the
// per-tensor state (as written before the flat layout) resumes with it.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/random.h"
#include "src/pipeline/member_checkpoint.h"
#include "src/pipeline/optimiser_phases.h"
#include "tests/support/temp_dir.h"

namespace bnn::pipeline {
namespace {

struct Net {
  std::shared_ptr<models::Classifier> model;
  std::unique_ptr<models::FlatParameters> flat;
  Net(const std::string& name, uint64_t seed) {
    models::ModelSpec spec;
    spec.name = name;
    model = models::make_model(spec, seed);
    flat = std::make_unique<models::FlatParameters>(*model);
  }
  // `steps` Adam steps on fixed random batches (the same for every net).
  void train(torch::optim::Adam& adam, int steps, int first = 0) {
    for (int s = first; s < first + steps; ++s) {
      torch::manual_seed(100 + s);
      const torch::Tensor x = torch::randn({8, 1, 28, 28}), y = torch::randint(10, {8}, torch::kLong);
      flat->zero_grad();
      torch::nn::functional::cross_entropy(model->forward(x), y).backward();
      adam.step();
    }
  }
};

TEST(FlatAdam, SameBitsAsAdamOverTheModulesTensors) {
  for (const char* name : {"mlp", "fmnist_cnn"}) {
    SCOPED_TRACE(name);
    Net flat(name, 3), per_tensor(name, 3);
    ASSERT_TRUE(flat.flat->values().equal(per_tensor.flat->values()));
    auto a = make_adam(*flat.flat, *flat.model, /*flat_layout=*/true, 1e-3);
    auto b = make_adam(*per_tensor.flat, *per_tensor.model, /*flat_layout=*/false, 1e-3);
    EXPECT_TRUE(is_flat_adam(*a));
    EXPECT_FALSE(is_flat_adam(*b));
    EXPECT_GT(per_tensor.model->parameters().size(), 1u);
    const torch::Tensor start = flat.flat->values().clone();
    flat.train(*a, 5);
    per_tensor.train(*b, 5);
    EXPECT_FALSE(flat.flat->values().equal(start));  // it did train
    EXPECT_TRUE(flat.flat->values().equal(per_tensor.flat->values()));
  }
}

TEST(FlatAdam, CheckpointsResumeInTheLayoutTheyHold) {
  const auto dir = testing::unique_temp_dir("bnn_flat_adam");
  for (const bool flat_layout : {true, false}) {
    // The per-tensor checkpoint has no "adam.flat" mark: it is what bnn wrote before the flat layout.
    SCOPED_TRACE(flat_layout ? "flat" : "per tensor");
    Net net("mlp", 5);
    auto adam = make_adam(*net.flat, *net.model, flat_layout, 1e-3);
    net.train(*adam, 3);
    MemberState state;
    state.order_gen = samplers::make_generator(torch::kCPU, 1);
    const auto path = dir / (flat_layout ? "flat.pt" : "per_tensor.pt");
    save_member_checkpoint(path, /*seed=*/9, {Phase::kAdam, 1}, state, net.flat->values(), *net.model, adam.get());
    net.train(*adam, 3, 3);  // the run that was not interrupted

    Net resumed("mlp", 6);  // another start: the checkpoint overwrites it
    std::unique_ptr<torch::optim::Adam> restored;
    int calls = 0;
    MemberState state2;
    state2.order_gen = samplers::make_generator(torch::kCPU, 2);
    const Position at = restore_member_checkpoint(
        path, torch::kCPU, 9, state2, resumed.flat->values(), *resumed.model,
        [&](bool layout) -> torch::optim::Adam& {
          ++calls;
          EXPECT_EQ(layout, flat_layout);
          restored = make_adam(*resumed.flat, *resumed.model, layout, 1e-3);
          return *restored;
        },
        [] { return std::unique_ptr<samplers::Sampler>(); });
    EXPECT_EQ(at.phase, Phase::kAdam);
    ASSERT_EQ(calls, 1);
    resumed.train(*restored, 3, 3);
    EXPECT_TRUE(resumed.flat->values().equal(net.flat->values()));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bnn::pipeline
