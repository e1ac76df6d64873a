// Default thread count and OpenMP wait policy of the bnn executable, as
// `bnn version` reports them (Note [OpenMP wait policy]).
#include "src/runtime/threads.h"

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

// `bnn version` with `env` in an environment cleared of the variables that
// decide the outcome.
bnn::testing::CommandResult version(const std::string& env) {
  static const auto dir = bnn::testing::unique_temp_dir("bnn_threads_test");
  static int calls = 0;
  return bnn::testing::run_bnn(
      "version", dir / (std::to_string(++calls) + ".txt"),
      "-u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u BNN_SHARE_CORES -u SLURM_CPUS_PER_TASK " + env);
}

// The first CPU this process may run on.
int first_allowed_cpu() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) return c;
  }
  return 0;
}

TEST(Threads, DefaultIsTheCpusThisProcessMayUse) {
  if (bnn::runtime::available_cpus() < 2) GTEST_SKIP() << "one CPU: a limit of one cannot be told apart";
  const auto slurm = version("SLURM_CPUS_PER_TASK=1");
  ASSERT_EQ(slurm.code, 0) << slurm.output;
  EXPECT_NE(slurm.output.find("threads: 1 (default: the 1 CPUs this process may use, by SLURM_CPUS_PER_TASK"),
            std::string::npos)
      << slurm.output;
  // An affinity mask of one CPU (taskset is in Debian's util-linux).
  const auto pinned = version("taskset -c " + std::to_string(first_allowed_cpu()));  // env ... taskset -c N bnn
  ASSERT_EQ(pinned.code, 0) << pinned.output;
  EXPECT_NE(pinned.output.find("threads: 1 (default: the 1 CPUs this process may use, by affinity mask"),
            std::string::npos)
      << pinned.output;
}

// Note [Parallel loops in bnn's code]: built without OpenMP, at::parallel_for
// in bnn's own code ran on one thread whatever the thread count.
TEST(Threads, ParallelLoopsInBnnCodeUseEveryThread) {
  const int before = torch::get_num_threads();
  torch::set_num_threads(3);
  EXPECT_EQ(bnn::runtime::parallel_loop_threads(), 3);
  torch::set_num_threads(1);
  EXPECT_EQ(bnn::runtime::parallel_loop_threads(), 1);
  torch::set_num_threads(before);
  const auto out = version("BNN_SHARE_CORES=0");
  ASSERT_EQ(out.code, 0) << out.output;
  const int threads = std::stoi(out.output.substr(out.output.find("threads: ") + 9));
  EXPECT_NE(out.output.find("parallel loops in bnn's code: " + std::to_string(threads) + " threads"),
            std::string::npos)
      << out.output;
}

// bnn run's CPU workers (--members-per-device) are threads the process
// starts. OpenMP gives a new thread its default thread count (every CPU),
// not the main thread's; LibTorch sets it to the configured count at the
// thread's first parallel loop or thread query, which keeps workers within
// --threads and their reductions split as on the main thread. Checked here
// because bnn relies on it.
TEST(Threads, WorkerThreadsUseTheConfiguredCount) {
  const int before = torch::get_num_threads();
  for (const int n : {1, 3}) {
    torch::set_num_threads(n);
    int loop = 0, count = 0;
    std::thread worker([&] {
      loop = bnn::runtime::parallel_loop_threads();
      count = torch::get_num_threads();
    });
    worker.join();
    EXPECT_EQ(loop, n);
    EXPECT_EQ(count, n);
  }
  torch::set_num_threads(before);
}

// Note [BLAS threads]: Debian's two OpenBLAS builds, each put first on the
// library path (scripts/install-deps.sh installs both).
TEST(Threads, VersionNamesTheBlasAndItsThreading) {
  // A pip wheel's LibTorch does its products in its own MKL and loads no
  // libblas.so.3, whatever the library path holds.
  std::ifstream maps_file("/proc/self/maps");
  const std::string maps((std::istreambuf_iterator<char>(maps_file)), std::istreambuf_iterator<char>());
  if (maps.find("/libblas.so.3") == std::string::npos) {
    GTEST_SKIP() << "this LibTorch loads no libblas.so.3 (" << bnn::runtime::blas_description() << ")";
  }
  const std::string lib = "/usr/lib/x86_64-linux-gnu/openblas-";
  for (const auto& [build, expected] :
       {std::pair<std::string, std::string>{"pthread", "BLAS: OpenBLAS, pthreads build: one thread"},
        {"openmp", "BLAS: OpenBLAS, OpenMP build: LibTorch's threads"}}) {
    if (!std::filesystem::exists(lib + build + "/libblas.so.3")) {
      ADD_FAILURE() << "libopenblas0-" << build << " is not installed (scripts/install-deps.sh installs it)";
      continue;
    }
    const auto out = version("LD_LIBRARY_PATH=" + lib + build);
    ASSERT_EQ(out.code, 0) << out.output;
    EXPECT_NE(out.output.find(expected), std::string::npos) << out.output;
  }
}

TEST(Threads, OpenMpWaitPolicyFollowsTheEnvironment) {
  // BNN_SHARE_CORES=1: bnn restarted itself with its short spin before
  // libgomp read the environment.
  const auto share = version("BNN_SHARE_CORES=1");
  ASSERT_EQ(share.code, 0) << share.output;
  EXPECT_NE(share.output.find(std::string("OpenMP wait: GOMP_SPINCOUNT=") + bnn::runtime::kGompSpinCount +
                              " (bnn's choice"),
            std::string::npos)
      << share.output;
  // The user's own setting wins, and BNN_SHARE_CORES=0 keeps the runtime's default.
  const auto user = version("GOMP_SPINCOUNT=77 BNN_SHARE_CORES=1");
  EXPECT_NE(user.output.find("OpenMP wait: GOMP_SPINCOUNT=77 (environment)"), std::string::npos) << user.output;
  const auto passive = version("OMP_WAIT_POLICY=passive");
  EXPECT_NE(passive.output.find("OpenMP wait: OMP_WAIT_POLICY=passive (environment)"), std::string::npos)
      << passive.output;
  const auto off = version("BNN_SHARE_CORES=0");
  EXPECT_NE(off.output.find("OpenMP wait: the OpenMP runtime's default (BNN_SHARE_CORES=0)"), std::string::npos)
      << off.output;
}

}  // namespace
