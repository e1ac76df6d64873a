// Note [Stop signals]: `bnn run` and `bnn rhat` take SIGTERM (a batch
// scheduler's warning before its kill, `kill`, `docker stop`) and SIGINT
// (Ctrl-C) as a request to stop the way --time-limit stops (Note [Time
// limit], deadline.h): each member stops at its next epoch end, just after
// its checkpoint is written, no member starts after it, and the command
// exits kExitTimeLimit (75: not finished, run the same thing again); `bnn
// run --resume` then continues with the same results, bit for bit on the
// CPU, as a run never stopped. A signal that comes while the last member
// ends leaves the metrics to the next command as well; one that comes while
// the run evaluates lets the evaluation finish, and one while it waits for
// another process's evaluation lock stops the wait. A second signal, 2 s or
// more after the first, ends the process at once by the signal's default
// action: every file is written atomically, so nothing is left
// half-written, and the epochs under way are lost, as with a kill. One that
// comes sooner is taken for the first relayed: a Ctrl-C reaches every
// process of the terminal's group, and a launcher among them (torchrun,
// `timeout`) sends it on to bnn again at once. A member without checkpoints (run.checkpoint: false)
// and a `bnn rhat` repeat (its chains are kept only whole) stop too, and
// start again from their beginning. L-BFGS (anchor: map) has no epochs: a
// member signalled in it stops after its first sampling epoch.
//
// The handler sets a flag, ignores SIGPIPE from then on (Ctrl-C also ends a
// `| tee` the log goes through, and the lines until the epoch's end must not
// end bnn) and writes one fixed line to stderr, all async-signal-safe; it
// keeps errno. The workers look at the flag where they would look at the
// deadline. With SA_RESTART, most system calls the signal interrupts are
// resumed rather than failed. A data-parallel run's ranks agree at each
// epoch end and before each member whether any of them was signalled or ran
// out of time, and before the evaluation whether any was signalled (one
// all-reduce each), so that they stop together; a scheduler or torchrun
// signals each rank on its own, at slightly different moments. Every rank
// then exits with rank 0's code. Where the handlers are installed, gnuplot,
// which draws an evaluation's figures, runs in a process group of its own
// (src/evaluation/figures.cpp), so that a terminal's Ctrl-C, which lets the
// evaluation finish, does not kill it and the figures with it; a second
// signal, which ends bnn, ends that group too (HelperGroup). Elsewhere (bnn
// evaluate) gnuplot stays in bnn's group, and a Ctrl-C ends both.
#pragma once

#include <string>

namespace bnn::runtime {

// Installs the handlers of SIGTERM and SIGINT for this process. Only for
// commands that look at stop_signal(); another would then ignore them.
void stop_on_signals();

// Whether stop_on_signals() was called in this process.
bool stops_on_signals();

// The first stop signal received (SIGTERM, SIGINT), or 0 where none was.
int stop_signal();

// Note [Stop signals]: while one lives, a second signal, which ends bnn,
// is sent first to the process group `group` (a helper bnn waits for, in a
// group of its own), so that the helper does not outlive bnn. One at a time.
class HelperGroup {
 public:
  explicit HelperGroup(int group);
  ~HelperGroup();
  HelperGroup(const HelperGroup&) = delete;
  HelperGroup& operator=(const HelperGroup&) = delete;
};

// "SIGTERM", "SIGINT", or "signal N".
std::string signal_name(int signo);

// What the handler does with a first signal, without the signal (tests).
void request_stop(int signo);
// Forgets a stop requested (tests).
void clear_stop();

}  // namespace bnn::runtime
