#include "src/runtime/threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <thread>

#include <torch/torch.h>

namespace bnn::runtime {

int configure_threads(int threads) {
  // Note [BLAS threads]: looked up at run time so that builds against other
  // BLAS libraries need no OpenBLAS symbol.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(std::max(n, 1));
  return torch::get_num_threads();
}

}  // namespace bnn::runtime
