// Note [Why no CUDA] (src/runtime/linkage.h): what bnn reads about CUDA from
// the loaded objects, and the reason it gives when no CUDA device is visible.
// Each reason's text for a made-up linkage; then the reading itself, in a bnn
// with a stand-in CUDA runtime preloaded (tests/support/fake_cudart.cpp).
#include "src/runtime/linkage.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "src/runtime/threads.h"
#include "tests/support/data_paths.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn::runtime {
namespace {

CudaLinkage linkage(std::string torch_cuda, int runtime, int driver) {
  CudaLinkage l;
  l.torch_cuda = std::move(torch_cuda);
  l.runtime_library = runtime == 0 ? "" : "/opt/torch/lib/libcudart.so.13";
  l.runtime_version = runtime;
  l.driver_version = driver;
  return l;
}

const std::string kTorchCuda = "/opt/torch/lib/libtorch_cuda.so";

TEST(WhyNoCuda, VersionsReadAsMajorDotMinor) {
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12080), "12.8");
  EXPECT_EQ(cuda_version_text(11070), "11.7");
  EXPECT_EQ(cuda_version_text(12020), "12.2");
}

TEST(WhyNoCuda, VersionLineForEachCase) {
  EXPECT_EQ(describe_cuda(linkage("", 0, 0)), "none: a CPU build of LibTorch");
  EXPECT_EQ(describe_cuda(linkage(kTorchCuda, 0, 0)),
            "LibTorch's CUDA library /opt/torch/lib/libtorch_cuda.so, its runtime's version not found");
  EXPECT_EQ(describe_cuda(linkage(kTorchCuda, 13000, 13000)),
            "runtime 13.0 (/opt/torch/lib/libcudart.so.13), driver for CUDA 13.0");
  // Minor-version compatibility: a 12.2 driver runs a 12.8 runtime.
  EXPECT_EQ(describe_cuda(linkage(kTorchCuda, 12080, 12020)),
            "runtime 12.8 (/opt/torch/lib/libcudart.so.13), driver for CUDA 12.2");
  EXPECT_EQ(describe_cuda(linkage(kTorchCuda, 13000, 12080)),
            "runtime 13.0 (/opt/torch/lib/libcudart.so.13), driver for CUDA 12.8 (older than the runtime: CUDA "
            "calls fail until the driver supports CUDA 13.x)");
  EXPECT_EQ(describe_cuda(linkage(kTorchCuda, 13000, 0)),
            "runtime 13.0 (/opt/torch/lib/libcudart.so.13), no NVIDIA driver found");
}

TEST(WhyNoCuda, ReasonForNoDeviceForEachCase) {
  EXPECT_EQ(why_no_cuda_device(linkage("", 0, 0), nullptr),
            "this bnn is built against a CPU build of LibTorch (bnn version); build it against a CUDA LibTorch "
            "(README.md, Building by hand: scripts/build-pip-torch.sh)");
  // A CPU build answers the same whatever CUDA_VISIBLE_DEVICES says.
  EXPECT_EQ(why_no_cuda_device(linkage("", 0, 0), ""), why_no_cuda_device(linkage("", 0, 0), nullptr));
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 13000, 13000), ""), "CUDA_VISIBLE_DEVICES='' hides every GPU");
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 13000, 13000), "-1"), "CUDA_VISIBLE_DEVICES='-1' hides every GPU");
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 13000, 0), nullptr),
            "no NVIDIA driver found (LibTorch's CUDA runtime is 13.0)");
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 13000, 12080), nullptr),
            "the NVIDIA driver runs CUDA up to 12.8, older than LibTorch's CUDA runtime 13.0: update the driver, or "
            "build against a LibTorch for CUDA 12");
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 13000, 12080), "2"),
            "the NVIDIA driver runs CUDA up to 12.8, older than LibTorch's CUDA runtime 13.0: update the driver, or "
            "build against a LibTorch for CUDA 12; CUDA_VISIBLE_DEVICES='2'");
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 12080, 12020), "3"),
            "no GPU visible to CUDA runtime 12.8 (driver for CUDA 12.2); CUDA_VISIBLE_DEVICES='3'");
  EXPECT_EQ(why_no_cuda_device(linkage(kTorchCuda, 0, 0), nullptr),
            "LibTorch has CUDA (/opt/torch/lib/libtorch_cuda.so) but sees no GPU");
}

TEST(WhyNoCuda, ThisProcessAgreesWithLibTorch) {
  const CudaLinkage l = cuda_linkage();
  if (torch::cuda::is_available()) {
    EXPECT_FALSE(l.torch_cuda.empty());
    EXPECT_GT(l.runtime_version, 0) << describe_cuda(l);
    EXPECT_GE(l.driver_version / 1000, l.runtime_version / 1000) << describe_cuda(l);
  } else if (l.torch_cuda.empty()) {
    EXPECT_EQ(describe_cuda(l), "none: a CPU build of LibTorch");
  }
}

// The reading, end to end: bnn with the stand-in runtime preloaded.
bnn::testing::CommandResult bnn_with_fake_runtime(const std::string& args, const std::string& versions) {
  static const auto dir = bnn::testing::unique_temp_dir("bnn_linkage_test");
  static int calls = 0;
  return bnn::testing::run_bnn(
      args, dir / (std::to_string(++calls) + ".txt"),
      "-u CUDA_VISIBLE_DEVICES LD_PRELOAD=" + std::string(BNN_FAKE_CUDART_LIB) + " " + versions);
}

TEST(WhyNoCuda, VersionShowsTheRuntimeAndAnOlderDriver) {
  const auto r = bnn_with_fake_runtime("version", "BNN_FAKE_CUDA_RUNTIME=13000 BNN_FAKE_CUDA_DRIVER=12080");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("CUDA: runtime 13.0 (" + std::filesystem::path(BNN_FAKE_CUDART_LIB).string() +
                          "), driver for CUDA 12.8 (older than the runtime: CUDA calls fail until the driver "
                          "supports CUDA 13.x)\n"),
            std::string::npos)
      << r.output;
}

TEST(WhyNoCuda, RunOnCudaSaysWhyThereIsNone) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible: there is no refusal to read";
  const std::string& config = bnn::testing::kTinyConfig;
  const auto out = bnn::testing::unique_temp_dir("bnn_linkage_run");
  const auto old_driver = bnn_with_fake_runtime("run --config " + config + " --out " + (out / "a").string() +
                                                    " --device cuda:0",
                                                "BNN_FAKE_CUDA_RUNTIME=13000 BNN_FAKE_CUDA_DRIVER=12080");
  EXPECT_EQ(old_driver.code, 2) << old_driver.output;
  EXPECT_NE(old_driver.output.find("device 'cuda:0' requested but CUDA is not available: the NVIDIA driver runs "
                                   "CUDA up to 12.8, older than LibTorch's CUDA runtime 13.0: update the driver, or "
                                   "build against a LibTorch for CUDA 12\n"),
            std::string::npos)
      << old_driver.output;
  const auto no_driver = bnn_with_fake_runtime("run --config " + config + " --out " + (out / "b").string() +
                                                   " --device cuda",
                                               "BNN_FAKE_CUDA_RUNTIME=12080 BNN_FAKE_CUDA_DRIVER=0");
  EXPECT_EQ(no_driver.code, 2) << no_driver.output;
  EXPECT_NE(no_driver.output.find("device 'cuda' requested but CUDA is not available: no NVIDIA driver found "
                                  "(LibTorch's CUDA runtime is 12.8)\n"),
            std::string::npos)
      << no_driver.output;
  EXPECT_FALSE(std::filesystem::exists(out / "a"));
  EXPECT_FALSE(std::filesystem::exists(out / "b"));
  if (!HasFailure()) std::filesystem::remove_all(out);
}

// The CPU's flags as the kernel reports them (/proc/cpuinfo), a second
// source beside the compiler's cpuid reading; empty where there is none.
std::set<std::string> cpuinfo_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// The version of the oneDNN library this process has loaded, from its file
// name in /proc/self/maps ("2.6" of libdnnl.so.2.6); empty where none is.
std::string loaded_onednn_version() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto at = line.find("/libdnnl.so.");
    if (at == std::string::npos) continue;
    std::string version = line.substr(at + 12);
    if (std::count(version.begin(), version.end(), '.') >= 1) return version.substr(0, version.find('.', 2));
  }
  return "";
}

// Note [Arithmetic platform]: the CPU's kernels are named by ATen's rule,
// read here from the kernel's list of flags; OpenBLAS and oneDNN where loaded.
TEST(ArithmeticPlatform, NamesLibTorchTheVectorUnitOpenBlasAndOneDnn) {
  const std::string platform = arithmetic_platform(torch::kCPU);
  EXPECT_EQ(platform.rfind(fmt::format("LibTorch {}.{}.{}, ", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR,
                                       TORCH_VERSION_PATCH),
                           0),
            0u)
      << platform;
  // Debian's LibTorch does its products in OpenBLAS, which names its kernels.
  if (blas_description().rfind("OpenBLAS", 0) == 0) {
    const auto at = platform.find(", OpenBLAS ");
    ASSERT_NE(at, std::string::npos) << platform;
    EXPECT_GT(platform.size(), at + 11) << platform;
  }
  // ... and its convolutions in oneDNN (a shared library in Debian's build).
  const std::string onednn = loaded_onednn_version();
  if (!onednn.empty()) {
    EXPECT_NE(platform.find(", oneDNN " + onednn + "."), std::string::npos) << platform;
  }
  // The vector unit, last: its comparison may skip.
  const auto flags = cpuinfo_flags();
#if defined(__x86_64__) || defined(__i386__)
  if (getenv("ATEN_CPU_CAPABILITY") == nullptr && flags.count("sse2") > 0) {
    const bool avx512 = flags.count("avx512f") && flags.count("avx512vl") && flags.count("avx512bw") &&
                        flags.count("avx512dq") && flags.count("fma");
    const bool avx2 = flags.count("avx2") && flags.count("fma");
    const std::string unit = avx512 ? "x86-64 AVX-512" : avx2 ? "x86-64 AVX2" : "x86-64 without AVX2";
    // gVisor writes /proc/cpuinfo from the features it passes on, which may
    // not be what the CPUID instruction answers the process: the two readings
    // are compared only where the instruction agrees with the file.
    __builtin_cpu_init();
    const bool cpuid_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                              __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                              __builtin_cpu_supports("fma");
    const bool cpuid_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (cpuid_avx512 != avx512 || cpuid_avx2 != avx2) {
      GTEST_SKIP() << "/proc/cpuinfo (AVX-512 " << avx512 << ", AVX2 " << avx2 << ") and CPUID (AVX-512 "
                   << cpuid_avx512 << ", AVX2 " << cpuid_avx2 << ") disagree: an emulated /proc";
    }
    EXPECT_EQ(cpu_vector_unit(), unit);
    EXPECT_NE(platform.find(", " + unit), std::string::npos) << platform;
  }
#endif
}

TEST(ArithmeticPlatform, AtenCpuCapabilityForcesAKernelSet) {
  if (cpuinfo_flags().count("sse2") == 0) GTEST_SKIP() << "ATen's x86 kernel sets: not an x86 CPU";
  EXPECT_EQ(cpu_vector_unit_for("avx512"), "x86-64 AVX-512");
  EXPECT_EQ(cpu_vector_unit_for("avx2"), "x86-64 AVX2");
  EXPECT_EQ(cpu_vector_unit_for("default"), "x86-64 without AVX2");
  // ATen ignores a value it does not know, and so does the record.
  EXPECT_EQ(cpu_vector_unit_for("fast"), cpu_vector_unit_for(nullptr));
  EXPECT_EQ(cpu_vector_unit_for(""), cpu_vector_unit_for(nullptr));
}

// A cap on oneDNN's instruction set changes its convolution kernels, and the
// record says so: bnn version with and without ONEDNN_MAX_CPU_ISA=AVX2.
TEST(ArithmeticPlatform, OneDnnsInstructionSetCapIsRecorded) {
  const auto flags = cpuinfo_flags();
  if (loaded_onednn_version().empty() || flags.count("avx512f") == 0) {
    GTEST_SKIP() << "needs a shared oneDNN and a CPU with AVX-512, so that capping it at AVX2 changes its kernels";
  }
  const auto own = bnn_with_fake_runtime("version", "");
  const auto capped = bnn_with_fake_runtime("version", "ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2");
  ASSERT_EQ(own.code, 0) << own.output;
  ASSERT_EQ(capped.code, 0) << capped.output;
  auto line = [](const std::string& output) {
    const auto at = output.find("arithmetic on cpu: ");
    return at == std::string::npos ? std::string() : output.substr(at, output.find('\n', at) - at);
  };
  EXPECT_NE(line(own.output).find(" ISA 0x"), std::string::npos) << own.output;
  EXPECT_NE(line(own.output), line(capped.output)) << own.output << capped.output;
}

}  // namespace
}  // namespace bnn::runtime
