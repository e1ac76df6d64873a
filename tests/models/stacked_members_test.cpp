// Note [Stacked members]: K members evaluated as one model give each member
// the logits, gradients and BatchNorm statistics it has alone.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "models/flat_parameters.h"
#include "models/registry.h"
#include "models/stacked_members.h"
#include "tests/support/relative_error.h"

namespace bnn::models {
namespace {

using testing::relative_error;

// In double precision the two ways of summing differ by rounding alone, far
// below the tolerance; a member's slice mixed up with another's, or
// statistics over the wrong images, are O(1).
constexpr double kTolerance = 1e-9;

// Some gradients are zero but for rounding (the bias of a layer whose output
// a BatchNorm centres): they are compared on the scale of the whole gradient.
double gradient_floor(const std::vector<torch::Tensor>& parameters) {
  double squares = 0;
  for (const auto& p : parameters) squares += p.grad().pow(2).sum().item<double>();
  return 1e-6 * std::sqrt(squares);
}

// Members with different weights (seeds), in double precision.
std::vector<std::shared_ptr<Classifier>> make_members(const ModelSpec& spec, int64_t count) {
  std::vector<std::shared_ptr<Classifier>> members;
  for (int64_t k = 0; k < count; ++k) {
    members.push_back(make_model(spec, /*seed=*/100 + k));
    members.back()->to(torch::kDouble);
  }
  return members;
}

// Trains one step's worth of forward and backward both ways on the same
// images and compares logits, every parameter's gradient and the running
// statistics member by member; then the logits in eval mode.
void expect_members_as_alone(const ModelSpec& spec, int64_t count, int64_t batch) {
  auto members = make_members(spec, count);
  StackedMembers stacked(members);
  ASSERT_EQ(stacked.members(), count);
  ASSERT_EQ(stacked.parameters().size(), members.front()->parameters().size());

  torch::manual_seed(7);
  std::vector<int64_t> shape = {count, batch};
  shape.insert(shape.end(), spec.input_shape.begin(), spec.input_shape.end());
  const auto images = torch::randn(shape, torch::kDouble);
  const auto labels = torch::randint(spec.num_classes, {count, batch}, torch::kLong);

  const auto logits = stacked.forward(images);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{count, batch, spec.num_classes}));
  torch::nn::functional::cross_entropy(logits.reshape({count * batch, spec.num_classes}), labels.reshape(-1),
                                       torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
      .div(batch)
      .backward();

  for (int64_t k = 0; k < count; ++k) {
    auto& member = *members[k];
    member.train();
    const auto alone = member.forward(images[k]);
    torch::nn::functional::cross_entropy(alone, labels[k]).backward();
    EXPECT_LT(relative_error(logits[k], alone), kTolerance) << "member " << k;
    const auto parameters = member.parameters();
    const double floor = gradient_floor(parameters);
    for (size_t i = 0; i < parameters.size(); ++i) {
      ASSERT_EQ(stacked.member_slice(i, k).sizes(), parameters[i].sizes()) << "parameter " << i;
      EXPECT_TRUE(torch::equal(stacked.member_slice(i, k), parameters[i])) << "parameter " << i;
      EXPECT_LT(relative_error(stacked.member_slice(i, k, /*grad=*/true), parameters[i].grad(), floor), kTolerance)
          << "member " << k << ", gradient of parameter " << i << " " << parameters[i].sizes();
    }
    std::vector<torch::Tensor> running;
    for (const auto& item : member.named_buffers()) {
      if (item.key().find("num_batches_tracked") == std::string::npos) running.push_back(item.value());
    }
    const auto stats = stacked.member_running_stats(k);
    ASSERT_EQ(stats.size(), running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      EXPECT_LT(relative_error(stats[i], running[i]), kTolerance) << "member " << k << ", running statistic " << i;
    }
  }

  // Eval mode uses those statistics: new images, the same logits.
  torch::NoGradGuard no_grad;
  stacked.train(false);
  const auto more = torch::randn(shape, torch::kDouble);
  const auto eval_logits = stacked.forward(more);
  for (int64_t k = 0; k < count; ++k) {
    members[k]->eval();
    EXPECT_LT(relative_error(eval_logits[k], members[k]->forward(more[k])), kTolerance)
        << "member " << k << " in eval mode";
  }
}

TEST(StackedMembers, FmnistCnnMembersGetTheirOwnLogitsGradientsAndStatistics) {
  expect_members_as_alone(default_spec("fmnist_cnn"), /*count=*/3, /*batch=*/4);
}

TEST(StackedMembers, MlpWithBatchNormMembersGetTheirOwnLogitsGradientsAndStatistics) {
  ModelSpec spec = default_spec("mlp");
  spec.hidden = {32, 16};
  spec.batch_norm = true;
  expect_members_as_alone(spec, /*count=*/2, /*batch=*/5);
}

TEST(StackedMembers, ChestXrayCnnsPaddedPoolsStack) {
  ModelSpec spec = default_spec("chest_xray_cnn");
  spec.input_shape = {1, 20, 20};  // small images: the padded pools map 20 -> 11 -> 6 -> 4 -> 3 -> 2
  expect_members_as_alone(spec, /*count=*/2, /*batch=*/3);
}

TEST(StackedMembers, CelebaCnnsRepeatedBottlenecksStack) {
  ModelSpec spec = default_spec("celeba_cnn");
  spec.input_shape = {3, 8, 8};  // small images: three pools leave 1 x 1
  expect_members_as_alone(spec, /*count=*/2, /*batch=*/3);
}

TEST(StackedMembers, OneMemberIsTheModel) {
  ModelSpec spec = default_spec("mlp");
  spec.hidden = {8};
  expect_members_as_alone(spec, /*count=*/1, /*batch=*/3);
}

TEST(StackedMembers, ChannelsLastGivesTheSameLogitsAndGradients) {
  const auto spec = default_spec("fmnist_cnn");
  auto members = make_members(spec, 2);
  StackedMembers plain(members), channels_last(members);
  channels_last.to(torch::kCPU, /*channels_last=*/true);
  EXPECT_TRUE(channels_last.parameters().front().is_contiguous(torch::MemoryFormat::ChannelsLast));
  const auto images = torch::randn({2, 3, 1, 28, 28}, torch::kDouble);
  const auto logits = channels_last.forward(images);
  const auto expected = plain.forward(images);
  EXPECT_LT(relative_error(logits, expected), kTolerance);
  logits.pow(2).sum().backward();
  expected.pow(2).sum().backward();
  const double floor = gradient_floor(plain.parameters());
  for (size_t i = 0; i < plain.parameters().size(); ++i) {
    EXPECT_LT(relative_error(channels_last.parameters()[i].grad(), plain.parameters()[i].grad(), floor), kTolerance)
        << "gradient of parameter " << i;
  }
}

// The count the GPU benchmark's TFLOP/s rests on: fmnist_cnn's forward pass,
// layer by layer (output elements x multiply-adds each x 2).
TEST(StackedMembers, CountsTheForwardFlopsOfFmnistCnn) {
  const double convolutions = 2.0 * (32 * 784 * 9 * 1 + 64 * 784 * 9 * 32 +    // 28 x 28
                                     64 * 196 * 9 * 64 + 128 * 196 * 9 * 64 +  // 14 x 14
                                     128 * 196 * 9 * 128 +                      //
                                     256 * 49 * 9 * 128 + 256 * 49 * 9 * 256);  // 7 x 7
  const double head = 2.0 * (2304 * 32 + 32 * 512 + 512 * 10);
  StackedMembers stacked(make_members(default_spec("fmnist_cnn"), 2));
  stacked.forward(torch::randn({2, 3, 1, 28, 28}, torch::kDouble));
  EXPECT_EQ(stacked.forward_flops_per_example(), convolutions + head);
  EXPECT_EQ(convolutions + head, 217402368.0);  // x 3 for forward and backward: the 0.65 GFLOP per example
}

// A model that is the chain `body`; with `own_parameter`, it also holds a
// parameter outside its layers.
class SequentialClassifier : public Classifier {
 public:
  explicit SequentialClassifier(torch::nn::Sequential body, bool own_parameter = false) {
    body_ = register_module("body", std::move(body));
    if (own_parameter) register_parameter("scale", torch::ones({1}));
  }
  torch::Tensor forward(const torch::Tensor& images) override { return body_->forward(images); }
  std::string pretty_string() const override { return "Chain"; }

 private:
  torch::nn::Sequential body_{nullptr};
};

// Two members of the chain that `make` builds.
template <typename Make>
std::vector<std::shared_ptr<Classifier>> two_of(Make make) {
  return {std::make_shared<SequentialClassifier>(make()), std::make_shared<SequentialClassifier>(make())};
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StackedMembers, RefusesWhatItCannotStackNamingTheLayer) {
  const auto dropout = two_of([] {
    return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(4, 3), torch::nn::Dropout(0.5),
                                 torch::nn::Linear(3, 2));
  });
  EXPECT_EQ(error_of([&] { StackedMembers s(dropout); }),
            "stacked members: layer 2 (torch::nn::DropoutImpl) is not supported (Conv2d, Linear, BatchNorm1d/2d, "
            "MaxPool2d, Softplus, ReLU, Flatten are)");

  ModelSpec narrow = default_spec("mlp");
  narrow.hidden = {8};
  ModelSpec wide = narrow;
  wide.hidden = {9};
  const std::vector<std::shared_ptr<Classifier>> mixed = {make_model(narrow, 1), make_model(wide, 1)};
  EXPECT_EQ(error_of([&] { StackedMembers s(mixed); }),
            "stacked members: layer 1 (torch::nn::LinearImpl) differs in member 1: "
            "torch::nn::Linear(in_features=784, out_features=9, bias=true) against "
            "torch::nn::Linear(in_features=784, out_features=8, bias=true)");

  EXPECT_EQ(error_of([] { StackedMembers s({}); }), "stacked members: no members");

  ModelSpec deep = narrow;
  deep.hidden = {8, 8};
  EXPECT_EQ(error_of([&] { StackedMembers s({make_model(narrow, 1), make_model(deep, 1)}); }),
            "stacked members: member 1 has 6 layers, member 0 has 4");

  using torch::nn::Conv2dOptions;
  EXPECT_EQ(error_of([] {
              StackedMembers s(two_of([] {
                return torch::nn::Sequential(
                    torch::nn::Conv2d(Conv2dOptions(1, 2, 3).padding(1).padding_mode(torch::kReflect)),
                    torch::nn::Flatten(), torch::nn::Linear(2 * 4 * 4, 2));
              }));
            }),
            "stacked members: layer 0 (torch::nn::Conv2dImpl) pads other than with zeros");
  EXPECT_EQ(error_of([] {
              StackedMembers s(two_of([] {
                return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(16, 2),
                                             torch::nn::BatchNorm1d(torch::nn::BatchNormOptions(2).momentum(
                                                 c10::optional<double>())));
              }));
            }),
            "stacked members: layer 2 (torch::nn::BatchNorm1dImpl) has no momentum (a cumulative average)");
  EXPECT_EQ(error_of([] {
              StackedMembers s(two_of([] {
                return torch::nn::Sequential(torch::nn::Flatten(torch::nn::FlattenOptions().start_dim(2)),
                                             torch::nn::Linear(16, 2));
              }));
            }),
            "stacked members: layer 0 (torch::nn::FlattenImpl) flattens other dimensions than 1 to the end");
  const auto with_own_parameter = std::vector<std::shared_ptr<Classifier>>{
      std::make_shared<SequentialClassifier>(torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(16, 2)), true),
      std::make_shared<SequentialClassifier>(torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(16, 2)), true)};
  EXPECT_EQ(error_of([&] { StackedMembers s(with_own_parameter); }),
            "stacked members: the model has parameters outside its layers");

  // Chains that build but cannot run stacked: the layer is named at the forward pass.
  const auto forward_error = [](torch::nn::Sequential (*make)(), std::vector<int64_t> image_shape) {
    StackedMembers s(two_of(make));
    return error_of([&] { s.forward(torch::randn(image_shape)); });
  };
  const std::vector<int64_t> images = {2, 3, 1, 4, 4};
  EXPECT_EQ(forward_error([] {
              return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Conv2d(Conv2dOptions(1, 2, 3)));
            }, images),
            "stacked members: layer 1 (torch::nn::Conv2dImpl) needs images but follows a flattening");
  EXPECT_EQ(forward_error([] {
              return torch::nn::Sequential(torch::nn::Conv2d(Conv2dOptions(1, 2, 3)), torch::nn::Linear(2, 2));
            }, images),
            "stacked members: layer 1 (torch::nn::LinearImpl) follows image layers without a Flatten");
  EXPECT_EQ(forward_error([] {
              return torch::nn::Sequential(torch::nn::Conv2d(Conv2dOptions(1, 2, 3)), torch::nn::BatchNorm1d(2),
                                           torch::nn::Flatten());
            }, images),
            "stacked members: layer 1 (torch::nn::BatchNorm1dImpl) is a BatchNorm1d on images");
  EXPECT_EQ(forward_error([] {
              return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::BatchNorm2d(16));
            }, images),
            "stacked members: layer 1 (torch::nn::BatchNorm2dImpl) is a BatchNorm2d after a flattening");
  const auto ends_spatial =
      forward_error([] { return torch::nn::Sequential(torch::nn::Conv2d(Conv2dOptions(1, 2, 3))); }, images);
  EXPECT_NE(ends_spatial.find("stacked members: the model ends without flattening its images"), std::string::npos)
      << ends_spatial;
  const auto four_d = forward_error([] {
    return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(16, 2));
  }, {2, 3, 4, 4});
  EXPECT_NE(four_d.find("stacked members: images must be K x B x C x H x W or K x B x F, got [2, 3, 4, 4]"),
            std::string::npos)
      << four_d;

  StackedMembers two(make_members(narrow, 2));
  const std::string wrong = error_of([&] { two.forward(torch::randn({3, 4, 1, 28, 28})); });
  EXPECT_NE(wrong.find("stacked members: images must be 2 x B x (input shape), got [3, 4, 1, 28, 28]"),
            std::string::npos)
      << wrong;
}

// Note [Stacked flat buffers]: members' flat vectors go in and their
// gradients and running statistics come out with one indexed copy each, and
// give what the members give alone.
TEST(StackedMembers, FlatBuffersCarryEachMembersVectorsInAndOut) {
  const auto spec = default_spec("fmnist_cnn");
  const int64_t count = 3, batch = 2;
  auto members = make_members(spec, count);
  std::vector<std::shared_ptr<Classifier>> others;  // the stacked model starts from other weights
  for (int64_t k = 0; k < count; ++k) {
    others.push_back(make_model(spec, /*seed=*/200 + k));
    others.back()->to(torch::kDouble);
  }
  StackedMembers stacked(others);
  ASSERT_TRUE(stacked.replaces_running_stats());
  stacked.use_flat_buffers();
  std::vector<std::unique_ptr<FlatParameters>> flats;
  std::vector<torch::Tensor> stats;
  for (int64_t k = 0; k < count; ++k) {
    flats.push_back(std::make_unique<FlatParameters>(*members[k]));
    stats.push_back(StackedMembers::flatten_running_stats(*members[k]));
    ASSERT_TRUE(stats.back().defined());
    stacked.load_member(k, flats[k]->values());
    for (size_t i = 0; i < members[k]->parameters().size(); ++i) {
      ASSERT_TRUE(torch::equal(stacked.member_slice(i, k), members[k]->parameters()[i])) << k << ", " << i;
    }
  }

  torch::manual_seed(11);
  const auto images = torch::randn({count, batch, 1, 28, 28}, torch::kDouble);
  const auto labels = torch::randint(spec.num_classes, {count, batch}, torch::kLong);
  const auto sum = torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum);
  stacked.zero_grad();
  torch::nn::functional::cross_entropy(stacked.forward(images).reshape({count * batch, -1}), labels.reshape(-1), sum)
      .backward();
  for (int64_t k = 0; k < count; ++k) {
    members[k]->train();
    flats[k]->zero_grad();
    torch::nn::functional::cross_entropy(members[k]->forward(images[k]), labels[k], sum).backward();
    torch::Tensor grad = torch::full_like(flats[k]->grads(), 7.0);
    stacked.read_member_gradient(k, grad);
    EXPECT_LT(relative_error(grad, flats[k]->grads()), kTolerance) << "member " << k;
    torch::Tensor running = torch::full_like(stats[k], 7.0);
    stacked.read_member_stats(k, running);
    EXPECT_LT(relative_error(running, stats[k]), kTolerance) << "member " << k;
  }

  // A second forward pass adds nothing to the gradient once zeroed.
  stacked.zero_grad();
  torch::Tensor grad = torch::empty_like(flats[0]->grads());
  stacked.read_member_gradient(1, grad);
  EXPECT_EQ(grad.abs().max().item<double>(), 0.0);

  // Statistics go in as well, and clear_member() zeroes one member alone.
  const auto random = torch::randn_like(stats[2]);
  stacked.load_member_stats(2, random);
  torch::Tensor back = torch::empty_like(random);
  stacked.read_member_stats(2, back);
  EXPECT_TRUE(torch::equal(back, random));
  stacked.clear_member(1);
  for (size_t i = 0; i < members[0]->parameters().size(); ++i) {
    EXPECT_EQ(stacked.member_slice(i, 1).abs().max().item<double>(), 0.0) << i;
    EXPECT_TRUE(torch::equal(stacked.member_slice(i, 0), members[0]->parameters()[i])) << i;
  }
  stacked.read_member_stats(1, back);
  EXPECT_EQ(back.abs().max().item<double>(), 0.0);

  const std::string wrong = error_of([&] { stacked.load_member(0, torch::zeros({5}, torch::kDouble)); });
  EXPECT_NE(wrong.find("stacked members: a member's parameters must be a contiguous vector of " +
                       std::to_string(flats[0]->numel()) + " values, got [5]"),
            std::string::npos)
      << wrong;
  EXPECT_NE(error_of([&] { stacked.to(torch::kCPU); }).find("to() after use_flat_buffers()"), std::string::npos);
}

TEST(StackedMembers, BatchNormWithAMomentumBelowOneNeedsTheMembersStatistics) {
  StackedMembers s(two_of([] {
    return torch::nn::Sequential(torch::nn::Flatten(),
                                 torch::nn::BatchNorm1d(torch::nn::BatchNormOptions(4).momentum(0.5)),
                                 torch::nn::Linear(4, 2));
  }));
  EXPECT_FALSE(s.replaces_running_stats());
}

}  // namespace
}  // namespace bnn::models
