// Note [Stop signals]: the first SIGTERM or SIGINT is a request the workers
// read; the second ends the process by the signal's default action.
#include "src/runtime/stop_signal.h"

#include <spawn.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

namespace bnn::runtime {
namespace {

// A second signal within 2 s is the first relayed by a launcher (torchrun,
// `timeout`) and changes nothing; one 2 s or more after ends the process by
// its own default action.
TEST(StopSignals, TheFirstSignalIsARequestAndALaterSecondEndsTheProcess) {
  for (const int signo : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(signal_name(signo));
    const int second = signo == SIGTERM ? SIGINT : SIGTERM;
    EXPECT_EXIT(
        {
          stop_on_signals();
          if (stop_signal() != 0) std::_Exit(10);
          std::raise(signo);
          if (stop_signal() != signo) std::_Exit(11);  // alive, and the request is recorded
          std::raise(SIGPIPE);  // a `| tee` ended by the same Ctrl-C: ignored from now on
          std::raise(signo);    // relayed at once: alive still
          if (stop_signal() != signo) std::_Exit(12);
          std::this_thread::sleep_for(std::chrono::milliseconds(2100));
          std::raise(second);
          std::_Exit(13);  // not reached: the second signal, of either kind, ends the process
        },
        ::testing::KilledBySignal(second),
        "bnn: " + signal_name(signo) +
            ": stopping at the next epoch end \\(a second signal, 2 s or more later, stops at once\\)\n"
        "bnn: a second signal within 2 s, as a launcher relays the first: still stopping at the next epoch end\n");
  }
}

// A process with the stop handlers and a helper in a process group of its
// own (a shell that writes "ended" to `mark` when SIGTERM reaches it), sent
// SIGTERM twice, 2.1 s apart: the second ends it.
[[noreturn]] void signal_twice_beside_a_helper(const std::string& mark) {
  stop_on_signals();
  std::string shell = "sh", flag = "-c";
  std::string script = "trap 'echo ended > " + mark + "; exit 0' TERM; sleep 30 & wait";
  char* argv[] = {shell.data(), flag.data(), script.data(), nullptr};
  posix_spawnattr_t attributes;
  ::posix_spawnattr_init(&attributes);
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  if (::posix_spawn(&pid, "/bin/sh", nullptr, &attributes, argv, environ) != 0) std::_Exit(10);
  HelperGroup helper(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its trap set
  std::raise(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  std::raise(SIGTERM);
  std::_Exit(11);
}

// A helper bnn waits for in a process group of its own (gnuplot, which a
// terminal's Ctrl-C must not end) is ended by the second signal too, which
// ends bnn: it does not outlive bnn. Here the helper is a shell that writes a
// mark when SIGTERM reaches it.
TEST(StopSignals, ASecondSignalEndsTheHelperGroupToo) {
  const std::string mark = ::testing::TempDir() + "bnn_stop_signal_helper_" + std::to_string(::getpid());
  std::remove(mark.c_str());
  EXPECT_EXIT(signal_twice_beside_a_helper(mark), ::testing::KilledBySignal(SIGTERM), "");
  std::string said;
  for (int i = 0; i < 50 && said.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(mark);
    std::getline(in, said);
  }
  EXPECT_EQ(said, "ended") << "the helper's group was not sent the second signal";
  std::remove(mark.c_str());
}

// Without a stop requested, SIGPIPE keeps its default action (`bnn run | head` ends bnn).
TEST(StopSignals, SigpipeIsLeftAloneUntilAStopIsRequested) {
  EXPECT_EXIT(
      {
        stop_on_signals();
        std::raise(SIGPIPE);
        std::_Exit(12);
      },
      ::testing::KilledBySignal(SIGPIPE), "");
}

TEST(StopSignals, RequestsAreKeptUntilCleared) {
  clear_stop();
  EXPECT_EQ(stop_signal(), 0);
  request_stop(SIGINT);
  request_stop(SIGTERM);  // the first one stays
  EXPECT_EQ(stop_signal(), SIGINT);
  clear_stop();
  EXPECT_EQ(stop_signal(), 0);
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGUSR1), "signal " + std::to_string(SIGUSR1));
}

}  // namespace
}  // namespace bnn::runtime
