#include "samplers/bounce.h"

#include <cmath>

#include <gtest/gtest.h>

namespace bnn::samplers {
namespace {

// Reference: move from the centre along a straight line of length |y|,
// reflecting at +-w one face at a time.
std::pair<double, bool> walk(double y, double w) {
  double pos = 0, left = std::abs(y);
  double dir = y >= 0 ? 1 : -1;
  bool flipped = false;
  while (left > 0) {
    const double to_face = dir > 0 ? w - pos : pos + w;
    if (left <= to_face) {
      pos += dir * left;
      break;
    }
    pos += dir * to_face;
    left -= to_face;
    dir = -dir;
    flipped = !flipped;
  }
  return {pos, flipped};
}

TEST(Bounce, InsideIsUnchanged) {
  torch::Tensor x = torch::tensor({0.1, -0.9, 0.99, -1.0, 1.0}, torch::kDouble);
  torch::Tensor v = torch::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, torch::kDouble);
  const torch::Tensor x0 = x.clone(), v0 = v.clone(), scratch_anchor = torch::zeros_like(x);
  torch::Tensor scratch;
  reflect_into_box(x, v, scratch_anchor, 1.0, scratch);
  EXPECT_TRUE(x.equal(x0));
  EXPECT_TRUE(v.equal(v0));
}

TEST(Bounce, SingleAndMultipleReflections) {
  const double w = 1.0;
  const torch::Tensor anchor = torch::full({4}, 2.0, torch::kDouble);
  torch::Tensor x = anchor + torch::tensor({1.5, -1.5, 3.5, 5.5}, torch::kDouble);
  torch::Tensor v = torch::ones({4}, torch::kDouble);
  torch::Tensor scratch;
  reflect_into_box(x, v, anchor, w, scratch);
  const torch::Tensor want_y = torch::tensor({0.5, -0.5, -0.5, 0.5}, torch::kDouble);
  EXPECT_TRUE(torch::allclose(x - anchor, want_y, 0, 1e-12)) << x - anchor;
  // One reflection flips v; two keep it; three flip it.
  EXPECT_TRUE(v.equal(torch::tensor({-1.0, -1.0, 1.0, -1.0}, torch::kDouble))) << v;
}

TEST(Bounce, MatchesStepByStepReflection) {
  const double w = 0.7;
  auto gen = at::detail::createCPUGenerator(7);
  const torch::Tensor y = torch::randn({2000}, gen, torch::kDouble) * 5.0;
  torch::Tensor x = y.clone();
  torch::Tensor v = torch::ones_like(y);
  torch::Tensor scratch;
  reflect_into_box(x, v, torch::zeros_like(y), w, scratch);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const auto [pos, flipped] = walk(y[i].item<double>(), w);
    ASSERT_NEAR(x[i].item<double>(), pos, 1e-9) << "y = " << y[i].item<double>();
    ASSERT_EQ(v[i].item<double>(), flipped ? -1.0 : 1.0) << "y = " << y[i].item<double>();
    ASSERT_LE(std::abs(x[i].item<double>()), w + 1e-12);
  }
}

TEST(Bounce, RejectsNonPositiveWidth) {
  torch::Tensor x = torch::zeros({2}), v = torch::zeros({2}), scratch;
  EXPECT_THROW(reflect_into_box(x, v, torch::zeros({2}), 0.0, scratch), c10::Error);
}

}  // namespace
}  // namespace bnn::samplers
