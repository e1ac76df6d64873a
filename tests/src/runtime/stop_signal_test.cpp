// Note [Stop signals]: the first SIGTERM or SIGINT is a request the workers
// read; the second ends the process by the signal's default action.
#include "src/runtime/stop_signal.h"

#include <gtest/gtest.h>

#include <csignal>

namespace bnn::runtime {
namespace {

TEST(StopSignals, TheFirstSignalIsARequestAndTheSecondEndsTheProcess) {
  for (const int signo : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(signal_name(signo));
    EXPECT_EXIT(
        {
          stop_on_signals();
          if (stop_signal() != 0) std::_Exit(10);
          std::raise(signo);
          if (stop_signal() != signo) std::_Exit(11);  // alive, and the request is recorded
          std::raise(SIGPIPE);  // a `| tee` ended by the same Ctrl-C: ignored from now on
          std::raise(signo == SIGTERM ? SIGINT : SIGTERM);
          std::_Exit(12);  // not reached: the second signal, of either kind, ends the process
        },
        ::testing::KilledBySignal(signo == SIGTERM ? SIGINT : SIGTERM),
        "bnn: " + signal_name(signo) + ": stopping at the next epoch end \\(a second signal stops at once\\)");
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
