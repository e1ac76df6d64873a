// The Adam and SWA phases against the schedule written out here in double
// precision: the loss mean CE + (lambda/2)||x_w||^2 / N_D, Adam's update,
// the learning rate decaying linearly to 0 over the Adam epochs, then SWA at
// its constant rate with x* the equal-weight mean of every SWA iterate.
// A quadratic loss with known gradients stands in for the network.
#include "src/pipeline/optimiser_phases.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "samplers/random.h"

namespace bnn::pipeline {
namespace {

constexpr int64_t kExamples = 12;
constexpr int64_t kBatch = 4;
constexpr int64_t kBatches = kExamples / kBatch;
constexpr double kPrecision = 30.0;

// Example i's loss: sum_j a_j (x_j - c_ij)^2 / 2, so a batch's summed gradient
// is a * (B x - sum_i c_i). Targets per batch index (the partition's order
// does not matter to this oracle: it only names batches).
class QuadraticOracle : public samplers::GradientOracle {
 public:
  explicit QuadraticOracle(models::FlatParameters& flat)
      : flat_(flat),
        a_(torch::linspace(0.5, 2.0, flat.numel(), torch::kDouble)),
        c_(torch::randn({kBatches, kBatch, flat.numel()}, torch::kDouble)) {}

  torch::Tensor parameters() override { return flat_.values(); }
  torch::Tensor gradient() override { return flat_.grads(); }
  torch::Tensor prior_mask() override { return flat_.prior_mask(); }
  int64_t num_batches() const override { return kBatches; }
  torch::Tensor evaluate(int64_t b) override {
    const auto [grad, loss] = batch(flat_.values().to(torch::kDouble), b);
    flat_.grads().copy_(grad);
    return torch::tensor(loss, flat_.values().options());
  }

  // The summed gradient and loss of batch b at x, in double.
  std::pair<torch::Tensor, double> batch(const torch::Tensor& x, int64_t b) const {
    const torch::Tensor diff = x.unsqueeze(0) - c_[b];  // B x d
    const torch::Tensor grad = a_ * diff.sum(0);
    const double loss = (0.5 * a_ * diff * diff).sum().item<double>();
    return {grad, loss};
  }

 private:
  models::FlatParameters& flat_;
  torch::Tensor a_, c_;
};

struct Logged {
  std::string phase;
  int64_t epoch;
  double loss, rate;
};

class RecordingHooks : public PhaseHooks {
 public:
  std::vector<Logged> epochs;
  void check_finite(const std::string&, int64_t, double) override {}
  void log_epoch(const std::string& phase, int64_t epoch, int64_t, double loss, double, double rate,
                 Clock::time_point) override {
    epochs.push_back({phase, epoch, loss, rate});
  }
  void save_checkpoint(Position, torch::optim::Adam*) override {}
  torch::Tensor predict() override { return {}; }
  double accuracy(const torch::Tensor&) const override { return 0.0; }
  void write_npy(const std::filesystem::path&, const torch::Tensor&) const override {}
  void store_sample(int64_t) override {}
  void write_ood(const std::filesystem::path&, torch::ScalarType) override {}
};

// LibTorch's Adam defaults: betas 0.9 and 0.999, eps 1e-8, no weight decay.
struct ReferenceAdam {
  torch::Tensor m, v;
  int64_t t = 0;
  void step(torch::Tensor& x, const torch::Tensor& g, double lr) {
    if (t == 0) {
      m = torch::zeros_like(x);
      v = torch::zeros_like(x);
    }
    ++t;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double c1 = 1.0 - std::pow(0.9, static_cast<double>(t));
    const double c2 = 1.0 - std::pow(0.999, static_cast<double>(t));
    x = x - lr * (m / c1) / ((v / c2).sqrt() + 1e-8);
  }
};

TEST(OptimiserPhases, AdamThenSwaFollowTheirSchedule) {
  torch::manual_seed(3);
  torch::nn::Linear net(3, 2);  // 6 weights under the prior, 2 biases not
  models::FlatParameters flat(*net);
  QuadraticOracle oracle(flat);
  data_loaders::Split train{torch::zeros({kExamples, 1, 1, 1}), torch::zeros({kExamples}, torch::kLong), {}, {}};
  const data_loaders::Partition partition(train, kBatch, 0);
  config::Config cfg;
  cfg.adam = {3, 0.05};
  cfg.swa = {2, 0.01};
  cfg.prior.precision = kPrecision;
  at::Generator order = samplers::make_generator(torch::kCPU, 11);
  RecordingHooks hooks;
  OptimiserPhases phases(cfg, 0, oracle, flat, partition, order, hooks);

  // The reference, from the same start and the same batch orders.
  torch::Tensor x = flat.values().to(torch::kDouble);
  const torch::Tensor mask = flat.prior_mask().to(torch::kDouble);
  at::Generator same_order = samplers::make_generator(torch::kCPU, 11);
  ReferenceAdam adam_ref;
  std::vector<Logged> expected;
  torch::Tensor swa_sum = torch::zeros_like(x);
  int64_t swa_count = 0;
  const auto reference_epoch = [&](const std::string& phase, int64_t e, double lr) {
    const torch::Tensor perm = torch::randperm(kBatches, same_order, torch::TensorOptions().dtype(torch::kLong));
    double loss = 0.0;
    for (int64_t i = 0; i < kBatches; ++i) {
      const auto [grad, batch_loss] = oracle.batch(x, perm[i].item<int64_t>());
      loss += batch_loss;
      adam_ref.step(x, grad / kBatch + kPrecision / kExamples * mask * x, lr);
      if (phase == "swa") {
        swa_sum += x;
        ++swa_count;
      }
    }
    expected.push_back({phase, e, loss / kExamples, lr});
  };
  for (int64_t e = 0; e < 3; ++e) reference_epoch("adam", e, 0.05 * (1.0 - e / 3.0));
  for (int64_t e = 0; e < 2; ++e) reference_epoch("swa", e, 0.01);
  ASSERT_EQ(swa_count, 2 * kBatches);

  auto adam = make_adam(flat, *net, /*flat_layout=*/true, cfg.adam.lr);
  phases.adam(*adam, 0);
  torch::Tensor sum;
  int64_t count = -1;
  phases.swa(*adam, 0, sum, count);

  EXPECT_EQ(count, swa_count);
  EXPECT_TRUE(torch::allclose(sum, swa_sum, 1e-5, 1e-6)) << (sum - swa_sum).abs().max();
  const torch::Tensor x_star = swa_sum / static_cast<double>(swa_count);
  EXPECT_TRUE(torch::allclose(flat.values().to(torch::kDouble), x_star, 1e-5, 1e-6))
      << (flat.values().to(torch::kDouble) - x_star).abs().max();
  // x* is not the last iterate: the average matters here.
  EXPECT_GT((x - x_star).abs().max().item<double>(), 1e-3);
  ASSERT_EQ(hooks.epochs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].phase + " epoch " + std::to_string(expected[i].epoch));
    EXPECT_EQ(hooks.epochs[i].phase, expected[i].phase);
    EXPECT_EQ(hooks.epochs[i].epoch, expected[i].epoch);
    EXPECT_DOUBLE_EQ(hooks.epochs[i].rate, expected[i].rate);
    EXPECT_NEAR(hooks.epochs[i].loss, expected[i].loss, 1e-5 * expected[i].loss);
  }
}

}  // namespace
}  // namespace bnn::pipeline
