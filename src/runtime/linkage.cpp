#include "src/runtime/linkage.h"

#include <dlfcn.h>

namespace bnn::runtime {

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

}  // namespace bnn::runtime
