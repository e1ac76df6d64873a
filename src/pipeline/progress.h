// A progress indicator with rate and ETA for long phases. On a terminal it
// redraws one line on stderr at most every half second; otherwise it writes a
// plain line every 30 seconds, so batch logs stay readable.
#pragma once

#include <chrono>
#include <string>

namespace bnn::pipeline {

class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  void update(int64_t done);

 private:
  void clear();
  std::string label_;
  int64_t total_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace bnn::pipeline
