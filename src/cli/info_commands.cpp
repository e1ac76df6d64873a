#include "src/cli/info_commands.h"

#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/registry.h"
#include "samplers/fused_step.h"
#include "samplers/registry.h"
#include "src/config/config.h"
#include "src/runtime/linkage.h"
#include "src/runtime/threads.h"

namespace bnn::cli {
namespace {

// These commands take no options: one is refused rather than ignored; -h or
// --help prints what the command does (true: done).
bool help_or_nothing(const char* command, const char* what, int argc, char** argv) {
  if (argc < 2) return false;
  const std::string arg = argv[1];
  if (arg == "-h" || arg == "--help") {
    fmt::print("usage: bnn {}\n  {}\n", command, what);
    return true;
  }
  throw config::ConfigError(fmt::format("bnn {} takes no options or arguments, got '{}'", command, arg));
}

}  // namespace

int cmd_version(int argc, char** argv) {
  if (help_or_nothing("version", "LibTorch version, CUDA availability, threads, std::filesystem's library", argc,
                      argv)) {
    return 0;
  }
  fmt::print("bnn {}\n", BNN_VERSION_STRING);
  fmt::print("LibTorch {}.{}.{}\n", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  fmt::print("CUDA available: {} ({} devices)\n", torch::cuda::is_available() ? "yes" : "no",
             torch::cuda::device_count());
  fmt::print("CUDA: {}\n", runtime::describe_cuda(runtime::cuda_linkage()));
  std::string why;
  const int cpus = runtime::available_cpus(&why);
  fmt::print("threads: {} (default: the {} CPUs this process may use, by {}; {} cores)\n",
             runtime::configure_threads(0), cpus, why, std::thread::hardware_concurrency());
  fmt::print("parallel loops in bnn's code: {} threads\n", runtime::parallel_loop_threads());
  fmt::print("BLAS: {}\n", runtime::blas_description());
  fmt::print("OpenMP wait: {}\n", runtime::openmp_wait_setting());
  fmt::print("fused sampler steps (float32): {}\n", samplers::fused_step_description());
  fmt::print("std::filesystem from: {}\n", runtime::filesystem_library());
  // Note [Arithmetic platform]: what a member's arithmetic entry names beside its device and design.
  fmt::print("arithmetic on cpu: {}\n", runtime::arithmetic_platform(torch::kCPU));
  for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
    const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
    fmt::print("arithmetic on {}: {}\n", device.str(), runtime::arithmetic_platform(device));
  }
  return 0;
}

int cmd_models(int argc, char** argv) {
  if (help_or_nothing("models", "list the models", argc, argv)) return 0;
  fmt::print("{:<18} {:<10} {:>7} {:>12}  {}\n", "name", "input", "classes", "parameters", "description");
  for (const auto& name : models::model_names()) {
    if (name == "torchscript") {
      fmt::print("{:<18} {:<10} {:>7} {:>12}  {}\n", name, "data's", "data's", "-",
                 "your own classifier, saved by torch.jit.script: model.path FILE.pt");
      continue;
    }
    const models::ModelSpec spec = models::default_spec(name);
    auto model = models::make_model(spec, /*seed=*/0);
    fmt::print("{:<18} {:<10} {:>7} {:>12}  {}\n", name, fmt::format("{}", fmt::join(spec.input_shape, "x")),
               spec.num_classes, models::count_parameters(*model), model->pretty_string());
  }
  return 0;
}

int cmd_samplers(int argc, char** argv) {
  if (help_or_nothing("samplers", "list the samplers", argc, argv)) return 0;
  fmt::print("{:<10} {}\n", "name", "description");
  for (const auto& name : samplers::sampler_names()) fmt::print("{:<10} {}\n", name, samplers::sampler_summary(name));
  return 0;
}

}  // namespace bnn::cli
