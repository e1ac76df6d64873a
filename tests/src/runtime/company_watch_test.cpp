// Note [Company watch]: the detector's decisions, the spare threads of the
// throttle, and that throttling changes no result.
#include "src/runtime/company_watch.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

using bnn::runtime::CompanyDetector;

// Feeds `readings` and returns the decision after each, as "0"/"1".
std::string decisions(const std::vector<int>& readings) {
  CompanyDetector d;
  std::string out;
  for (const int r : readings) out += d.update(r) ? '1' : '0';
  return out;
}

TEST(CompanyDetector, OnWhenThreeOfTheLastFourReadingsSeeCompany) {
  EXPECT_EQ(decisions({0, 0, 0, 0}), "0000");
  EXPECT_EQ(decisions({1, 1, 1}), "001");
  EXPECT_EQ(decisions({2, 0, 1, 1}), "0001");
  EXPECT_EQ(decisions({1, 0, 1, 0, 1, 0, 1, 0}), "00000000");  // never 3 of 4
  EXPECT_EQ(decisions({-1, -1, -1, -1}), "0000");               // /proc unreadable: no company
}

TEST(CompanyDetector, OffAfterTwentyQuietReadingsInARow) {
  // Company 3 times, quiet 19, company again before the 20th quiet reading, quiet 20.
  std::vector<int> r(3 + 19 + 1 + 20, 0);
  r[0] = r[1] = r[2] = r[22] = 1;
  const std::string d = decisions(r);
  EXPECT_EQ(d.substr(0, 3), "001");
  EXPECT_EQ(d.substr(3, 20), std::string(20, '1'));
  EXPECT_EQ(d.substr(23, 19), std::string(19, '1'));
  EXPECT_EQ(d.back(), '0');
}

int threads_of_this_process() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

TEST(SpinThrottle, ParksEnoughSpareOpenMpThreadsWhileItLives) {
  // libgomp's count, as SpinThrottle's: the CPUs of the affinity mask (a
  // container's cpuset may hold fewer than the machine's).
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  const int before = threads_of_this_process();
  ASSERT_GT(before, 0);
  {
    bnn::runtime::SpinThrottle throttle(2);
    // libgomp then manages 1 + (2 - 1) + spare threads: more than the CPUs.
    EXPECT_GE(2 + throttle.spare_threads(), cpus + 1);
    // Its own thread and the spare ones (the main thread's pool may have
    // grown by then too, hence >=).
    EXPECT_GE(threads_of_this_process(), before + 1 + throttle.spare_threads());
  }
  // Gone with it; the spare threads end a moment after the join.
  int after = threads_of_this_process();
  for (int i = 0; i < 200 && after > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = threads_of_this_process();
  }
  EXPECT_EQ(after, before);
}

TEST(SpinThrottle, ChangesNoResult) {
  torch::manual_seed(3);
  const torch::Tensor a = torch::randn({300, 700}), b = torch::randn({700, 50});
  const torch::Tensor alone = torch::relu(a).matmul(b).sum(0);
  bnn::runtime::SpinThrottle throttle(torch::get_num_threads());
  EXPECT_TRUE(torch::equal(torch::relu(a).matmul(b).sum(0), alone));
}

TEST(OtherRunnableTasks, ReadsTheRunningCountOfLoadavg) {
  const auto running = [](const std::string& text) {
    return bnn::runtime::loadavg_running(text.data(), static_cast<long>(text.size()));
  };
  EXPECT_EQ(running("0.52 0.58 0.59 3/150 4242\n"), 3);
  EXPECT_EQ(running("1.00 0.90 0.80 17/2048 99"), 17);
  EXPECT_EQ(running("0.00 0.00 0.00 0/1 7"), 0);
  // gVisor's file counts no task: no reading, not "none runnable".
  EXPECT_EQ(running("0.00 0.00 0.00 0/0 0\n"), -1);
  EXPECT_EQ(running("0.52 0.58 0.59"), -1);
  EXPECT_EQ(running("0.52 0.58 0.59 3"), -1);
  EXPECT_EQ(running("0.52 0.58 0.59 x/150 1"), -1);
  EXPECT_EQ(running(""), -1);
}

TEST(OtherRunnableTasks, SeesABusyChildProcess) {
  std::ifstream file("/proc/loadavg");
  const std::string loadavg((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bnn::runtime::loadavg_running(loadavg.data(), static_cast<long>(loadavg.size())) < 0) {
    GTEST_SKIP() << "this kernel's /proc/loadavg counts no runnable task (gVisor's reads 0/0)";
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile unsigned long i = 0;
    for (;;) i = i + 1;
  }
  int seen = 0;
  for (int i = 0; i < 10 && seen < 1; ++i) {
    seen = bnn::runtime::other_runnable_tasks(3, bnn::runtime::own_running_tasks);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_GE(seen, 1);
}

}  // namespace
