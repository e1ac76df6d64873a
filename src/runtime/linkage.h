// Where a process's std::filesystem calls land (Note [libstdc++ before
// LibTorch], cmake/libstdcxx_first.cmake). pip's LibTorch exports its own
// copy of std::filesystem; `bnn version` prints which shared object defines
// the symbol the loader binds first, so a build against such a LibTorch shows
// at once whether libstdc++ comes first.
#pragma once

#include <string>

namespace bnn::runtime {

// The path of the shared object whose std::filesystem::remove_all(const
// path&) is found first in the global search order (the one bnn's calls bind
// to), or a short reason when it cannot be told.
std::string filesystem_library();

}  // namespace bnn::runtime
