// Note [Fused steps]: the fused passes give the same bits as the tensor
// operations they replace, for every sampler that has them, every way of
// forming the force, with bounces, across generator chunks, whatever the
// thread count; and the generator jumps they rely on (Note [Lane jumps]).
// Note [Buffered passes]: the GPU's passes, run on the host, give the same
// bits too, bounce included. And UBU's step without a force is the exact
// Ornstein-Uhlenbeck flow on every path.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "samplers/bounce.h"
#include "samplers/coordinate_updates.h"
#include "samplers/fused_step.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/normal_kernel.h"
#include "samplers/registry.h"
#include "tests/samplers/force_forms.h"
#include "tests/samplers/quadratic_oracle.h"

namespace bnn::samplers {
namespace {

bool same_lanes(const detail::NormalLanes& a, const detail::NormalLanes& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(LaneJump, EqualsTheStepsItSkips) {
  for (const int64_t steps : {int64_t{1}, int64_t{7}, int64_t{300}, detail::kBlocksPerChunk - 1}) {
    SCOPED_TRACE(steps);
    detail::NormalLanes walked, jumped;
    detail::seed_normal_lanes(walked, 2026 + static_cast<uint64_t>(steps));
    jumped = walked;
    std::vector<float> skipped(static_cast<size_t>(steps * 2 * detail::kNormalLanes));
    detail::fill_standard_normal(walked, skipped.data(), static_cast<int64_t>(skipped.size()));
    detail::LaneJump jump;
    detail::make_lane_jump(steps, jump);
    ASSERT_FALSE(same_lanes(walked, jumped));
    detail::apply_lane_jump(jump, jumped);
    EXPECT_TRUE(same_lanes(walked, jumped));
    float a[16], b[16];
    detail::fill_standard_normal(walked, a, 16);
    detail::fill_standard_normal(jumped, b, 16);
    EXPECT_EQ(std::memcmp(a, b, sizeof a), 0);
  }
}

TEST(FusedSteps, AtensRoundingOfAddIsKnown) {
  // Where it is not, the fused path is off everywhere: a slow bnn, not a
  // wrong one, but it should be noticed.
  EXPECT_TRUE(aten_add_rounding().has_value()) << fused_step_description();
}

// Coordinates over three generator chunks per UBU stream, not a multiple of
// the 16-draw block, and enough for several threads' pieces.
constexpr int64_t kDim = 2 * detail::kNoiseChunk + 12345;
constexpr double kFusedAnchor = 0.3;

testing::QuadraticOracle make_fused_oracle() {
  torch::Tensor mask = torch::zeros({kDim}, torch::kDouble);
  mask.narrow(0, 0, kDim / 2).fill_(1.0);
  return testing::QuadraticOracle(kDim, {1.0, 2.0, 0.5, 1.5}, {-1.0, 0.5, 2.0, 0.0}, mask, kFusedAnchor, torch::kCPU,
                                  torch::kFloat);
}

using testing::Estimator;
using testing::has_fused_step;
using testing::kEstimators;

constexpr double kBox = 0.4;

LangevinOptions fused_options_for(const std::string& name, const Estimator& e, double rho_max) {
  auto o = LangevinOptions(0.05).friction(2.0).rho(0.3).rho_max(rho_max).estimator(e.estimator).anchor_gradients(
      e.anchors);
  if (name == "csghmc") o.cycle_length(4);
  return o;
}

struct Chain {
  testing::QuadraticOracle oracle = make_fused_oracle();
  std::unique_ptr<Sampler> sampler;

  Chain(const std::string& name, const Estimator& e, bool fused, double rho_max = kBox) {
    const torch::Tensor anchor = torch::full({kDim}, kFusedAnchor, torch::kFloat);
    sampler = make_sampler(name, oracle, anchor, fused_options_for(name, e, rho_max), 7);
    auto& kinetic = dynamic_cast<KineticLangevin&>(*sampler);
    kinetic.set_fused_steps(fused);
    // Fast velocities, so that many coordinates leave the box in the first
    // steps and the bounces run (SGLD has none: its noise does it).
    torch::Tensor v = sampler->velocity();
    v.mul_(3.0);
  }
  KineticLangevin& kinetic() { return dynamic_cast<KineticLangevin&>(*sampler); }
  torch::Tensor x() { return oracle.parameters(); }
};

int64_t outside_box(const torch::Tensor& x) { return ((x - kFusedAnchor).abs() > kBox).sum().item<int64_t>(); }

// Every fused sampler with every way of forming the force, 6 steps with
// bounces: the fused chain takes `path` and gives the tensor operations' bits.
void expect_the_tensor_paths_bits(const std::string& path) {
  for (const auto& name : sampler_names()) {
    if (!has_fused_step(name)) continue;
    for (const Estimator& e : kEstimators) {
      SCOPED_TRACE(name + ", " + e.name);
      Chain fused(name, e, true), reference(name, e, false);
      ASSERT_EQ(fused.kinetic().fused_path(), path);
      ASSERT_TRUE(fused.kinetic().fused_steps());
      ASSERT_FALSE(reference.kinetic().fused_steps());
      for (int step = 0; step < 6; ++step) {
        const torch::Tensor loss_f = fused.sampler->step(), loss_r = reference.sampler->step();
        EXPECT_TRUE(loss_f.equal(loss_r));
        EXPECT_EQ(outside_box(fused.x()), 0);
      }
      EXPECT_TRUE(fused.x().equal(reference.x()));
      EXPECT_TRUE(fused.sampler->velocity().equal(reference.sampler->velocity()));
      EXPECT_EQ(fused.sampler->diagnostics(), reference.sampler->diagnostics());
      EXPECT_TRUE(torch::isfinite(fused.x()).all().item<bool>());
    }
  }
}

TEST(FusedSteps, SameBitsAsTheTensorOperations) {
  expect_the_tensor_paths_bits("cpu passes");
  for (const auto& name : sampler_names()) {
    if (!has_fused_step(name)) continue;
    // The same chain without the box leaves it: the steps above bounced.
    Chain free(name, kEstimators[0], true, std::numeric_limits<double>::infinity());
    for (int step = 0; step < 6; ++step) free.sampler->step();
    EXPECT_GT(outside_box(free.x()), kDim / 100) << name;
  }
}

// BNN_FUSED_STEPS set to `value` while it lives; the value before, after.
class ScopedFusedSteps {
 public:
  explicit ScopedFusedSteps(const char* value) {
    if (const char* before = std::getenv("BNN_FUSED_STEPS")) before_ = before;
    ::setenv("BNN_FUSED_STEPS", value, 1);
  }
  ~ScopedFusedSteps() {
    if (before_) {
      ::setenv("BNN_FUSED_STEPS", before_->c_str(), 1);
    } else {
      ::unsetenv("BNN_FUSED_STEPS");
    }
  }
  ScopedFusedSteps(const ScopedFusedSteps&) = delete;
  ScopedFusedSteps& operator=(const ScopedFusedSteps&) = delete;

 private:
  std::optional<std::string> before_;
};

TEST(FusedSteps, BufferedPassesGiveTheTensorPathsBits) {
  // The code of the CUDA kernels (one coordinate per thread, noise drawn into
  // the buffer first, the bounce inside the pass), run on the host.
  const ScopedFusedSteps buffered("buffered");
  expect_the_tensor_paths_bits("buffered passes on cpu");
}

TEST(FusedSteps, OneCoordinatesReflectionIsReflectIntoBox) {
  // The bounce of the buffered passes against the tensor operations, on
  // points up to 20 box widths out (many folds, both velocity signs), the
  // box's edges and the points just beyond them.
  constexpr double kRhoMax = 0.37;
  constexpr int64_t kPoints = 20000;
  torch::Tensor anchor = torch::rand({kPoints}) - 0.5;
  torch::Tensor x = anchor + (torch::rand({kPoints}) - 0.5) * (40 * kRhoMax);
  // The edges exactly: anchor 0, so that x - anchor is x.
  const float w = static_cast<float>(kRhoMax);
  const float edges[] = {w, -w, std::nextafter(w, 1.0f), -std::nextafter(w, 1.0f), 3 * w, -3 * w, 0.0f};
  for (int64_t i = 0; i < 7; ++i) {
    anchor[i] = 0.0f;
    x[i] = edges[i];
  }
  torch::Tensor v = torch::randn({kPoints});
  const torch::Tensor v_before = v.clone();
  torch::Tensor x_ref = x.clone(), v_ref = v.clone(), scratch;
  reflect_into_box(x_ref, v_ref, anchor, kRhoMax, scratch);
  const float two_w = static_cast<float>(2 * kRhoMax);
  const detail::Reflection box{w, two_w, static_cast<float>(4 * kRhoMax), 1.0f / two_w};
  float* xs = x.data_ptr<float>();
  float* vs = v.data_ptr<float>();
  const float* as = anchor.data_ptr<float>();
  for (int64_t i = 0; i < kPoints; ++i) detail::reflect(xs[i], vs[i], as[i], box);
  EXPECT_TRUE(x.equal(x_ref));
  EXPECT_TRUE(v.equal(v_ref));
  EXPECT_LE((x - anchor).abs().max().item<double>(), kRhoMax + 1e-6);  // float rounding of w and of a + folded
  EXPECT_GT((v_ref != v_before).sum().item<int64_t>(), kPoints / 10);  // velocities did flip
  EXPECT_TRUE(x_ref[2].item<float>() != edges[2] && x_ref[0].item<float>() == edges[0]);  // just out, on the edge
}

TEST(FusedSteps, SameBitsWithOneThreadAsWithSeveral) {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  Chain one("sms_ubu", kEstimators[1], true), baoab_one("sms_baoab", kEstimators[1], true);
  for (int step = 0; step < 4; ++step) {
    one.sampler->step();
    baoab_one.sampler->step();
  }
  torch::set_num_threads(std::max(threads, 3));  // more pieces than this machine's 2 cores
  Chain several("sms_ubu", kEstimators[1], true), baoab_several("sms_baoab", kEstimators[1], true);
  for (int step = 0; step < 4; ++step) {
    several.sampler->step();
    baoab_several.sampler->step();
  }
  torch::set_num_threads(threads);
  EXPECT_TRUE(one.x().equal(several.x()));
  EXPECT_TRUE(one.sampler->velocity().equal(several.sampler->velocity()));
  EXPECT_TRUE(baoab_one.x().equal(baoab_several.x()));
}

TEST(FusedSteps, CheckpointsAreTheSameEitherWay) {
  // A chain checkpointed on one path and resumed on another (CPU passes,
  // tensor operations, buffered passes) continues as if never interrupted.
  enum class Path { kCpu, kTensor, kBuffered };
  auto chain = [](const char* name, Path path) {
    std::unique_ptr<ScopedFusedSteps> env;
    if (path == Path::kBuffered) env = std::make_unique<ScopedFusedSteps>("buffered");
    return std::make_unique<Chain>(name, kEstimators[1], path != Path::kTensor);
  };
  const std::pair<Path, Path> moves[] = {{Path::kCpu, Path::kTensor},
                                         {Path::kTensor, Path::kCpu},
                                         {Path::kBuffered, Path::kCpu},
                                         {Path::kTensor, Path::kBuffered}};
  for (const char* name : {"sms_ubu", "sms_baoab", "sghmc"}) {
    for (const auto& [first, second] : moves) {
      SCOPED_TRACE(std::string(name) + ": path " + std::to_string(static_cast<int>(first)) + " then " +
                   std::to_string(static_cast<int>(second)));
      auto a = chain(name, first);
      for (int i = 0; i < 3; ++i) a->sampler->step();
      std::stringstream buffer;
      {
        torch::serialize::OutputArchive out;
        a->sampler->save(out);
        out.save_to(buffer);
      }
      for (int i = 0; i < 3; ++i) a->sampler->step();
      auto b = chain(name, second);
      torch::serialize::InputArchive in;
      in.load_from(buffer);
      b->sampler->load(in);
      for (int i = 0; i < 3; ++i) b->sampler->step();
      EXPECT_TRUE(a->x().equal(b->x()));
      EXPECT_TRUE(a->sampler->velocity().equal(b->sampler->velocity()));
    }
  }
}

TEST(FusedSteps, OffWhereTheyCannotRunOrAreTurnedOff) {
  // double chains
  torch::Tensor mask = torch::ones({100}, torch::kDouble);
  testing::QuadraticOracle in_double(100, {1.0}, {0.0}, mask, 0.0);
  auto d = make_sampler("sms_ubu", in_double, torch::zeros({100}, torch::kDouble), LangevinOptions(0.1), 1);
  EXPECT_FALSE(dynamic_cast<KineticLangevin&>(*d).fused_steps());
  // a noise hook (coupled chains draw shared noise)
  Chain hooked("sms_ubu", kEstimators[0], true);
  hooked.kinetic().set_noise_hook([](torch::Tensor& buffer) { buffer.zero_(); });
  EXPECT_FALSE(hooked.kinetic().fused_steps());
  // BNN_FUSED_STEPS=0
  ::setenv("BNN_FUSED_STEPS", "0", 1);
  Chain off("sms_ubu", kEstimators[0], false);
  auto o = make_sampler("sms_ubu", off.oracle, torch::full({kDim}, kFusedAnchor, torch::kFloat), LangevinOptions(0.1), 1);
  ::unsetenv("BNN_FUSED_STEPS");
  EXPECT_FALSE(dynamic_cast<KineticLangevin&>(*o).fused_steps());
  EXPECT_NE(fused_step_description().find("rounding like ATen"), std::string::npos) << fused_step_description();
}

TEST(FusedSteps, TheEnvironmentChoosesThePathAndBadValuesAreNamed) {
  Chain automatic("sms_ubu", kEstimators[0], true);
  EXPECT_EQ(automatic.kinetic().fused_path(), "cpu passes");
  {
    const ScopedFusedSteps off("0");
    EXPECT_EQ(fused_choice_from_environment(), FusedChoice::kOff);
  }
  {
    const ScopedFusedSteps bad("yes");
    try {
      Chain chain("sms_ubu", kEstimators[0], true);
      ADD_FAILURE() << "BNN_FUSED_STEPS=yes was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_STREQ(error.what(),
                   "BNN_FUSED_STEPS: 'yes' is not 0 (tensor operations), 1 (fused passes, the default) or buffered");
    }
  }
  EXPECT_EQ(fused_choice_from_environment(), FusedChoice::kAuto);
  EXPECT_EQ(fused_step_description().find("CUDA: buffered passes built") != std::string::npos, cuda_kernels_built());
}

// UBU with no force: U(h/2), a kick by zero, U(h/2) is the exact flow of
// dx = v dt, dv = -gamma v dt + sqrt(2 gamma) dW over h. From fixed x0, v0,
//   x ~ x0 + (1 - e^{-gamma h})/gamma v0 + N(0, Vx),
//   Vx = (2 gamma h - 3 + 4 e^{-gamma h} - e^{-2 gamma h}) / gamma^2,
//   v ~ e^{-gamma h} v0 + N(0, 1 - e^{-2 gamma h}),   Cov(x, v) = (1 - e^{-gamma h})^2 / gamma,
// computed here from the formulas, not from samplers/ubu_constants.h. One
// step over 10^6 coordinates on each path (the bits-equality tests above
// cannot see a change made to every path alike, and
// CoupledBias.ForceFreeCoupledChainsCoincide checks only the tensor path's
// U(h/2) U(h/2) = U(h), not the law of U). Standard errors from the
// exact moments: sd/1000 for a mean, sqrt(2) var/1000 for a variance,
// sqrt(Var x Var v + Cov^2)/1000 for the covariance; tolerances 5 of them
// (0.71% on a variance). A doubled Var Zx in each U(h/2) makes Var x 50% too
// large here (measured), but moves the stationary Var x by under 2%, inside
// the moment tests' bounds.
TEST(FusedSteps, UbuStepWithoutForceIsTheExactFlowOnEveryPath) {
  constexpr int64_t n = 1000000;
  const double gamma = 2.0, h = 0.5, x0 = 0.3, v0 = 1.5;
  const double e1 = std::exp(-gamma * h), e2 = std::exp(-2 * gamma * h);
  const double mean_x = x0 + (1 - e1) / gamma * v0, mean_v = e1 * v0;
  const double var_x = (2 * gamma * h - 3 + 4 * e1 - e2) / (gamma * gamma), var_v = 1 - e2;
  const double cov = (1 - e1) * (1 - e1) / gamma;
  const double root_n = std::sqrt(static_cast<double>(n));
  enum class Path { kTensor, kCpu, kBuffered };
  for (const Path path : {Path::kTensor, Path::kCpu, Path::kBuffered}) {
    std::unique_ptr<ScopedFusedSteps> env;
    if (path == Path::kBuffered) env = std::make_unique<ScopedFusedSteps>("buffered");
    // A flat target: one batch of precision 0, no prior, no localization, so G = 0.
    testing::QuadraticOracle oracle(n, {0.0}, {0.0}, torch::zeros({n}, torch::kDouble), x0, torch::kCPU,
                                    torch::kFloat);
    auto sampler = make_sampler("sms_ubu", oracle, torch::full({n}, x0, torch::kFloat),
                                LangevinOptions(h).friction(gamma).prior_precision(0.0), 13);
    auto& kinetic = dynamic_cast<KineticLangevin&>(*sampler);
    kinetic.set_fused_steps(path != Path::kTensor);
    const std::string name = kinetic.fused_steps() ? kinetic.fused_path() : "tensor operations";
    SCOPED_TRACE(name);
    ASSERT_EQ(name, path == Path::kTensor ? "tensor operations"
                    : path == Path::kCpu  ? "cpu passes"
                                          : "buffered passes on cpu");
    torch::Tensor v = sampler->velocity();
    v.fill_(v0);
    sampler->step();
    const torch::Tensor x = oracle.parameters().to(torch::kDouble), w = sampler->velocity().to(torch::kDouble);
    const double mx = x.mean().item<double>(), mv = w.mean().item<double>();
    const torch::Tensor dx = x - mx, dv = w - mv;
    EXPECT_NEAR(mx, mean_x, 5 * std::sqrt(var_x) / root_n);
    EXPECT_NEAR(mv, mean_v, 5 * std::sqrt(var_v) / root_n);
    EXPECT_NEAR(dx.pow(2).mean().item<double>() / var_x, 1.0, 5 * std::sqrt(2.0) / root_n);
    EXPECT_NEAR(dv.pow(2).mean().item<double>() / var_v, 1.0, 5 * std::sqrt(2.0) / root_n);
    EXPECT_NEAR((dx * dv).mean().item<double>(), cov, 5 * std::sqrt(var_x * var_v + cov * cov) / root_n);
  }
}

}  // namespace
}  // namespace bnn::samplers
