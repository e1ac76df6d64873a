#include "src/runtime/threads.h"

#include "src/runtime/cgroups.h"
#include "src/runtime/company_watch.h"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

namespace bnn::runtime {
namespace {

constexpr const char* kDefaultMarker = "BNN_DEFAULT_GOMP_SPINCOUNT";

}  // namespace

void set_openmp_wait_default(int /*argc*/, char** argv, char** envp) {
  // Runs before libc is initialised: no getenv, no allocation.
  constexpr size_t kMaxEnv = 4096;
  static char* env[kMaxEnv + 3];
  static char spin[64];
  static char marker[] = "BNN_DEFAULT_GOMP_SPINCOUNT=1";  // for openmp_wait_setting()
  if (argv == nullptr || envp == nullptr) return;
  bool share = false;
  size_t n = 0;
  for (; envp[n] != nullptr; ++n) {
    const std::string_view e(envp[n]);
    if (e.rfind("GOMP_SPINCOUNT=", 0) == 0 || e.rfind("OMP_WAIT_POLICY=", 0) == 0) return;
    if (e == "BNN_SHARE_CORES=0") return;  // openmp_wait_setting() reports it
    if (e == "BNN_SHARE_CORES=1") share = true;
    if (n == kMaxEnv) return;
    env[n] = envp[n];
  }
  // Started as `ld.so ./bnn ...`: /proc/self/exe is the loader and argv
  // lacks its options, so a restart would run something else. The kernel
  // then loaded no interpreter: AT_BASE (7) in the auxiliary vector after
  // envp's null is 0.
  for (auto* aux = reinterpret_cast<const unsigned long*>(envp + n + 1); aux[0] != 0; aux += 2) {
    if (aux[0] == 7 && aux[1] == 0) return;
  }
  // Alone on the machine, libgomp's long spin is the fastest; beside
  // another busy process it collapses (Note [OpenMP wait policy]).
  if (!share && other_runnable_tasks(8, [] { return 1; }) < 1) return;
  size_t at = 0;
  for (const char* part : {"GOMP_SPINCOUNT=", kGompSpinCount}) {
    for (const char* c = part; *c != '\0' && at + 1 < sizeof(spin); ++c) spin[at++] = *c;
  }
  env[n] = spin;
  env[n + 1] = marker;
  env[n + 2] = nullptr;
  ::execve("/proc/self/exe", argv, env);  // returns only on failure: go on as we are
}

namespace {

// libgomp's default spin is in effect because bnn left it so: neither
// GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set, and not BNN_SHARE_CORES=0.
bool default_spin_by_bnns_choice() {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return false;
  const char* share = std::getenv("BNN_SHARE_CORES");
  return share == nullptr || std::string(share) != "0";
}

}  // namespace

std::string openmp_wait_setting() {
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (spin != nullptr && std::getenv(kDefaultMarker) != nullptr && std::string(spin) == kGompSpinCount) {
    return std::string("GOMP_SPINCOUNT=") + spin +
           " (bnn's choice: other processes were busy at start, or BNN_SHARE_CORES=1)";
  }
  std::string out;
  if (policy != nullptr) out += std::string("OMP_WAIT_POLICY=") + policy + " ";
  if (spin != nullptr) out += std::string("GOMP_SPINCOUNT=") + spin + " ";
  if (!out.empty()) return out + "(environment)";
  if (!default_spin_by_bnns_choice()) return "the OpenMP runtime's default (BNN_SHARE_CORES=0)";
  return "the OpenMP runtime's default (bnn's choice: no other task was runnable at start; spins briefly while "
         "other processes are busy)";
}

int available_cpus(std::string* why) {
  int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string reason = "all cores";
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int affinity = CPU_COUNT(&set);
    if (affinity > 0 && affinity < n) {
      n = affinity;
      reason = "affinity mask";
    }
  }
  if (const int quota = cgroup_cpu_limit(read_self_cgroup()); quota > 0 && quota < n) {
    n = quota;
    reason = "cgroup CPU quota";
  }
  if (const char* slurm = std::getenv("SLURM_CPUS_PER_TASK")) {
    const int s = std::atoi(slurm);
    if (s > 0 && s < n) {
      n = s;
      reason = "SLURM_CPUS_PER_TASK";
    }
  }
  if (why != nullptr) *why = reason;
  return n;
}

namespace {

// openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP build; -1 when
// the BLAS is not OpenBLAS. Looked up at run time so that builds against
// other BLAS libraries need no OpenBLAS symbol.
int openblas_parallel() {
  using GetParallel = int (*)();
  auto get = reinterpret_cast<GetParallel>(::dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  return get != nullptr ? get() : -1;
}

}  // namespace

std::string blas_description() {
  switch (openblas_parallel()) {
    case 0: return "OpenBLAS, sequential build";
    case 1: return "OpenBLAS, pthreads build: one thread, beside LibTorch's pool";
    case 2: return "OpenBLAS, OpenMP build: LibTorch's threads";
    default: return "not OpenBLAS: its own threading";
  }
}

int configure_threads(int threads) {
  // Note [BLAS threads]: the pthreads OpenBLAS runs single-threaded; the
  // OpenMP build follows OpenMP's thread count, i.e. LibTorch's.
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr && openblas_parallel() != 2) set(1);
  std::string limit;
  const int cpus = available_cpus(&limit);
  if (threads > cpus) {
    // More threads than CPUs take turns on them: slower, never faster.
    spdlog::warn("{} threads asked for, and this process may use {} CPU{} ({}): expect it to run slower than with "
                 "{}",
                 threads, cpus, cpus == 1 ? "" : "s", limit, cpus);
  }
  const int n = threads > 0 ? threads : cpus;
  torch::set_num_threads(std::max(n, 1));
  if (default_spin_by_bnns_choice()) watch_for_company(torch::get_num_threads());  // Note [Company watch]
  return torch::get_num_threads();
}

int parallel_loop_threads() {
  std::vector<char> seen(static_cast<size_t>(std::max(torch::get_num_threads(), 1)), 0);
  // One item per thread: at::parallel_for gives each thread of the region one.
  at::parallel_for(0, static_cast<int64_t>(seen.size()), 1, [&](int64_t, int64_t) {
    const auto t = static_cast<size_t>(at::get_thread_num());
    if (t < seen.size()) seen[t] = 1;
  });
  return static_cast<int>(std::count(seen.begin(), seen.end(), 1));
}

}  // namespace bnn::runtime
