// The buffered passes on the host (Note [Buffered passes]): the GPU kernels'
// code, one coordinate after another. Compiled with the kernel files' flags
// (samplers/CMakeLists.txt), so each operation rounds once.
#include "samplers/buffered_passes_impl.h"

namespace bnn::samplers::detail {

void run_buffered_pass_host(const BufferedArgs& args) {
  with_variant(args, [&](auto r, auto m, auto p) {
    for (int64_t i = 0; i < args.n; ++i) {
      buffered_coordinate<decltype(r)::value, decltype(m)::value, decltype(p)::value>(args, i);
    }
  });
}

}  // namespace bnn::samplers::detail
