// The AVX2 and FMA build of the fused passes (samplers/fused_kernels_impl.h):
// samplers/CMakeLists.txt compiles this file with -mavx2 -mfma and defines
// BNN_FUSED_KERNELS_AVX2 on x86-64 with GCC or Clang; elsewhere it is empty.
#if defined(BNN_FUSED_KERNELS_AVX2)
#include "samplers/fused_kernels_impl.h"

namespace bnn::samplers::detail {

const FusedKernels* fused_kernels_avx2() { return &kKernels; }

}  // namespace bnn::samplers::detail
#endif
