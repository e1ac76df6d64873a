#include "src/cli/info_commands.h"

#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/registry.h"
#include "samplers/fused_step.h"
#include "samplers/registry.h"
#include "src/runtime/linkage.h"
#include "src/runtime/threads.h"

namespace bnn::cli {

int cmd_version(int, char**) {
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

int cmd_models(int, char**) {
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

int cmd_samplers(int, char**) {
  fmt::print("{:<10} {}\n", "name", "description");
  for (const auto& name : samplers::sampler_names()) fmt::print("{:<10} {}\n", name, samplers::sampler_summary(name));
  return 0;
}

}  // namespace bnn::cli
