// CPU threading for a bnn process.
//
// Note [BLAS threads]: Debian's LibTorch calls the system BLAS, and the
// pthread build of OpenBLAS starts its own pool of busy-waiting threads next
// to LibTorch's OpenMP pool. On a small machine the two pools fight for the
// cores: measured on 2 cores, an mlp minibatch gradient took 7.8 ms with
// OpenBLAS threading and 3.8 ms without it, and a sampler step 32 ms vs 12 ms;
// the CNN, whose convolutions LibTorch parallelises itself, was unchanged.
// So BLAS calls run single-threaded and LibTorch's intra-op pool uses the
// cores. Debian's OpenMP build of OpenBLAS (libopenblas0-openmp, chosen by
// `BNN_BLAS=openmp scripts/install-deps.sh`) runs its threads in LibTorch's
// own libgomp pool instead, so it keeps LibTorch's thread count: the mlp's
// matrix products then use every core (epochs 1.3-1.9x faster on 2 cores
// alone), but beside another busy process it is 3x slower than alone, and
// the mlp's results then depend on the thread count, as the CNN's already do
// (docs/performance.md). Where the BLAS is not OpenBLAS (e.g. MKL in a pip
// PyTorch) nothing is changed.
//
// Note [OpenMP wait policy]: a sampler step is many short OpenMP parallel
// regions (each elementwise pass, each layer's activation), each ending in
// a barrier. GNU OpenMP (libgomp, LibTorch's on Debian and in pip wheels)
// lets a thread that reaches a barrier spin GOMP_SPINCOUNT times before it
// sleeps, 300,000 by default: on this project's 2-core machine about 10 ms.
// Alone, spinning is what makes the regions cheap. Beside another busy
// process, a team thread is often descheduled; its partner then spins
// through its whole time slice at every barrier, and the run collapsed
// (bench/shared_cores.sh: sampling epochs 3.0-3.4x and Adam epochs up to
// 18x their solo time, where a fair share of 2 cores costs 1.5x). Measured
// there: GOMP_SPINCOUNT 3000 kept epochs within 1.6-2.1x beside a busy loop
// or another bnn, and 30000 collapsed again (5.8-9.5x); passive waiting
// (OMP_WAIT_POLICY=passive) shared well but made solo epochs 40-60 % slower
// (every region then wakes sleeping threads), and 3000 alone cost about 15 %
// (on this project's virtual machine, where waking a sleeping vCPU is slow).
// So bnn chooses when it starts: if other tasks are runnable on the machine
// (/proc/loadavg, median of 8 readings over 16 ms), or BNN_SHARE_CORES=1,
// it sets GOMP_SPINCOUNT to kGompSpinCount; alone it keeps libgomp's default.
// BNN_SHARE_CORES=0, or GOMP_SPINCOUNT or OMP_WAIT_POLICY in the
// environment, leave the choice to the user. A run that starts alone and
// gets company later shortens its spin then (Note [Company watch] in
// src/runtime/company_watch.h). The policy changes timing only, never results.
// libgomp reads its environment once, in a shared
// library constructor that runs before main(), so bnn's executables restart
// themselves with the variable set from an entry of their .preinit_array
// (BNN_OPENMP_WAIT_DEFAULT below): the dynamic loader runs it after mapping
// and relocating the libraries but before any library constructor, so the
// restart costs about 0.1 s of loading, not LibTorch's initialisation.
// (setenv() there would not do: libc's own initialisation, which comes later,
// resets the environment to the one the kernel passed.)
#pragma once

#include <string>

namespace bnn::runtime {

// Spins at an OpenMP barrier before a thread sleeps (Note [OpenMP wait policy]).
inline constexpr const char* kGompSpinCount = "3000";

// Unless `envp` sets GOMP_SPINCOUNT, OMP_WAIT_POLICY or BNN_SHARE_CORES=0:
// if other tasks are runnable or BNN_SHARE_CORES=1, re-executes this program
// (/proc/self/exe) with argv and envp plus GOMP_SPINCOUNT = kGompSpinCount;
// returns otherwise or if that fails. For BNN_OPENMP_WAIT_DEFAULT only.
void set_openmp_wait_default(int argc, char** argv, char** envp);

// The OpenMP wait setting in effect, for `bnn version`: e.g.
// "GOMP_SPINCOUNT=3000 (bnn's default)" or "OMP_WAIT_POLICY=passive (environment)".
std::string openmp_wait_setting();

// CPUs this process may use: the smallest of its affinity mask, its cgroups'
// CPU quota (cgroup_cpu_limit in src/runtime/cgroups.h), and
// SLURM_CPUS_PER_TASK; `why` says which limit applied.
int available_cpus(std::string* why = nullptr);

// The BLAS in use and its threading (Note [BLAS threads]), for `bnn version`.
std::string blas_description();

// Sets LibTorch's intra-op threads (0 = available_cpus()) and single-threaded
// OpenBLAS if it is the BLAS in use. Returns the thread count in effect.
int configure_threads(int threads);

// The threads an at::parallel_for in bnn's own code runs on: the intra-op
// thread count when bnn is built with LibTorch's OpenMP (Note [Parallel loops
// in bnn's code] in cmake/openmp.cmake), 1 when that pragma was compiled out.
int parallel_loop_threads();

}  // namespace bnn::runtime

// In an executable's source file (at namespace scope): runs
// set_openmp_wait_default() before any shared library initialises.
#define BNN_OPENMP_WAIT_DEFAULT                                                                        \
  __attribute__((section(".preinit_array"), used)) static void (*const bnn_openmp_wait_default_entry)( \
      int, char**, char**) = &bnn::runtime::set_openmp_wait_default
