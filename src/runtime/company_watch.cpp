#include "src/runtime/company_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

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

int loadavg_running(const char* text, long size) {
  int field = 0, running = 0, total = 0;
  bool slash = false;
  for (long k = 0; k < size && field <= 3; ++k) {
    if (text[k] == ' ') {
      ++field;
    } else if (field == 3 && text[k] == '/') {
      slash = true;
    } else if (field == 3) {
      if (text[k] < '0' || text[k] > '9') return -1;
      int& number = slash ? total : running;
      number = number * 10 + (text[k] - '0');
    }
  }
  return slash && total > 0 ? running : -1;
}

int other_runnable_tasks(int samples, int (*own)()) {
  std::vector<int> counts;
  for (int i = 0; i < samples && i < 16; ++i) {
    const int fd = ::open("/proc/loadavg", O_RDONLY);
    if (fd < 0) return -1;
    char text[128];
    const ssize_t got = ::read(fd, text, sizeof(text) - 1);
    ::close(fd);
    if (got <= 0) return -1;
    const int value = loadavg_running(text, static_cast<long>(got));
    if (value < 0) return -1;
    const int mine = own();
    if (mine < 0) return -1;
    counts.push_back(value - mine);
    const timespec pause{0, 2'000'000};
    ::nanosleep(&pause, nullptr);
  }
  if (counts.empty()) return -1;
  std::sort(counts.begin(), counts.end());
  return counts[counts.size() / 2];
}

int own_running_tasks() {
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
      const bool on = threads >= 2 && detector.update(other_runnable_tasks(3, own_running_tasks));
      if (threads < 2) detector = CompanyDetector();
      if (on && !throttle) throttle = std::make_unique<SpinThrottle>(threads);
      if (!on && throttle) throttle.reset();
    }
  }

  std::atomic<int> threads_{1};
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

}  // namespace

void watch_for_company(int threads) {
#ifdef _OPENMP
  std::lock_guard<std::mutex> lock(watch_mutex());
  auto& w = watch();
  if (!w) {
    if (threads < 2) return;
    w = std::make_unique<CompanyWatch>();
  }
  w->set_threads(threads);
#else
  (void)threads;
#endif
}

}  // namespace bnn::runtime
