// Cost of sampling relative to optimisation: (time of a sampling epoch) /
// (time of a plain SGD epoch) on the same model and the same batches, measured
// in one run and interleaved, for every sampler of samplers/registry.h (nogin
// only with --samplers) and for mlp and fmnist_cnn; samplers with a fused step
// also with the tensor operations it replaces ("tensor ops"). Also splits SMS-UBU's overhead into noise generation and
// the elementwise update, and times the same noise from LibTorch's normal_.
//
//   bnn_bench_sampling [--batches N] [--repeats R] [--threads T] [--samplers a,b] [--models mlp,fmnist_cnn]
//                      [--device cpu|cuda|cuda:N]
//
// On CUDA the data, model and chains live on the GPU and each timed epoch ends
// with a device synchronisation.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/cuda.h>

#include "data_loaders/dataset.h"
#include "models/flat_parameters.h"
#include "models/registry.h"
#include "samplers/kinetic_langevin.h"
#include "samplers/random.h"
#include "samplers/registry.h"
#include "src/cli/options.h"
#include "src/pipeline/model_oracle.h"
#include "src/pipeline/run.h"
#include "src/runtime/threads.h"

BNN_OPENMP_WAIT_DEFAULT;  // as in bnn (Note [OpenMP wait policy])

namespace {

using Clock = std::chrono::steady_clock;

torch::Device g_device = torch::kCPU;

// Waits for the benchmark's own GPU (torch::cuda::synchronize() alone waits
// for the current device, 0, whatever --device cuda:N says).
void sync() {
  if (g_device.is_cuda()) torch::cuda::synchronize(g_device.has_index() ? g_device.index() : 0);
}

template <typename F>
double best_of(int repeats, F f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    sync();
    const auto t0 = Clock::now();
    f();
    sync();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// An oracle whose gradient costs nothing (always zero), for timing the
// sampler's own work per step: noise, updates, bounce checks.
class FreeOracle : public bnn::samplers::GradientOracle {
 public:
  FreeOracle(int64_t d, int64_t batches, torch::Device device)
      : x_(torch::zeros({d}, torch::TensorOptions().device(device))),
        g_(torch::zeros_like(x_)),
        mask_(torch::ones_like(x_)),
        batches_(batches) {}
  torch::Tensor parameters() override { return x_; }
  torch::Tensor gradient() override { return g_; }
  torch::Tensor prior_mask() override { return mask_; }
  int64_t num_batches() const override { return batches_; }
  torch::Tensor evaluate(int64_t) override { return torch::zeros({}, x_.options()); }

 private:
  torch::Tensor x_, g_, mask_;
  int64_t batches_;
};

void bench_model(const std::string& name, int64_t batches, int repeats, const std::vector<std::string>& samplers) {
  const int64_t batch_size = 200;
  bnn::data_loaders::Split train;
  auto gen = bnn::samplers::make_generator(torch::kCPU, 1);
  train.images = torch::randn({batches * batch_size, 1, 28, 28}, gen);
  train.labels = torch::randint(10, {batches * batch_size}, gen, torch::kLong);
  train.images = train.images.to(g_device);
  train.labels = train.labels.to(g_device);
  const bnn::data_loaders::Partition partition(train, batch_size, 1);
  bnn::models::ModelSpec spec;
  spec.name = name;
  auto model = bnn::models::make_model(spec, 0);
  model->to(g_device);
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
  // Every sampler twice where it has a fused step (Note [Fused steps]): as
  // bnn runs it, and with the tensor operations it replaces.
  // Each also on FreeOracle: the sampler's own work, without the gradient.
  std::vector<std::unique_ptr<bnn::samplers::Sampler>> chains, own;
  std::vector<std::string> labels;
  std::string fused_path = "tensor operations";
  FreeOracle free_oracle(d, batches, g_device);
  for (const auto& s : samplers) {
    for (const bool fused : {true, false}) {
      auto o = options;
      if (s == "csghmc") o.cycle_length(batches);
      if (s == "obabo") o.mh_block(batches);  // one Metropolis-Hastings test per epoch
      flat.values().copy_(anchor);            // the control variate starts at x*
      auto chain = bnn::samplers::make_sampler(s, oracle, anchor, o, 2);
      auto* kinetic = dynamic_cast<bnn::samplers::KineticLangevin*>(chain.get());
      const bool has_fused = kinetic != nullptr && kinetic->fused_steps();
      if (!fused && !has_fused) continue;
      if (has_fused) fused_path = kinetic->fused_path();
      if (kinetic != nullptr) kinetic->set_fused_steps(fused);
      labels.push_back(fused ? s : s + " (tensor ops)");
      chains.push_back(std::move(chain));
      free_oracle.parameters().zero_();
      auto alone = bnn::samplers::make_sampler(s, free_oracle, torch::zeros({d}, anchor.options()), o, 2);
      if (auto* k = dynamic_cast<bnn::samplers::KineticLangevin*>(alone.get())) k->set_fused_steps(fused);
      own.push_back(std::move(alone));
    }
  }
  auto sample_epoch = [&](size_t i) {
    for (int64_t b = 0; b < batches; ++b) chains[i]->step();
  };
  const auto on = torch::TensorOptions().device(g_device);
  torch::Tensor noise = torch::empty({2, d}, on);
  bnn::samplers::ChunkedNormal normal(noise, 3);
  torch::Tensor a = torch::randn({d}, on), v = torch::randn({d}, on);
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
  for (size_t i = 0; i < chains.size(); ++i) sample_epoch(i);
  double sgd = 0;
  std::vector<double> sample(chains.size(), 0.0);
  std::vector<double> own_t(chains.size(), 0.0);
  for (int r = 0; r < repeats; ++r) {  // interleaved so all see the same machine state
    sgd += best_of(1, sgd_epoch);
    for (size_t i = 0; i < chains.size(); ++i) {
      sample[i] += best_of(1, [&] { sample_epoch(i); });
      own_t[i] += best_of(1, [&] {
        for (int64_t b = 0; b < batches; ++b) own[i]->step();
      });
    }
  }
  auto gen_noise = bnn::samplers::make_generator(g_device, 4);
  auto libtorch_noise_only = [&] {  // the same draws from LibTorch's normal_ on the whole buffer
    for (int64_t b = 0; b < batches; ++b) {
      noise.normal_(0.0, 1.0, gen_noise);
      noise.normal_(0.0, 1.0, gen_noise);
    }
  };
  const double noise_t = best_of(repeats, noise_only);
  const double libtorch_noise_t = best_of(repeats, libtorch_noise_only);
  const double update_t = best_of(repeats, update_only);
  fmt::print("{} d={} batches={}: SGD epoch {:.3f}s; fused steps: {}\n", name, d, batches, sgd / repeats, fused_path);
  for (size_t i = 0; i < chains.size(); ++i) {
    fmt::print("  {:<24} epoch {:8.3f}s  ratio {:.3f}   own work (no gradient) {:.3f}s = {:5.1f}% of SGD\n", labels[i],
               sample[i] / repeats, sample[i] / sgd, own_t[i] / repeats, 100 * own_t[i] / sgd);
  }
  fmt::print(
      "  SMS-UBU overhead per epoch: noise draws {:.3f}s ({:.1f}% of SGD), UBU vector updates {:.3f}s ({:.1f}%)\n",
      noise_t, 100 * noise_t / (sgd / repeats), update_t, 100 * update_t / (sgd / repeats));
  fmt::print("  the same noise from LibTorch's normal_ on the whole buffer: {:.3f}s ({:.2f}x bnn's ChunkedNormal)\n",
             libtorch_noise_t, libtorch_noise_t / noise_t);
  std::fflush(stdout);  // a long run killed later keeps this model's numbers
}

std::vector<std::string> listed(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) out.push_back(item);
  return out;
}

int bench_main(int argc, char** argv) {
  cxxopts::Options options("bnn_bench_sampling",
                           "Sampling epoch / plain SGD epoch for every sampler, on mlp and fmnist_cnn");
  options.add_options()
      ("batches", "fmnist_cnn's batches of 200 per epoch (the mlp's: 5 times as many)",
       cxxopts::value<int64_t>()->default_value("20"))
      ("repeats", "repeats of each timing (the best counts)", cxxopts::value<int>()->default_value("3"))
      ("threads", "intra-op threads (0: bnn's default)", cxxopts::value<int>()->default_value("0"))
      // nogin only when named: its per-example gradients cost about 2 N_b = 400
      // backward passes per step with the control variate (minutes per epoch).
      ("samplers", "comma-separated samplers (default: all but nogin)", cxxopts::value<std::string>())
      ("models", "comma-separated models: mlp, fmnist_cnn", cxxopts::value<std::string>()->default_value(
                                                                 "mlp,fmnist_cnn"))
      ("device", "cpu, cuda or cuda:N", cxxopts::value<std::string>()->default_value("cpu"))
      ("h,help", "show this help");
  // bnn's own parsing: --help, a bad value named with what it takes, a stray word.
  const std::optional<cxxopts::ParseResult> parsed = bnn::cli::parse_or_help(options, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  const int64_t batches = args["batches"].as<int64_t>();
  const int repeats = args["repeats"].as<int>(), threads = args["threads"].as<int>();
  if (batches < 1 || repeats < 1 || threads < 0) {
    throw bnn::config::ConfigError("--batches and --repeats must be at least 1, --threads at least 0");
  }
  std::vector<std::string> samplers;
  if (args.count("samplers")) {
    samplers = listed(args["samplers"].as<std::string>());
  } else {
    for (const auto& s : bnn::samplers::sampler_names()) {
      if (s != "nogin") samplers.push_back(s);
    }
  }
  const std::vector<std::string> models = listed(args["models"].as<std::string>());
  for (const auto& m : models) {
    if (m != "mlp" && m != "fmnist_cnn") {
      throw bnn::config::ConfigError(fmt::format("--models: unknown model '{}'; valid: mlp, fmnist_cnn", m));
    }
  }
  // bnn run's own check: an unavailable device is one line saying why (no CUDA build, hidden GPUs, driver).
  g_device = bnn::pipeline::resolve_device(args["device"].as<std::string>());
  bnn::runtime::configure_threads(threads);
  fmt::print(
      "device {}, threads {}, batch 200, control variate with stored anchors, bounces; obabo with one MH test per "
      "epoch\n",
      g_device.str(), torch::get_num_threads());
  for (const auto& m : models) bench_model(m, m == "mlp" ? batches * 5 : batches, repeats, samplers);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const bnn::config::ConfigError& e) {
    fmt::print(stderr, "bnn_bench_sampling: error: {}\n", e.what());
    return 2;
  } catch (const cxxopts::exceptions::exception& e) {  // an option it does not have
    fmt::print(stderr, "bnn_bench_sampling: error: {}\n", e.what());
    return 2;
  } catch (const c10::Error& e) {  // without LibTorch's stack trace
    fmt::print(stderr, "bnn_bench_sampling: error: {}\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bnn_bench_sampling: error: {}\n", e.what());
    return 1;
  }
}
