// The baseline build of the fused passes (samplers/fused_kernels_impl.h).
#include "samplers/fused_kernels_impl.h"

namespace bnn::samplers::detail {

const FusedKernels& fused_kernels_baseline() { return kKernels; }

#if !defined(BNN_FUSED_KERNELS_AVX2)
const FusedKernels* fused_kernels_avx2() { return nullptr; }
#endif

}  // namespace bnn::samplers::detail
