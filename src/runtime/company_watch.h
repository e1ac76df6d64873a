// Keeping bnn fast when another busy process arrives while it runs.
//
// Note [Company watch]
// ~~~~~~~~~~~~~~~~~~~~
// bnn picks its OpenMP wait policy when it starts (Note [OpenMP wait policy]
// in src/runtime/threads.h): alone, it keeps libgomp's long spin at barriers,
// which is the fastest alone and collapses beside a busy process (a busy loop
// started 1 s after bnn: epochs 3-4x their solo time). libgomp reads its spin
// count only at start-up, but it also has a second, documented one: while it
// manages more threads than the process has CPUs it spins only briefly (100
// times, GOMP_SPINCOUNT in the libgomp manual) before sleeping, and it checks
// which applies at every wait.
//
// So a run that started with the long spin watches the machine: a background
// thread reads, every 100 ms, the runnable tasks other than its own
// (other_runnable_tasks). When most of the recent readings see company
// (CompanyDetector), it starts a SpinThrottle: one more thread that opens
// an OpenMP team of spare threads and keeps them parked (asleep), which takes
// libgomp's count of its threads past the CPUs. bnn's own teams and their
// sizes do not change, so neither do its results: only how long a thread
// spins before it sleeps. After 2 s without company the spare threads end
// and the long spin is back.
//
// The watch runs only where libgomp's default spin is in effect: not when
// GOMP_SPINCOUNT or OMP_WAIT_POLICY is set (by the user, or by bnn's restart
// for company at start) nor with BNN_SHARE_CORES=0, and not with one thread.
// /proc/loadavg counts every runnable task of the kernel, so in a container
// limited to some CPUs, busy tasks on the others count as company too: the
// cost is the short spin's (slower when alone), never a wrong result.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace bnn::runtime {

// Whether to throttle, from one reading of other runnable tasks per call:
// on when 3 of the last 4 readings saw at least one; off again after 20
// readings in a row saw none.
class CompanyDetector {
 public:
  bool update(int other_runnable);

 private:
  uint32_t history_ = 0;  // bit i: reading i calls ago saw company
  int quiet_ = 0;         // readings in a row without company
  bool on_ = false;
};

// The runnable tasks that /proc/loadavg's text counts, the 4th field's
// first number ("0.52 0.58 0.59 3/150 4242": 3); -1 where the field is not
// RUNNING/TOTAL or TOTAL is 0: a kernel that counts no task at all (gVisor's
// reads "0/0") says nothing of the machine.
int loadavg_running(const char* text, long size);

// Runnable tasks on the machine other than this process's: loadavg_running
// less own(), the median of `samples` readings (at most 16) 2 ms apart; -1
// if unreadable or uncounted.
// Reads /proc/loadavg with system calls only, so that
// set_openmp_wait_default can call it before libc is initialised (with an
// `own` that is 1: the process then has one thread).
int other_runnable_tasks(int samples, int (*own)());

// This process's threads in state R (running or waiting for a CPU), or -1.
int own_running_tasks();

// Spare OpenMP threads, parked while this object lives, enough that libgomp
// manages more threads than the CPUs of this process while `team_threads`
// (the intra-op thread count) work (Note [Company watch]).
class SpinThrottle {
 public:
  explicit SpinThrottle(int team_threads);
  ~SpinThrottle();
  SpinThrottle(const SpinThrottle&) = delete;
  SpinThrottle& operator=(const SpinThrottle&) = delete;

  int spare_threads() const { return spare_; }

 private:
  int spare_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stop_ = false;
  std::thread thread_;
};

// Starts the watch of Note [Company watch] once per process, for an intra-op
// thread count of `threads` (a later call updates it; below 2 the watch does
// nothing). configure_threads calls it where libgomp's default spin is in
// effect.
void watch_for_company(int threads);

}  // namespace bnn::runtime
