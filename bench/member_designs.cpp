// Several members on one device, four ways, to choose how bnn trains them
// (issue: many members per GPU). A step is a forward and backward pass of
// each of K members on its own batch; the samplers' update, a few fused
// kernels per step, is bnn_bench_sampling's.
//
//   one-by-one  K models, their steps one after another
//   streams     K worker threads, each with its own model and, on CUDA, its
//               own stream (Note [Members per device]: what bnn run does)
//   stacked     the K models as one StackedMembers (Note [Stacked members]):
//               each layer one kernel for all members
//   graph       stacked, its step captured once as a CUDA graph and
//               replayed (CUDA builds with c10/cuda only)
//
//   bnn_bench_members [--device cpu|cuda|cuda:N] [--models fmnist_cnn,mlp] [--members 1,2,4,8,16]
//                     [--designs one-by-one,streams,stacked,graph] [--steps N] [--repeats R] [--batch B]
//                     [--channels-last] [--cudnn-benchmark] [--threads T] [--csv FILE]
//
// For each model, member count and design: milliseconds per step of all K
// members, member-steps/s, member-epochs/s (epochs of 60,000 examples, as
// Fashion-MNIST's training set), the speed-up in member-steps/s over the
// model's first row (one-by-one with the first member count, by default),
// TFLOP/s (3x the forward FLOPs StackedMembers counts), and on CUDA
// the peak memory the caching allocator handed out, per member (for stacked
// and graph it includes the K member models' parameters, which those
// designs copy from). A design that fails (out of memory, a capture LibTorch
// refuses) is a row saying so, the rest go on, and the exit code is then 1.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <torch/cuda.h>

#include "models/registry.h"
#include "models/stacked_members.h"
#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/pipeline/run.h"
#include "src/runtime/device_streams.h"
#include "src/runtime/threads.h"

#if BNN_HAVE_C10_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

BNN_OPENMP_WAIT_DEFAULT;  // as in bnn (Note [OpenMP wait policy])

namespace {

namespace F = torch::nn::functional;
using Clock = std::chrono::steady_clock;
using bnn::models::Classifier;
using bnn::models::StackedMembers;

constexpr double kEpochExamples = 60000;
const std::vector<std::string> kDesigns = {"one-by-one", "streams", "stacked", "graph"};

class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Settings {
  torch::Device device = torch::kCPU;
  std::vector<std::string> models;
  std::vector<int64_t> members;
  std::vector<std::string> designs;
  int steps = 10;
  int repeats = 3;
  int64_t batch = 200;
  bool channels_last = false;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

void sync(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Best of `repeats` timings of f(), in seconds, each ended by a device synchronisation.
double best_of(torch::Device device, int repeats, const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    sync(device);
    const auto t0 = Clock::now();
    f();
    sync(device);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

void forget_gradients(const std::vector<torch::Tensor>& parameters) {
  for (auto p : parameters) p.mutable_grad() = torch::Tensor();
}

void member_step(Classifier& model, const torch::Tensor& images, const torch::Tensor& labels) {
  forget_gradients(model.parameters());
  F::cross_entropy(model.forward(images), labels).backward();
}

// The sum of the members' mean losses: member k's slices get member k's gradient.
void stacked_forward_backward(StackedMembers& stacked, const torch::Tensor& images, const torch::Tensor& labels) {
  const auto logits = stacked.forward(images);
  const int64_t rows = logits.size(0) * logits.size(1);
  F::cross_entropy(logits.reshape({rows, logits.size(2)}), labels.reshape(-1),
                   F::CrossEntropyFuncOptions().reduction(torch::kSum))
      .div(images.size(1))
      .backward();
}

void reset_peak_memory(torch::Device device) {
#if BNN_HAVE_C10_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#else
  (void)device;
#endif
}

// Peak bytes handed out by LibTorch's CUDA allocator since the last reset; nullopt where unknown.
std::optional<double> peak_memory(torch::Device device) {
#if BNN_HAVE_C10_CUDA
  if (device.is_cuda()) {
    // The first entry is the aggregate over the pools (StatType::AGGREGATE,
    // an enum whose namespace moved in LibTorch 2.x).
    return static_cast<double>(
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes.front().peak);
  }
#else
  (void)device;
#endif
  return std::nullopt;
}

// K worker threads that live as long as the object, each on its own stream
// (WorkerStream), as bnn run's workers live for a whole run: dispatch(n)
// has each run n steps of its member and returns when all have queued them.
class Workers {
 public:
  Workers(torch::Device device, int64_t count, std::function<void(int64_t member)> step)
      : device_(device), step_(std::move(step)) {
    for (int64_t m = 0; m < count; ++m) threads_.emplace_back([this, m] { work(m); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  void dispatch(int steps) {
    std::unique_lock<std::mutex> lock(mutex_);
    steps_ = steps;
    pending_ = static_cast<int64_t>(threads_.size());
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [this] { return pending_ == 0; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void work(int64_t member) {
    std::optional<bnn::runtime::WorkerStream> stream;
    std::exception_ptr failed;
    try {
      stream.emplace(device_);
    } catch (...) {
      failed = std::current_exception();
    }
    int64_t seen = 0;
    for (;;) {
      int steps = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        steps = steps_;
      }
      std::exception_ptr error = failed;
      try {
        for (int s = 0; s < steps && !error; ++s) step_(member);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (error && !error_) error_ = error;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  torch::Device device_;
  std::function<void(int64_t)> step_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  int64_t generation_ = 0;
  int steps_ = 0;
  int64_t pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

struct Row {
  std::string model, design;
  int64_t members = 0;
  double seconds_per_step = 0;  // all K members
  std::optional<double> peak_bytes;
  std::string failure;
};

class Bench {
 public:
  Bench(const Settings& settings, const std::string& model_name, int64_t k)
      : settings_(settings), device_(settings.device), k_(k) {
    const auto spec = bnn::models::default_spec(model_name);
    for (int64_t m = 0; m < k; ++m) {
      auto model = bnn::models::make_model(spec, /*seed=*/1000 + static_cast<uint64_t>(m));
      model->to(device_);
      if (settings.channels_last) {
        torch::NoGradGuard no_grad;
        for (auto& p : model->parameters()) {
          if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
        }
      }
      model->train();
      models_.push_back(model);
    }
    std::vector<int64_t> shape = {k, settings.batch};
    shape.insert(shape.end(), spec.input_shape.begin(), spec.input_shape.end());
    torch::manual_seed(1);
    images_ = torch::randn(shape).to(device_);
    labels_ = torch::randint(spec.num_classes, {k, settings.batch}, torch::kLong).to(device_);
    for (int64_t m = 0; m < k; ++m) {
      auto x = images_[m];
      if (settings.channels_last && x.dim() == 4) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
      member_images_.push_back(x);
    }
  }

  // Forward FLOPs per member and example.
  double forward_flops() {
    StackedMembers stacked(models_);
    torch::NoGradGuard no_grad;
    stacked.forward(images_.narrow(1, 0, 2));
    return stacked.forward_flops_per_example();
  }

  Row run(const std::string& design) {
    Row row;
    row.design = design;
    row.members = k_;
    try {
      // The members' gradients from an earlier design would count in this one's peak.
      for (const auto& m : models_) forget_gradients(m->parameters());
      reset_peak_memory(device_);
      row.seconds_per_step = time(design) / settings_.steps;
      row.peak_bytes = peak_memory(device_);
    } catch (const c10::Error& e) {
      row.failure = first_line(e.what_without_backtrace());
    } catch (const std::exception& e) {
      row.failure = first_line(e.what());
    }
    return row;
  }

 private:
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  // Seconds for settings_.steps steps of all members, best of settings_.repeats, after two warm-up steps.
  double time(const std::string& design) {
    const int steps = settings_.steps;
    if (design == "one-by-one") {
      auto step = [&] {
        for (int64_t m = 0; m < k_; ++m) member_step(*models_[m], member_images_[m], labels_[m]);
      };
      for (int w = 0; w < 2; ++w) step();
      return best_of(device_, settings_.repeats, [&] {
        for (int s = 0; s < steps; ++s) step();
      });
    }
    if (design == "streams") {
      Workers workers(device_, k_, [&](int64_t m) { member_step(*models_[m], member_images_[m], labels_[m]); });
      workers.dispatch(2);
      return best_of(device_, settings_.repeats, [&] { workers.dispatch(steps); });
    }
    StackedMembers stacked(models_);
    stacked.to(device_, settings_.channels_last);
    auto step = [&] {
      forget_gradients(stacked.parameters());
      stacked_forward_backward(stacked, images_, labels_);
    };
    if (design == "stacked") {
      for (int w = 0; w < 2; ++w) step();
      return best_of(device_, settings_.repeats, [&] {
        for (int s = 0; s < steps; ++s) step();
      });
    }
    return time_graph(stacked, step);
  }

  double time_graph(StackedMembers& stacked, const std::function<void()>& step) {
#if BNN_HAVE_C10_CUDA
    if (!device_.is_cuda()) throw std::runtime_error("a CUDA graph needs --device cuda");
    // As LibTorch's own whole-network capture: warm up on a side stream,
    // then capture one step with the gradients unallocated, so that the
    // graph's backward writes them (from its private pool) on every replay.
    const auto side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index());
    sync(device_);  // the stacked copies were made on the default stream, which the side stream does not wait for
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int w = 0; w < 3; ++w) step();
    }
    sync(device_);
    forget_gradients(stacked.parameters());
    at::cuda::CUDAGraph graph;
    {
      c10::cuda::CUDAStreamGuard guard(side);
      graph.capture_begin();
      try {
        stacked_forward_backward(stacked, images_, labels_);
      } catch (...) {
        // Leave the stream out of capture mode, so that the designs after this one can run.
        try {
          graph.capture_end();
        } catch (...) {
        }
        throw;
      }
      graph.capture_end();
    }
    graph.replay();
    const int steps = settings_.steps;
    return best_of(device_, settings_.repeats, [&] {
      for (int s = 0; s < steps; ++s) graph.replay();
    });
#else
    (void)stacked;
    (void)step;
    throw std::runtime_error("this build has no c10/cuda (a CPU LibTorch): no CUDA graphs");
#endif
  }

  const Settings& settings_;
  torch::Device device_;
  int64_t k_;
  std::vector<std::shared_ptr<Classifier>> models_;
  torch::Tensor images_, labels_;
  std::vector<torch::Tensor> member_images_;
};

Settings parse(int argc, char** argv, std::string& csv, int& threads, bool& cudnn_benchmark) {
  cxxopts::Options options("bnn_bench_members", "Several members on one device: one by one, worker streams, stacked");
  options.add_options()
      ("device", "cpu, cuda or cuda:N", cxxopts::value<std::string>()->default_value("cpu"))
      ("models", "comma-separated models", cxxopts::value<std::string>()->default_value("fmnist_cnn,mlp"))
      ("members", "comma-separated member counts", cxxopts::value<std::string>()->default_value("1,2,4,8,16"))
      ("designs", "comma-separated designs (default: all; graph on CUDA only)",
       cxxopts::value<std::string>()->default_value(""))
      ("steps", "timed steps per repeat", cxxopts::value<int>()->default_value("10"))
      ("repeats", "repeats (the best counts)", cxxopts::value<int>()->default_value("3"))
      ("batch", "examples per member and step", cxxopts::value<int64_t>()->default_value("200"))
      ("channels-last", "channels-last convolution weights and images")
      ("cudnn-benchmark", "cuDNN's benchmark mode")
      ("threads", "intra-op threads (0: bnn's default)", cxxopts::value<int>()->default_value("0"))
      ("csv", "also write the rows to this CSV file", cxxopts::value<std::string>()->default_value(""))
      ("h,help", "show this help");
  // bnn's own parsing: --help, a bad value named with what it takes, a stray word.
  const std::optional<cxxopts::ParseResult> parsed = bnn::cli::parse_or_help(options, argc, argv);
  if (!parsed) std::exit(0);
  const cxxopts::ParseResult& args = *parsed;
  Settings s;
  s.device = bnn::pipeline::resolve_device(args["device"].as<std::string>());
  // The allocator's statistics and the synchronisation need an index: "cuda" is GPU 0, as for bnn run's workers.
  if (s.device.is_cuda() && !s.device.has_index()) s.device = torch::Device(torch::kCUDA, 0);
  s.models = split(args["models"].as<std::string>());
  for (const auto& m : s.models) {
    if (m == "torchscript") throw UsageError("--models: torchscript has no architecture of its own");
    try {
      bnn::models::default_spec(m);
    } catch (const c10::Error& e) {  // an unknown name, listing the valid ones
      throw UsageError("--models: " + std::string(e.what_without_backtrace()));
    }
  }
  for (const auto& text : split(args["members"].as<std::string>())) {
    size_t used = 0;
    int64_t k = 0;
    try {
      k = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || k < 1) throw UsageError("--members: '" + text + "' is not a positive member count");
    s.members.push_back(k);
  }
  s.designs = split(args["designs"].as<std::string>());
  if (s.designs.empty()) {
    s.designs = {"one-by-one", "streams", "stacked"};
    if (s.device.is_cuda()) s.designs.push_back("graph");
  }
  for (const auto& d : s.designs) {
    if (std::find(kDesigns.begin(), kDesigns.end(), d) == kDesigns.end()) {
      throw UsageError("--designs: unknown design '" + d + "'; valid: one-by-one, streams, stacked, graph");
    }
  }
  s.steps = args["steps"].as<int>();
  s.repeats = args["repeats"].as<int>();
  s.batch = args["batch"].as<int64_t>();
  if (s.steps < 1 || s.repeats < 1 || s.batch < 2) {
    throw UsageError("--steps and --repeats must be at least 1, --batch at least 2 (BatchNorm)");
  }
  if (s.models.empty() || s.members.empty() || s.designs.empty()) {
    throw UsageError("--models, --members and --designs need at least one entry");
  }
  s.channels_last = args.count("channels-last") > 0;
  cudnn_benchmark = args.count("cudnn-benchmark") > 0;
  threads = args["threads"].as<int>();
  csv = args["csv"].as<std::string>();
  return s;
}

int bench_main(int argc, char** argv) {
  std::string csv_path;
  int threads = 0;
  bool cudnn_benchmark = false;
  const Settings settings = parse(argc, argv, csv_path, threads, cudnn_benchmark);
  bnn::runtime::configure_threads(threads);
  if (cudnn_benchmark) at::globalContext().setBenchmarkCuDNN(true);
  fmt::print("device {}, threads {}, batch {} per member, {} steps x best of {}, channels-last {}, "
             "cuDNN benchmark {}\n",
             settings.device.str(), torch::get_num_threads(), settings.batch, settings.steps, settings.repeats,
             settings.channels_last ? "on" : "off", cudnn_benchmark ? "on" : "off");
  std::string csv = "model,design,members,ms_per_step,member_steps_per_s,member_epochs_per_s,speedup,tflops,"
                    "peak_mib_per_member,failure\n";
  int failed_rows = 0, rows = 0;
  for (const auto& model : settings.models) {
    double base = 0;  // member-steps/s of one-by-one with the first member count
    double flops = 0;
    for (int64_t k : settings.members) {
      Bench bench(settings, model, k);
      if (flops == 0) {
        flops = 3 * bench.forward_flops();
        fmt::print("\n{}: {:.3f} GFLOP per example forward and backward (3x forward)\n", model, flops / 1e9);
        fmt::print("{:>7} {:<11} {:>10} {:>13} {:>14} {:>8} {:>8} {:>12}\n", "members", "design", "ms/step",
                   "member-step/s", "member-epoch/s", "speed-up", "TFLOP/s", "MiB/member");
      }
      for (const auto& design : settings.designs) {
        Row row = bench.run(design);
        row.model = model;
        ++rows;
        if (!row.failure.empty()) {
          fmt::print("{:>7} {:<11} failed: {}\n", k, design, row.failure);
          std::string quoted;
          for (char c : row.failure) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
          csv += fmt::format("{},{},{},,,,,,,\"{}\"\n", model, design, k, quoted);
          ++failed_rows;
          std::fflush(stdout);
          continue;
        }
        const double member_steps = static_cast<double>(k) / row.seconds_per_step;
        if (base == 0) base = member_steps;
        const double epochs = member_steps * static_cast<double>(settings.batch) / kEpochExamples;
        const double tflops = member_steps * static_cast<double>(settings.batch) * flops / 1e12;
        const std::string mib =
            row.peak_bytes ? fmt::format("{:.0f}", *row.peak_bytes / static_cast<double>(k) / (1 << 20)) : "-";
        fmt::print("{:>7} {:<11} {:>10.2f} {:>13.1f} {:>14.3f} {:>8.2f} {:>8.2f} {:>12}\n", k, design,
                   1e3 * row.seconds_per_step, member_steps, epochs, member_steps / base, tflops, mib);
        csv += fmt::format("{},{},{},{:.4f},{:.2f},{:.4f},{:.3f},{:.3f},{},\n", model, design, k,
                           1e3 * row.seconds_per_step, member_steps, epochs, member_steps / base, tflops,
                           row.peak_bytes ? mib : "");
        std::fflush(stdout);  // a run killed later keeps the rows so far
      }
      if (!csv_path.empty()) bnn::io::write_file_atomically(csv_path, csv);
    }
  }
  if (failed_rows > 0) {
    fmt::print(stderr, "bnn_bench_members: {} of {} rows failed\n", failed_rows, rows);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const UsageError& e) {
    fmt::print(stderr, "bnn_bench_members: error: {}\n", e.what());
    return 2;
  } catch (const cxxopts::exceptions::exception& e) {  // an option it does not have
    fmt::print(stderr, "bnn_bench_members: error: {}\n", e.what());
    return 2;
  } catch (const bnn::config::ConfigError& e) {
    fmt::print(stderr, "bnn_bench_members: error: {}\n", e.what());
    return 2;
  } catch (const c10::Error& e) {
    fmt::print(stderr, "bnn_bench_members: error: {}\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bnn_bench_members: error: {}\n", e.what());
    return 1;
  }
}
