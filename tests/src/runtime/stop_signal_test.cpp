// Note [Stop signals]: the first SIGTERM or SIGINT is a request the workers
// read; the second ends the process by the signal's default action.
#include "src/runtime/stop_signal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
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
