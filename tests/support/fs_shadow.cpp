// A stand-in for pip LibTorch's libtorch_cpu.so in the link-order check
// (Note [libstdc++ before LibTorch], cmake/libstdcxx_first.cmake): a shared
// library that exports its own, unversioned std::filesystem::remove_all.
// It deletes nothing and returns a value no real call on a fresh directory
// with one file returns.
#include <cstdint>
#include <filesystem>
#include <system_error>

// Called by the probe so that the library stays a DT_NEEDED entry under
// --as-needed, as libtorch_cpu.so does for bnn.
extern "C" int bnn_fs_shadow_loaded() { return 1; }

namespace std::filesystem {

std::uintmax_t remove_all(const path&) { return 424242; }

std::uintmax_t remove_all(const path&, std::error_code& ec) {
  ec.clear();
  return 424242;
}

}  // namespace std::filesystem
