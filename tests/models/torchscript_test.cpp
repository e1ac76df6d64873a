// Tests for model.name torchscript (models/torchscript.h) on the modules
// scripts/make_torchscript_models.py writes at build time: the parameters the
// flat vector holds are the ones the script module computes with (values and
// gradients checked against the network written out by hand), the
// initialisation rule, BatchNorm recalibration to the calibration images'
// statistics whatever the module's momentum, and one clear line for each
// module bnn must refuse.
#include "models/torchscript.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "tests/support/temp_dir.h"

namespace bnn::models {
namespace {

namespace fs = std::filesystem;

fs::path module_file(const std::string& name) {
  const fs::path path = fs::path(BNN_TORCHSCRIPT_DIR) / name;
  if (!fs::exists(path)) {
    ADD_FAILURE() << path << " missing: the build makes it with a python3 that has torch (Debian: apt-get install "
                  << "python3-torch, then re-run cmake); where it tried, its output is in "
                  << (fs::path(BNN_TORCHSCRIPT_DIR) / "make_models.log");
  }
  return path;
}

ModelSpec spec_of(const fs::path& path, bool init_from_file = false) {
  ModelSpec spec;
  spec.name = "torchscript";
  spec.path = path.string();
  spec.input_shape = {1, 6, 6};
  spec.num_classes = 2;
  spec.init_from_file = init_from_file;
  return spec;
}

std::vector<std::string> parameter_names(torch::nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters()) names.push_back(p.key());
  return names;
}

TEST(TorchScript, ScriptedAndTracedModulesLoadWithTheirPyTorchNames) {
  for (const std::string file : {"mlp_scripted.pt", "mlp_traced.pt"}) {
    auto model = make_model(spec_of(module_file(file)), 0);
    EXPECT_EQ(parameter_names(*model), (std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias"})) << file;
    EXPECT_EQ(count_parameters(*model), 36 * 8 + 8 + 8 * 2 + 2) << file;
    EXPECT_FALSE(model->has_batch_norm()) << file;
    EXPECT_EQ(model->forward(torch::randn({3, 1, 6, 6})).sizes(), (std::vector<int64_t>{3, 2})) << file;
  }
  auto cnn = make_model(spec_of(module_file("cnn_bn_scripted.pt")), 0);
  EXPECT_EQ(parameter_names(*cnn),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"}));
  EXPECT_TRUE(cnn->has_batch_norm());
  std::vector<std::string> buffers;
  for (const auto& b : cnn->named_buffers()) buffers.push_back(b.key());
  EXPECT_EQ(buffers, (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_NE(cnn->pretty_string().find("TorchScript cnn_bn_scripted.pt"), std::string::npos) << cnn->pretty_string();
}

// The flat vector drives the script module: its forward and gradients are
// those of the network written out by hand from the flat values.
TEST(TorchScript, FlatParametersAreWhatTheModuleComputesWith) {
  auto model = make_model(spec_of(module_file("mlp_scripted.pt")), 5);
  FlatParameters flat(*model);
  ASSERT_EQ(flat.numel(), 314);
  // The prior's mask: weights 1, biases 0 (told apart by name).
  const torch::Tensor mask = flat.prior_mask();
  EXPECT_EQ(mask.narrow(0, 0, 288).sum().item<double>(), 288);
  EXPECT_EQ(mask.narrow(0, 288, 8).sum().item<double>(), 0);
  EXPECT_EQ(mask.narrow(0, 296, 16).sum().item<double>(), 16);
  EXPECT_EQ(mask.narrow(0, 312, 2).sum().item<double>(), 0);

  torch::manual_seed(1);
  {
    torch::NoGradGuard no_grad;
    flat.values().copy_(torch::randn({314}) * 0.3);  // values the module never had
  }
  const torch::Tensor x = torch::randn({5, 1, 6, 6});
  const torch::Tensor y = torch::tensor({0, 1, 1, 0, 1}, torch::kLong);
  model->train();
  flat.zero_grad();
  const torch::Tensor loss = torch::nn::functional::cross_entropy(
      model->forward(x), y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  loss.backward();

  torch::Tensor v = flat.values().detach().clone().requires_grad_(true);
  const torch::Tensor w1 = v.narrow(0, 0, 288).view({8, 36}), b1 = v.narrow(0, 288, 8);
  const torch::Tensor w2 = v.narrow(0, 296, 16).view({2, 8}), b2 = v.narrow(0, 312, 2);
  const torch::Tensor logits = torch::relu(x.view({5, 36}).matmul(w1.t()) + b1).matmul(w2.t()) + b2;
  const torch::Tensor expected = torch::nn::functional::cross_entropy(
      logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  expected.backward();
  EXPECT_NEAR(loss.item<double>(), expected.item<double>(), 1e-5);
  EXPECT_TRUE(torch::allclose(flat.grads(), v.grad(), 1e-5, 1e-6)) << (flat.grads() - v.grad()).abs().max();
}

TEST(TorchScript, WeightsAreRedrawnFromTheSeedOrKeptFromTheFile) {
  const fs::path path = module_file("cnn_bn_scripted.pt");
  torch::jit::Module file = torch::jit::load(path.string());
  std::map<std::string, torch::Tensor> saved;
  for (const auto& p : file.named_parameters()) saved[p.name] = p.value;

  auto a = make_model(spec_of(path), 1);
  auto b = make_model(spec_of(path), 1);
  auto c = make_model(spec_of(path), 2);
  auto kept = make_model(spec_of(path, /*init_from_file=*/true), 1);
  EXPECT_TRUE(FlatParameters(*a).values().equal(FlatParameters(*b).values()));
  EXPECT_FALSE(FlatParameters(*a).values().equal(FlatParameters(*c).values()));
  for (const auto& p : kept->named_parameters()) EXPECT_TRUE(p.value().equal(saved.at(p.key()))) << p.key();
  for (const auto& p : a->named_parameters()) {
    const std::string& name = p.key();
    if (name.rfind("1.", 0) == 0) {  // BatchNorm's scale and shift keep the file's values
      EXPECT_TRUE(p.value().equal(saved.at(name))) << name;
      continue;
    }
    EXPECT_FALSE(p.value().equal(saved.at(name))) << name;
    // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): conv fan_in 1*3*3, linear 144.
    const double bound = name.rfind("0.", 0) == 0 ? 1.0 / 3.0 : 1.0 / 12.0;
    EXPECT_LE(p.value().abs().max().item<double>(), bound) << name;
    EXPECT_GT(p.value().abs().max().item<double>(), 0.5 * bound) << name;
  }
}

// Recalibration leaves the running statistics of the calibration images
// (mean, unbiased variance) for momentum 0.1 and for momentum None alike.
TEST(TorchScript, RecalibrationGivesTheStatisticsOfTheImages) {
  torch::manual_seed(4);
  const torch::Tensor images = torch::randn({40, 1, 6, 6}) * 2 + 0.5;
  for (const auto& [file, momentum] : {std::pair{"cnn_bn_scripted.pt", 0.1}, std::pair{"cnn_bn_cumulative.pt", 1.0}}) {
    auto model = std::dynamic_pointer_cast<TorchScriptClassifier>(make_model(spec_of(module_file(file)), 3));
    ASSERT_NE(model, nullptr);
    ASSERT_EQ(model->batch_norm_momenta().size(), 1u);
    EXPECT_DOUBLE_EQ(model->batch_norm_momenta()[0], momentum) << file;
    recalibrate_batch_norm(*model, torch::randn({10, 1, 6, 6}));  // stale statistics of other images first
    recalibrate_batch_norm(*model, images);
    EXPECT_FALSE(model->is_training());
    torch::NoGradGuard no_grad;
    const torch::Tensor conv = model->script_module().attr("0").toModule().forward({images}).toTensor();
    const torch::Tensor mean = conv.mean({0, 2, 3});
    const torch::Tensor var = conv.var({0, 2, 3}, /*unbiased=*/true);
    const auto buffers = model->named_buffers();
    EXPECT_TRUE(torch::allclose(buffers["1.running_mean"], mean, 1e-5, 1e-6)) << file << buffers["1.running_mean"]
                                                                                << mean;
    EXPECT_TRUE(torch::allclose(buffers["1.running_var"], var, 1e-5, 1e-6)) << file << buffers["1.running_var"] << var;
  }
}

// A BatchNorm layer held under two names is one layer: recalibrated once, to
// the statistics of the images (not divided by its momentum twice).
TEST(TorchScript, ABatchNormLayerHeldTwiceIsOneLayer) {
  auto model = std::dynamic_pointer_cast<TorchScriptClassifier>(make_model(spec_of(module_file("bn_tied.pt")), 3));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->batch_norm_momenta(), std::vector<double>{0.1});
  EXPECT_NE(model->pretty_string().find(", 1 BatchNorm layer,"), std::string::npos) << model->pretty_string();
  torch::manual_seed(4);
  const torch::Tensor images = torch::randn({40, 1, 6, 6}) * 2 + 0.5;
  recalibrate_batch_norm(*model, images);
  torch::NoGradGuard no_grad;
  const torch::Tensor conv = model->script_module().attr("conv").toModule().forward({images}).toTensor();
  const auto buffers = model->named_buffers();
  EXPECT_EQ(buffers.size(), 3u);  // bn's running_mean, running_var, num_batches_tracked; no bn2
  EXPECT_TRUE(torch::allclose(buffers["bn.running_mean"], conv.mean({0, 2, 3}), 1e-5, 1e-6))
      << buffers["bn.running_mean"] << conv.mean({0, 2, 3});
  EXPECT_TRUE(torch::allclose(buffers["bn.running_var"], conv.var({0, 2, 3}, /*unbiased=*/true), 1e-5, 1e-6));
}

// Note [Tied and frozen parameters]: a layer held twice is one parameter, a
// frozen weight is no parameter; the module computes with exactly those.
TEST(TorchScript, TiedParametersCountOnceAndFrozenOnesStayAsSaved) {
  auto tied = make_model(spec_of(module_file("tied.pt")), 3);
  EXPECT_EQ(parameter_names(*tied), (std::vector<std::string>{"a.weight", "a.bias", "b.weight", "b.bias"}));
  FlatParameters flat(*tied);
  ASSERT_EQ(flat.numel(), 36 * 36 + 36 + 36 * 2 + 2);
  EXPECT_NE(tied->pretty_string().find(", 2 tied parameter names (trained once)"), std::string::npos)
      << tied->pretty_string();
  torch::manual_seed(2);
  {
    torch::NoGradGuard no_grad;
    flat.values().copy_(torch::randn({flat.numel()}) * 0.2);
  }
  const torch::Tensor x = torch::randn({4, 1, 6, 6});
  const torch::Tensor v = flat.values().detach();
  const torch::Tensor wa = v.narrow(0, 0, 1296).view({36, 36}), ba = v.narrow(0, 1296, 36);
  const torch::Tensor wb = v.narrow(0, 1332, 72).view({2, 36}), bb = v.narrow(0, 1404, 2);
  const torch::Tensor h = torch::relu(x.view({4, 36}).matmul(wa.t()) + ba);
  const torch::Tensor expected = torch::relu(h.matmul(wa.t()) + ba).matmul(wb.t()) + bb;
  tied->eval();
  EXPECT_TRUE(torch::allclose(tied->forward(x), expected, 1e-5, 1e-6));

  const fs::path frozen_file = module_file("frozen.pt");
  auto frozen = make_model(spec_of(frozen_file), 3);  // weights redrawn from the seed, but not the frozen one
  EXPECT_EQ(parameter_names(*frozen), (std::vector<std::string>{"1.bias", "3.weight", "3.bias"}));
  EXPECT_EQ(count_parameters(*frozen), 8 + 16 + 2);
  EXPECT_NE(frozen->pretty_string().find(", 1 frozen parameter (kept as saved)"), std::string::npos)
      << frozen->pretty_string();
  torch::Tensor saved;
  for (const auto& p : torch::jit::load(frozen_file.string()).named_parameters()) {
    if (p.name == "1.weight") saved = p.value;
  }
  ASSERT_TRUE(saved.defined());
  EXPECT_TRUE(frozen->named_buffers().is_empty());  // in no checkpoint or stored sample
  torch::Tensor held;
  for (const auto& p : dynamic_cast<TorchScriptClassifier&>(*frozen).script_module().named_parameters()) {
    if (p.name == "1.weight") held = p.value;
  }
  ASSERT_TRUE(held.defined());
  EXPECT_TRUE(held.equal(saved));
  FlatParameters rest(*frozen);
  const torch::Tensor r = rest.values().detach();
  const torch::Tensor out = torch::relu(x.view({4, 36}).matmul(saved.t()) + r.narrow(0, 0, 8))
                                .matmul(r.narrow(0, 8, 16).view({2, 8}).t()) +
                            r.narrow(0, 24, 2);
  frozen->eval();
  EXPECT_TRUE(torch::allclose(frozen->forward(x), out, 1e-5, 1e-6));
}

// An error the module's own code raises after the checks at load (here on
// more than two inputs) is a c10::Error naming the file, as LibTorch's are.
TEST(TorchScript, ErrorsOfTheModulesCodeNameTheFile) {
  const fs::path file = module_file("fails_on_batches.pt");
  auto model = make_model(spec_of(file), 0);
  std::string message;
  try {
    model->forward(torch::zeros({5, 1, 6, 6}));
  } catch (const c10::Error& e) {
    message = e.what_without_backtrace();
  }
  EXPECT_EQ(message.rfind("model file " + file.string() + ": forward fails on a batch of shape [5, 1, 6, 6]: ", 0),
            0u)
      << message;
  EXPECT_NE(message.find("this test module takes at most 2 inputs"), std::string::npos) << message;
}

TEST(TorchScript, BadModulesAreOneLineNamingTheFile) {
  const fs::path dir = bnn::testing::unique_temp_dir("bnn_torchscript_bad");
  std::ofstream(dir / "notes.pt") << "not a zip archive\n";
  fs::create_directories(dir / "folder.pt");
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {dir / "missing.pt", "no such file"},
      {dir / "folder.pt", "is a directory"},
      {dir / "notes.pt", "not a TorchScript module saved by torch.jit.save"},
      {module_file("no_forward.pt"), "the module has no forward method (its methods: logits)"},
      {module_file("double_params.pt"), "parameter 1.weight is Double; bnn computes in float32"},
      {module_file("wrong_classes.pt"),
       "forward returns shape [2, 5] for a batch of shape [2, 1, 6, 6]; bnn needs [2, 2]"},
      {module_file("wrong_input.pt"), "forward fails on a batch of shape [2, 1, 6, 6]"},
      {module_file("tuple_output.pt"), "forward returns a Tuple, not a tensor of logits"},
      {module_file("bn_traced_eval.pt"), "BatchNorm layer 1 does not update its running statistics in train mode"},
      {module_file("bn_traced_train.pt"), "BatchNorm layer 1 changes its running statistics in eval mode"},
      {module_file("nan_logits.pt"), "forward returns NaN or infinite logits for a batch of shape [2, 1, 6, 6]"},
      {module_file("detached.pt"),
       "the logits forward returns carry no gradient to the parameters (detached, or computed under "
       "torch.no_grad()): bnn trains by gradients of the loss"},
      {module_file("integer_logits.pt"),
       "forward returns Long logits; bnn needs floating-point logits, differentiable in the parameters"},
      {module_file("noisy_forward.pt"), "in eval mode forward gives other logits for the same batch each time"},
      {module_file("dropout_traced_train.pt"), "in eval mode forward gives other logits for the same batch each time"},
  };
  for (const auto& [path, expected] : cases) {
    std::string message;
    try {
      make_model(spec_of(path), 0);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    EXPECT_EQ(message.rfind("model file " + path.string() + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  std::string shapes;
  try {
    make_model(spec_of(module_file("wrong_input.pt")), 0);
  } catch (const std::invalid_argument& e) {
    shapes = e.what();
  }
  EXPECT_NE(shapes.find("2x36 and 50x2"), std::string::npos) << shapes;  // the interpreter's own words
  fs::remove_all(dir);
}

}  // namespace
}  // namespace bnn::models
