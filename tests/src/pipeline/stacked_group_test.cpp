// Note [Stacked members in a run]: members whose gradients a StackedGroup
// evaluates together get, each in its own thread, the gradient, loss and
// BatchNorm statistics that their own model gives; they may leave at any
// time, and a round that fails fails for each of its members.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <thread>

#include "models/registry.h"
#include "src/pipeline/model_oracle.h"
#include "src/pipeline/stacked_group.h"
#include "tests/support/relative_error.h"

namespace bnn::pipeline {
namespace {

using testing::relative_error;

// Float32 sums in another order: a few ulps of the largest terms. A member
// given another member's batch, slice or statistics is off by O(1).
constexpr double kGroupTolerance = 2e-5;

data_loaders::Split random_split(const models::ModelSpec& spec, int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<int64_t> shape = {n};
  shape.insert(shape.end(), spec.input_shape.begin(), spec.input_shape.end());
  return {torch::randn(shape), torch::randint(spec.num_classes, {n}, torch::kLong), {}, {}};
}

// A member as bnn runs one: model, flat parameters and batch order, plus a
// twin with the same weights evaluated alone through a ModelOracle.
struct TestMember {
  TestMember(const models::ModelSpec& spec, const data_loaders::Split& train, int64_t batch, uint64_t seed)
      : model(models::make_model(spec, seed)), twin(models::make_model(spec, seed)), flat(*model),
        twin_flat(*twin), partition(train, batch, seed), alone(*twin, twin_flat, partition) {}
  std::shared_ptr<models::Classifier> model, twin;
  models::FlatParameters flat, twin_flat;
  data_loaders::Partition partition;
  ModelOracle alone;
};

std::vector<std::shared_ptr<models::Classifier>> templates(const models::ModelSpec& spec, int64_t slots) {
  std::vector<std::shared_ptr<models::Classifier>> out;
  for (int64_t k = 0; k < slots; ++k) out.push_back(models::make_model(spec, /*seed=*/99));
  return out;
}

// Each member in its own thread takes `steps[k]` steps (evaluate at its own
// batch, then a small move along the gradient), the twin alone the same
// steps; gradients, losses and running statistics are compared at each.
void expect_group_members_as_alone(const models::ModelSpec& spec, const std::vector<int64_t>& steps, int64_t slots) {
  const auto train = random_split(spec, 40, 5);
  StackedGroup group(templates(spec, slots));
  std::vector<std::unique_ptr<TestMember>> members;
  std::vector<std::unique_ptr<StackedOracle>> oracles;
  for (size_t k = 0; k < steps.size(); ++k) {
    members.push_back(std::make_unique<TestMember>(spec, train, /*batch=*/8, /*seed=*/10 + k));
    oracles.push_back(group.join(static_cast<int64_t>(k), *members[k]->model, members[k]->flat,
                                 members[k]->partition));
    oracles.back()->enter_group();  // every member in the first pass
  }
  std::vector<std::vector<std::string>> failures(steps.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < steps.size(); ++k) {
    threads.emplace_back([&, k] {
      TestMember& m = *members[k];
      for (int64_t s = 0; s < steps[k]; ++s) {
        const int64_t b = (s * 3 + static_cast<int64_t>(k)) % m.partition.num_batches();
        const double loss = oracles[k]->evaluate(b).item<double>();
        const double expected = m.alone.evaluate(b).item<double>();
        const auto where = "member " + std::to_string(k) + ", step " + std::to_string(s) + ": ";
        if (std::abs(loss - expected) > kGroupTolerance * std::abs(expected)) {
          failures[k].push_back(where + "loss " + std::to_string(loss) + " against " + std::to_string(expected));
        }
        const double error = relative_error(m.flat.grads(), m.twin_flat.grads());
        if (!(error < kGroupTolerance)) failures[k].push_back(where + "gradient off by " + std::to_string(error));
        const auto buffers = m.model->buffers(), twin_buffers = m.twin->buffers();
        for (size_t i = 0; i < buffers.size(); ++i) {
          if (buffers[i].scalar_type() != torch::kFloat) continue;  // num_batches_tracked
          const double stat_error = relative_error(buffers[i], twin_buffers[i]);
          if (!(stat_error < kGroupTolerance)) failures[k].push_back(where + "running statistic " + std::to_string(i));
        }
        torch::NoGradGuard no_grad;
        m.flat.values().sub_(m.flat.grads(), 1e-3);
        m.twin_flat.values().sub_(m.twin_flat.grads(), 1e-3);
      }
      oracles[k].reset();  // leaves the group while the others may go on
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) {
    for (const auto& line : f) ADD_FAILURE() << line;
  }
  // All in from the start, each pass holds every member still stepping.
  EXPECT_EQ(group.evaluations(), std::accumulate(steps.begin(), steps.end(), int64_t{0}));
  EXPECT_EQ(group.rounds(), *std::max_element(steps.begin(), steps.end()));
}

TEST(StackedGroup, CnnMembersGetTheirOwnGradientsLossesAndStatistics) {
  models::ModelSpec spec = models::default_spec("fmnist_cnn");
  spec.input_shape = {1, 8, 8};
  expect_group_members_as_alone(spec, {3, 3, 3}, /*slots=*/3);
}

// One member stops early and another slot stays free: the others go on,
// in rounds of two, then of one.
TEST(StackedGroup, MembersLeaveWhenTheyFinishAndSlotsMayStayFree) {
  models::ModelSpec spec = models::default_spec("mlp");
  spec.hidden = {16};
  spec.batch_norm = true;
  expect_group_members_as_alone(spec, {5, 2, 4}, /*slots=*/4);
}

// Two small mlp members, batches of 8 and `batch_b`, in a group of two slots.
struct TwoMlpMembers {
  explicit TwoMlpMembers(int64_t batch_b = 8)
      : spec(small_mlp()), train(random_split(spec, 40, 5)), group(templates(spec, 2)), a(spec, train, 8, 1),
        b(spec, train, batch_b, 2), oracle_a(group.join(0, *a.model, a.flat, a.partition)),
        oracle_b(group.join(1, *b.model, b.flat, b.partition)) {}
  static models::ModelSpec small_mlp() {
    models::ModelSpec spec = models::default_spec("mlp");
    spec.hidden = {8};
    return spec;
  }
  models::ModelSpec spec;
  data_loaders::Split train;
  StackedGroup group;
  TestMember a, b;
  std::unique_ptr<StackedOracle> oracle_a, oracle_b;  // declared last: they leave the group first
};

// A member enters the passes at its first evaluation and leaves them when
// it says so (a member that has sampled its last step): one that has not
// yet evaluated, or has left, holds nobody up.
TEST(StackedGroup, MembersEnterAtTheirFirstEvaluationAndLeaveWhenDone) {
  TwoMlpMembers two;
  auto& group = two.group;
  auto& b = two.b;
  auto& oracle_a = two.oracle_a;
  auto& oracle_b = two.oracle_b;
  oracle_a->evaluate(0);  // b has not evaluated: a's pass is a's alone
  oracle_a->evaluate(1);
  EXPECT_EQ(group.rounds(), 2);
  oracle_a->leave_group();
  oracle_b->evaluate(0);  // and now b's alone
  EXPECT_EQ(group.rounds(), 3);
  EXPECT_LT(relative_error(b.flat.grads(), (b.alone.evaluate(0), b.twin_flat.grads())), kGroupTolerance);
  oracle_b->leave_group();
  oracle_a->evaluate(2);  // back in
  EXPECT_EQ(group.rounds(), 4);
  EXPECT_EQ(group.evaluations(), 4);
}

TEST(StackedGroup, ARoundThatFailsFailsForEachOfItsMembers) {
  TwoMlpMembers two(/*batch_b=*/10);
  auto& group = two.group;
  auto& oracle_a = two.oracle_a;
  auto& oracle_b = two.oracle_b;
  oracle_a->enter_group();
  oracle_b->enter_group();
  std::string error_a, error_b;
  std::thread t([&] {
    try {
      oracle_a->evaluate(0);
    } catch (const std::exception& e) {
      error_a = e.what();
    }
  });
  try {
    oracle_b->evaluate(0);
  } catch (const std::exception& e) {
    error_b = e.what();
  }
  t.join();
  EXPECT_NE(error_a.find("cannot be evaluated together"), std::string::npos) << error_a;
  EXPECT_EQ(error_a.substr(0, 200), error_b.substr(0, 200));

  TestMember c(two.spec, two.train, 8, 3);
  try {
    group.join(1, *c.model, c.flat, c.partition);
    ADD_FAILURE() << "a taken slot was given twice";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "stacked members: slot 1 is taken");
  }
  try {
    group.join(2, *c.model, c.flat, c.partition);
    ADD_FAILURE() << "slot 2 of 2 was given";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "stacked members: slot 2 of 2");
  }
}

}  // namespace
}  // namespace bnn::pipeline
