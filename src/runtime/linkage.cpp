#include "src/runtime/linkage.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "src/runtime/device_streams.h"

namespace bnn::runtime {
namespace {

// The path of the first loaded object whose file name starts with prefix.
std::string loaded_object(const std::string& prefix) {
  struct Search {
    const std::string* prefix;
    std::string found;
  } search{&prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
        if (std::filesystem::path(info->dlpi_name).filename().string().rfind(*s->prefix, 0) != 0) return 0;
        s->found = info->dlpi_name;
        return 1;
      },
      &search);
  return search.found;
}

// A CUDA runtime function by name: in the global scope first, then in a
// loaded libcudart (one opened with RTLD_LOCAL is not in the global scope).
void* cuda_runtime_symbol(const char* name) {
  if (void* address = ::dlsym(RTLD_DEFAULT, name)) return address;
  const std::string path = loaded_object("libcudart");
  if (path.empty()) return nullptr;
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* address = ::dlsym(handle, name);
  ::dlclose(handle);  // RTLD_NOLOAD took a reference to an object that stays loaded
  return address;
}

int major_of(int version) { return version / 1000; }

}  // namespace

std::string filesystem_library() {
  // remove_all(const path&) with the C++11 ABI's path, then the old ABI's.
  for (const char* symbol : {"_ZNSt10filesystem10remove_allERKNS_7__cxx114pathE",
                             "_ZNSt10filesystem10remove_allERKNS_4pathE"}) {
    void* address = ::dlsym(RTLD_DEFAULT, symbol);
    if (address == nullptr) continue;
    Dl_info info{};
    if (::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "unknown (dladdr failed)";
    return info.dli_fname;
  }
  return "unknown (std::filesystem::remove_all not found)";
}

CudaLinkage cuda_linkage() {
  CudaLinkage out;
  out.torch_cuda = loaded_object("libtorch_cuda");
  // cudaError_t is an enum whose cudaSuccess is 0; both calls only read versions.
  using VersionQuery = int (*)(int*);
  void* runtime = cuda_runtime_symbol("cudaRuntimeGetVersion");
  if (runtime == nullptr) return out;
  Dl_info info{};
  if (::dladdr(runtime, &info) != 0 && info.dli_fname != nullptr) out.runtime_library = info.dli_fname;
  int version = 0;
  if (reinterpret_cast<VersionQuery>(runtime)(&version) == 0) out.runtime_version = version;
  if (void* driver = cuda_runtime_symbol("cudaDriverGetVersion")) {
    version = 0;
    if (reinterpret_cast<VersionQuery>(driver)(&version) == 0) out.driver_version = version;
  }
  return out;
}

std::string cuda_version_text(int version) { return fmt::format("{}.{}", major_of(version), version % 1000 / 10); }

std::string describe_cuda(const CudaLinkage& l) {
  if (l.runtime_version == 0) {
    if (l.torch_cuda.empty()) return "none: a CPU build of LibTorch";
    return fmt::format("LibTorch's CUDA library {}, its runtime's version not found", l.torch_cuda);
  }
  std::string line = fmt::format("runtime {} ({}), ", cuda_version_text(l.runtime_version), l.runtime_library);
  if (l.driver_version == 0) return line + "no NVIDIA driver found";
  line += fmt::format("driver for CUDA {}", cuda_version_text(l.driver_version));
  if (major_of(l.driver_version) < major_of(l.runtime_version)) {
    line += fmt::format(" (older than the runtime: CUDA calls fail until the driver supports CUDA {}.x)",
                        major_of(l.runtime_version));
  }
  return line;
}

std::string why_no_cuda_device(const CudaLinkage& l, const char* visible_devices) {
  if (l.torch_cuda.empty() && l.runtime_version == 0) {
    return "this bnn is built against a CPU build of LibTorch (bnn version); build it against a CUDA LibTorch "
           "(README.md, Building by hand: scripts/build-pip-torch.sh)";
  }
  if (visible_devices != nullptr) {
    const std::string v = visible_devices;
    if (v.empty() || v.rfind("-1", 0) == 0) return fmt::format("CUDA_VISIBLE_DEVICES='{}' hides every GPU", v);
  }
  const std::string hint =
      visible_devices == nullptr ? "" : fmt::format("; CUDA_VISIBLE_DEVICES='{}'", visible_devices);
  if (l.runtime_version == 0) return fmt::format("LibTorch has CUDA ({}) but sees no GPU{}", l.torch_cuda, hint);
  const std::string runtime = cuda_version_text(l.runtime_version);
  if (l.driver_version == 0) {
    return fmt::format("no NVIDIA driver found (LibTorch's CUDA runtime is {}){}", runtime, hint);
  }
  if (major_of(l.driver_version) < major_of(l.runtime_version)) {
    return fmt::format("the NVIDIA driver runs CUDA up to {}, older than LibTorch's CUDA runtime {}: update the "
                       "driver, or build against a LibTorch for CUDA {}{}",
                       cuda_version_text(l.driver_version), runtime, major_of(l.driver_version), hint);
  }
  return fmt::format("no GPU visible to CUDA runtime {} (driver for CUDA {}){}", runtime,
                     cuda_version_text(l.driver_version), hint);
}

std::string cpu_vector_unit_for(const char* capability) {
#if defined(__x86_64__) || defined(__i386__)
  // ATen's names for its kernel sets on x86; it ignores (with a warning) any other value.
  const std::string forced = capability != nullptr ? capability : "";
  if (forced == "avx512") return "x86-64 AVX-512";
  if (forced == "avx2") return "x86-64 AVX2";
  if (forced == "default") return "x86-64 without AVX2";
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma");
  if (fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return "x86-64 AVX-512";
  }
  if (fma && __builtin_cpu_supports("avx2")) return "x86-64 AVX2";
  return "x86-64 without AVX2";
#elif defined(__aarch64__)
  return capability != nullptr && *capability != '\0' ? fmt::format("aarch64, ATEN_CPU_CAPABILITY={}", capability)
                                                       : "aarch64";
#else
  return "an unknown architecture";
#endif
}

std::string cpu_vector_unit() {
  // ATen reads the variable once, at its first dispatch; so does this.
  static const std::string unit = cpu_vector_unit_for(std::getenv("ATEN_CPU_CAPABILITY"));
  return unit;
}

namespace {

// "oneDNN 2.6.3 ISA 0x27", or "" where its symbols are not to be found.
std::string onednn_kernels() {
  // oneDNN's own C API (dnnl.h, not installed with LibTorch): the leading
  // fields of dnnl_version_t, and dnnl_cpu_isa_t as its integer value.
  struct Version {
    int major, minor, patch;
  };
  using GetVersion = const Version* (*)();
  using GetIsa = int (*)();
  auto version = reinterpret_cast<GetVersion>(::dlsym(RTLD_DEFAULT, "dnnl_version"));
  auto isa = reinterpret_cast<GetIsa>(::dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa"));
  const Version* v = version != nullptr ? version() : nullptr;
  if (v == nullptr) return "";
  std::string out = fmt::format("oneDNN {}.{}.{}", v->major, v->minor, v->patch);
  if (isa != nullptr) out += fmt::format(" ISA {:#x}", isa());
  return out;
}

}  // namespace

std::string arithmetic_platform(torch::Device device) {
  std::string out = fmt::format("LibTorch {}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  if (device.is_cuda()) {
    const std::optional<std::string> model = device_model(device);
    out += ", " + model.value_or("a GPU of unknown model");
    const int runtime = cuda_linkage().runtime_version;
    if (runtime > 0) out += ", CUDA " + cuda_version_text(runtime);
    return out;
  }
  out += ", " + cpu_vector_unit();
  using CoreName = char* (*)();
  auto core = reinterpret_cast<CoreName>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (core != nullptr && core() != nullptr) out += fmt::format(", OpenBLAS {}", core());
  if (const std::string dnnl = onednn_kernels(); !dnnl.empty()) out += ", " + dnnl;
  return out;
}

}  // namespace bnn::runtime
