// CPU threading for a bnn process.
//
// Note [BLAS threads]: Debian's LibTorch calls the system BLAS, and the
// pthread build of OpenBLAS starts its own pool of busy-waiting threads next
// to LibTorch's OpenMP pool. On a small machine the two pools fight for the
// cores: measured on 2 cores, an mlp minibatch gradient took 7.8 ms with
// OpenBLAS threading and 3.8 ms without it, and a sampler step 32 ms vs 12 ms;
// the CNN, whose convolutions LibTorch parallelises itself, was unchanged.
// So BLAS calls run single-threaded and LibTorch's intra-op pool uses the
// cores. Where the BLAS is not OpenBLAS (e.g. MKL in a pip PyTorch) nothing
// is changed.
#pragma once

namespace bnn::runtime {

// Sets LibTorch's intra-op threads (0 = all cores) and single-threaded
// OpenBLAS if it is the BLAS in use. Returns the thread count in effect.
int configure_threads(int threads);

}  // namespace bnn::runtime
