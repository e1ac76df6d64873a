#include "src/pipeline/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace bnn::pipeline {

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { clear(); }

void Progress::clear() {
  if (tty_ && drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
  }
}

void Progress::update(int64_t done) {
  const auto now = std::chrono::steady_clock::now();
  const double since_last = std::chrono::duration<double>(now - last_).count();
  if (since_last < (tty_ ? 0.5 : 30.0) || done <= 0) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = done / elapsed;
  const double eta = (total_ - done) / rate;
  const std::string line =
      fmt::format("{} {}/{} ({:.1f} it/s, ETA {:.0f}s)", label_, done, total_, rate, eta);
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}", line);
    drawn_ = true;
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
}

}  // namespace bnn::pipeline
