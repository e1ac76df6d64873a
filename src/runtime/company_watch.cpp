#include "src/runtime/company_watch.h"

#include <dirent.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace bnn::runtime {

bool CompanyDetector::update(int other_runnable) {
  const bool company = other_runnable >= 1;
  history_ = (history_ << 1) | (company ? 1u : 0u);
  quiet_ = company ? 0 : quiet_ + 1;
  if (!on_ && __builtin_popcount(history_ & 0xFu) >= 3) on_ = true;
  if (on_ && quiet_ >= 20) on_ = false;
  return on_;
}

namespace {

// The runnable-task count of /proc/loadavg ("0.52 0.58 0.59 3/150 4242"), or -1.
int loadavg_running() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c, running;
  if (!(in >> a >> b >> c >> running)) return -1;
  return std::atoi(running.c_str());
}

// This process's threads in state R (running or waiting for a CPU), or -1.
int own_running() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int running = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream stat(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string text;
    std::getline(stat, text);
    const auto paren = text.rfind(')');  // the command name may hold spaces and ')'
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'R') ++running;
  }
  ::closedir(dir);
  return running;
}

}  // namespace

int other_runnable_tasks_now() {
  int readings[3];
  for (int i = 0; i < 3; ++i) {
    const int all = loadavg_running();
    const int own = own_running();
    if (all < 0 || own < 0) return -1;
    readings[i] = std::max(0, all - own);
    if (i < 2) {
      const timespec pause{0, 2'000'000};
      ::nanosleep(&pause, nullptr);
    }
  }
  std::sort(readings, readings + 3);
  return readings[1];
}

SpinThrottle::SpinThrottle(int team_threads) {
#ifdef _OPENMP
  // libgomp counts its threads as 1 + (team_threads - 1) for the main
  // thread's pool; a team of k on another thread adds k - 1. It compares the
  // count with the CPUs of the process's affinity mask at its start.
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  const int team = std::max(2, cpus - std::max(team_threads, 1) + 2);
  thread_ = std::thread([this, team] {
    std::atomic<int> joined{0};
#pragma omp parallel num_threads(team)
    joined.fetch_add(1);
    std::unique_lock<std::mutex> lock(mutex_);
    spare_ = joined.load() - 1;
    started_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return stop_; });
  });
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return started_; });
#else
  (void)team_threads;
#endif
}

SpinThrottle::~SpinThrottle() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // libgomp ends the thread's pool with it
}

namespace {

class CompanyWatch {
 public:
  CompanyWatch() : thread_([this] { loop(); }) {}
  ~CompanyWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void set_threads(int threads) { threads_.store(threads); }
  bool throttling() const { return throttling_.load(); }

 private:
  void loop() {
    CompanyDetector detector;
    std::unique_ptr<SpinThrottle> throttle;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) break;
      }
      const int threads = threads_.load();
      const bool on = threads >= 2 && detector.update(other_runnable_tasks_now());
      if (threads < 2) detector = CompanyDetector();
      if (on && !throttle) throttle = std::make_unique<SpinThrottle>(threads);
      if (!on && throttle) throttle.reset();
      throttling_.store(on);
    }
  }

  std::atomic<int> threads_{1};
  std::atomic<bool> throttling_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

std::unique_ptr<CompanyWatch>& watch() {
  static std::unique_ptr<CompanyWatch> w;
  return w;
}

std::mutex& watch_mutex() {
  static std::mutex m;
  return m;
}

// libgomp's default spin is in effect (Note [Company watch]).
bool default_spin_in_effect() {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return false;
  const char* share = std::getenv("BNN_SHARE_CORES");
  return share == nullptr || std::string(share) != "0";
}

}  // namespace

void watch_for_company(int threads) {
#ifdef _OPENMP
  std::lock_guard<std::mutex> lock(watch_mutex());
  auto& w = watch();
  if (!w) {
    if (threads < 2 || !default_spin_in_effect()) return;
    w = std::make_unique<CompanyWatch>();
  }
  w->set_threads(threads);
#else
  (void)threads;
#endif
}

bool company_watch_running() {
  std::lock_guard<std::mutex> lock(watch_mutex());
  return watch() != nullptr;
}

bool company_watch_throttling() {
  std::lock_guard<std::mutex> lock(watch_mutex());
  return watch() != nullptr && watch()->throttling();
}

}  // namespace bnn::runtime
