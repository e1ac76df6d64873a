#include "src/runtime/stop_signal.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>

namespace bnn::runtime {

namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_stops_on_signals{false};
// The process group of a helper a second signal ends too (HelperGroup); 0: none.
std::atomic<int> g_helper_group{0};
// When the first signal came (CLOCK_MONOTONIC, ns); 0 until its handler has
// said so.
std::atomic<int64_t> g_first_signal_ns{0};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

// A second signal this soon after the first is the first relayed by a
// launcher (Note [Stop signals]).
constexpr int64_t kRelayWindowNs = int64_t{2'000'000'000};

int64_t monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

void say(const char* text, size_t size) {
  // Nothing to do if stderr is gone; the flag is what matters.
  const ssize_t written = ::write(STDERR_FILENO, text, size);
  (void)written;
}

extern "C" void on_stop_signal(int signo) {
  const int saved_errno = errno;  // the interrupted code may be about to read it
  int none = 0;
  if (!g_stop_signal.compare_exchange_strong(none, signo)) {
    const int64_t first = g_first_signal_ns.load();
    if (first == 0 || monotonic_ns() - first < kRelayWindowNs) {
      // A launcher's relay of the first (torchrun, timeout), or its handler still running.
      static const char relayed[] =
          "bnn: a second signal within 2 s, as a launcher relays the first: still stopping at the next epoch end\n";
      say(relayed, sizeof relayed - 1);
      errno = saved_errno;
      return;
    }
    // A second signal: the default action, now (Note [Stop signals]). The
    // signal is blocked while its handler runs: unblocked, it is delivered at
    // once. A process's namespace init (bnn as a container's PID 1) is not
    // ended by a signal it sends itself: it exits as if by the signal.
    if (const int helper = g_helper_group.load(); helper > 0) ::kill(-helper, signo);
    ::signal(signo, SIG_DFL);
    sigset_t just_this;
    sigemptyset(&just_this);
    sigaddset(&just_this, signo);
    ::sigprocmask(SIG_UNBLOCK, &just_this, nullptr);
    ::raise(signo);
    ::_exit(128 + signo);
  }
  g_first_signal_ns.store(monotonic_ns());
  // Ctrl-C also ends a `| tee` the log goes through: the writes to it until
  // the epoch's end must not end the process by SIGPIPE (one pending now is
  // discarded too), and fail instead.
  ::signal(SIGPIPE, SIG_IGN);
  static const char term[] =
      "bnn: SIGTERM: stopping at the next epoch end (a second signal, 2 s or more later, stops at once)\n";
  static const char interrupt[] =
      "bnn: SIGINT: stopping at the next epoch end (a second signal, 2 s or more later, stops at once)\n";
  if (signo == SIGTERM) {
    say(term, sizeof term - 1);
  } else {
    say(interrupt, sizeof interrupt - 1);
  }
  errno = saved_errno;
}

}  // namespace

void stop_on_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (const int signo : {SIGTERM, SIGINT}) ::sigaction(signo, &action, nullptr);
  g_stops_on_signals.store(true);
}

bool stops_on_signals() { return g_stops_on_signals.load(); }

int stop_signal() { return g_stop_signal.load(); }

HelperGroup::HelperGroup(int group) { g_helper_group.store(group); }

HelperGroup::~HelperGroup() { g_helper_group.store(0); }

std::string signal_name(int signo) {
  if (signo == SIGTERM) return "SIGTERM";
  if (signo == SIGINT) return "SIGINT";
  return "signal " + std::to_string(signo);
}

void request_stop(int signo) {
  int none = 0;
  if (g_stop_signal.compare_exchange_strong(none, signo)) g_first_signal_ns.store(monotonic_ns());
}

void clear_stop() {
  g_stop_signal.store(0);
  g_first_signal_ns.store(0);
}

}  // namespace bnn::runtime
