// Cost of sampling relative to optimisation: (time of an SMS-UBU sampling
// epoch) / (time of a plain SGD epoch) on the same model and the same batches,
// measured in one run, for mlp and fmnist_cnn. Also splits the sampler's
// overhead into noise generation and the elementwise update.
//
//   bnn_bench_sampling [--batches N] [--repeats R] [--threads T]
#include <chrono>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "data_loaders/dataset.h"
#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/random.h"
#include "samplers/registry.h"
#include "src/pipeline/model_oracle.h"
#include "src/runtime/threads.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double best_of(int repeats, F f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

void bench_model(const std::string& name, int64_t batches, int repeats) {
  const int64_t batch_size = 200;
  bnn::data_loaders::Split train;
  auto gen = bnn::samplers::make_generator(torch::kCPU, 1);
  train.images = torch::randn({batches * batch_size, 1, 28, 28}, gen);
  train.labels = torch::randint(10, {batches * batch_size}, gen, torch::kLong);
  const bnn::data_loaders::Partition partition(train, batch_size, 1);
  bnn::models::ModelSpec spec;
  spec.name = name;
  auto model = bnn::models::make_model(spec, 0);
  bnn::models::FlatParameters flat(*model);
  bnn::pipeline::ModelOracle oracle(*model, flat, partition);
  const int64_t d = flat.numel();

  auto sgd_epoch = [&] {
    for (int64_t b = 0; b < batches; ++b) {
      oracle.evaluate(b);
      torch::NoGradGuard no_grad;
      flat.values().add_(flat.grads(), -1e-6);
    }
  };
  const torch::Tensor anchor = flat.values().clone();
  auto options = bnn::samplers::LangevinOptions(1e-5).friction(7.07).rho(0.14).rho_max(0.85).estimator(
      bnn::samplers::GradientEstimator::kControlVariate);
  auto sampler = bnn::samplers::make_sampler("sms_ubu", oracle, anchor, options, 2);
  auto sample_epoch = [&] {
    for (int64_t b = 0; b < batches; ++b) sampler->step();
  };
  torch::Tensor noise = torch::empty({2, d});
  bnn::samplers::ChunkedNormal normal(torch::kCPU, 3, noise.numel());
  torch::Tensor a = torch::randn({d}), v = torch::randn({d});
  auto noise_only = [&] {
    for (int64_t b = 0; b < batches; ++b) {
      normal.fill(noise);  // two half-steps per step
      normal.fill(noise);
    }
  };
  auto update_only = [&] {  // the whole-vector passes of one UBU step, noise excluded
    torch::NoGradGuard no_grad;
    for (int64_t b = 0; b < batches; ++b) {
      for (int half = 0; half < 2; ++half) {
        a.add_(v, 0.1).add_(noise[0], 0.1);
        v.mul_(0.9).add_(noise[0], 0.1).add_(noise[1], 0.1);
      }
      v.add_(a, -0.1);
    }
  };
  sgd_epoch();  // warm-up
  sample_epoch();
  double sgd = 0, sample = 0;
  for (int r = 0; r < repeats; ++r) {  // interleaved so both see the same machine state
    sgd += best_of(1, sgd_epoch);
    sample += best_of(1, sample_epoch);
  }
  const double noise_t = best_of(repeats, noise_only);
  const double update_t = best_of(repeats, update_only);
  fmt::print("{:<11} d={:>9}  batches={:>3}  SGD epoch {:8.3f}s  SMS-UBU epoch {:8.3f}s  ratio {:.3f}\n", name, d,
             batches, sgd / repeats, sample / repeats, sample / sgd);
  fmt::print("{:<11} per epoch: noise draws {:.3f}s ({:.1f}% of SGD), UBU vector updates {:.3f}s ({:.1f}%)\n", "",
             noise_t, 100 * noise_t / (sgd / repeats), update_t, 100 * update_t / (sgd / repeats));
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batches = 20;
  int repeats = 3;
  int threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--batches") batches = std::atoll(argv[i + 1]);
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
    if (flag == "--threads") threads = std::atoi(argv[i + 1]);
  }
  bnn::runtime::configure_threads(threads);
  fmt::print("threads {}, batch 200, control-variate SMS-UBU with stored anchors and bounces\n",
             torch::get_num_threads());
  bench_model("mlp", batches * 5, repeats);
  bench_model("fmnist_cnn", batches, repeats);
  return 0;
}
