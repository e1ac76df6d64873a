#include <gtest/gtest.h>

#include "models/classifier.h"
#include "models/flat_parameters.h"
#include "models/mlp.h"
#include "models/registry.h"

namespace bnn::models {
namespace {

TEST(Models, FmnistCnnHasThePapersParameterCount) {
  ModelSpec spec;
  spec.name = "fmnist_cnn";
  auto model = make_model(spec, 0);
  EXPECT_EQ(count_parameters(*model), 1265258);  // SMS-UBU paper, Table 5
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({3, 1, 28, 28})).sizes(), (std::vector<int64_t>{3, 10}));
}

TEST(Models, ChestXrayCnnHasThePapersParameterCount) {
  const ModelSpec spec = default_spec("chest_xray_cnn");
  EXPECT_EQ(spec.input_shape, (std::vector<int64_t>{1, 180, 180}));
  EXPECT_EQ(spec.num_classes, 2);
  auto model = make_model(spec, 0);
  EXPECT_EQ(count_parameters(*model), 870882);  // SMS-UBU paper, Table 5
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({2, 1, 180, 180})).sizes(), (std::vector<int64_t>{2, 2}));
}

TEST(Models, CelebaCnnHasThePapersParameterCount) {
  const ModelSpec spec = default_spec("celeba_cnn");
  EXPECT_EQ(spec.input_shape, (std::vector<int64_t>{3, 64, 64}));
  EXPECT_EQ(spec.num_classes, 2);
  auto model = make_model(spec, 0);
  EXPECT_EQ(count_parameters(*model), 1612306);  // SMS-UBU paper, Table 5
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({3, 3, 64, 64})).sizes(), (std::vector<int64_t>{3, 2}));
}

// Construction only, to keep the unit tests fast: a forward pass of this
// 73M-parameter model takes seconds on a CPU.
TEST(Models, Cifar10WideCnnHasThePapersParameterCount) {
  const ModelSpec spec = default_spec("cifar10_wide_cnn");
  EXPECT_EQ(spec.input_shape, (std::vector<int64_t>{3, 32, 32}));
  EXPECT_EQ(spec.num_classes, 10);
  auto model = make_model(spec, 0);
  EXPECT_EQ(count_parameters(*model), 73038346);  // SMS-UBU paper, appendix E.1
  int64_t convolutions = 0, batch_norms_2d = 0;
  for (const auto& module : model->modules(/*include_self=*/false)) {
    if (module->as<torch::nn::Conv2d>() != nullptr) ++convolutions;
    if (module->as<torch::nn::BatchNorm2d>() != nullptr) ++batch_norms_2d;
  }
  EXPECT_EQ(convolutions, 12);
  EXPECT_EQ(batch_norms_2d, 12);
}

TEST(Models, DefaultSpecOfEveryModelBuilds) {
  for (const auto& name : model_names()) {
    if (name == "cifar10_wide_cnn") continue;  // covered above, and slow to run
    if (name == "torchscript") continue;       // the data set's shape: tests/models/torchscript_test.cpp
    const ModelSpec spec = default_spec(name);
    EXPECT_EQ(spec.name, name);
    auto model = make_model(spec, 0);
    model->eval();
    std::vector<int64_t> batch = {2};
    batch.insert(batch.end(), spec.input_shape.begin(), spec.input_shape.end());
    EXPECT_EQ(model->forward(torch::randn(batch)).sizes(), (std::vector<int64_t>{2, spec.num_classes})) << name;
  }
  EXPECT_THROW(default_spec("resnet"), c10::Error);
}

TEST(Models, MlpParameterCount) {
  ModelSpec spec;
  spec.hidden = {32, 16};
  spec.batch_norm = true;
  auto model = make_model(spec, 0);
  // 784*32+32 + 2*32 (BN) + 32*16+16 + 2*16 + 16*10+10
  EXPECT_EQ(count_parameters(*model), 784 * 32 + 32 + 64 + 32 * 16 + 16 + 32 + 16 * 10 + 10);
}

TEST(Models, SameSeedSameWeights) {
  ModelSpec spec;
  auto a = make_model(spec, 42), b = make_model(spec, 42), c = make_model(spec, 43);
  FlatParameters fa(*a), fb(*b), fc(*c);
  EXPECT_TRUE(fa.values().equal(fb.values()));
  EXPECT_FALSE(fa.values().equal(fc.values()));
}

TEST(Models, UnknownNameListsValidNames) {
  ModelSpec spec;
  spec.name = "resnet";
  try {
    make_model(spec, 0);
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "unknown model 'resnet'; valid: mlp, logistic, fmnist_cnn, chest_xray_cnn, celeba_cnn, cifar10_wide_cnn"),
        std::string::npos);
  }
}

TEST(FlatParameters, ParametersAndGradientsAreViews) {
  ModelSpec spec;
  spec.hidden = {8};
  auto model = make_model(spec, 1);
  auto reference = make_model(spec, 1);
  FlatParameters flat(*model);
  EXPECT_EQ(flat.numel(), count_parameters(*model));
  // Bias entries get no prior: 8 + 10 of them.
  EXPECT_EQ(flat.prior_mask().sum().item<double>(), flat.numel() - 18);

  const torch::Tensor x = torch::randn({5, 1, 28, 28});
  const torch::Tensor y = torch::tensor({0, 1, 2, 3, 4}, torch::kLong);
  for (int round = 0; round < 2; ++round) {  // twice: zero_grad must reset, not accumulate
    flat.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
  }
  reference->zero_grad();
  torch::nn::functional::cross_entropy(reference->forward(x), y).backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : reference->parameters()) grads.push_back(p.grad().reshape({-1}));
  EXPECT_TRUE(torch::allclose(flat.grads(), torch::cat(grads), 1e-6, 1e-7));

  // Writing the flat buffer moves the module.
  {
    torch::NoGradGuard no_grad;
    flat.values().zero_();
  }
  for (const auto& p : model->parameters()) EXPECT_EQ(p.abs().sum().item<double>(), 0.0);
}

TEST(BatchNorm, RecalibrationMakesEvalModeMatchTheBatchStatistics) {
  ModelSpec spec;
  spec.name = "fmnist_cnn";
  auto model = make_model(spec, 3);
  const torch::Tensor images = torch::randn({256, 1, 28, 28}) * 2 + 1;
  torch::NoGradGuard no_grad;
  model->train();
  const torch::Tensor train_out = model->forward(images);
  recalibrate_batch_norm(*model, images);
  EXPECT_FALSE(model->is_training());
  const torch::Tensor eval_out = model->forward(images);
  // Running variance is unbiased (n/(n-1)), batch normalisation uses the
  // biased one: they agree to about 1/n.
  EXPECT_TRUE(torch::allclose(eval_out, train_out, 2e-2, 2e-2)) << (eval_out - train_out).abs().max();
  const torch::Tensor probs = predict_probabilities(*model, images, /*chunk=*/100);
  EXPECT_EQ(probs.sizes(), (std::vector<int64_t>{256, 10}));
  EXPECT_TRUE(torch::allclose(probs.sum(1), torch::ones({256}), 1e-5, 1e-5));
}

}  // namespace
}  // namespace bnn::models
