#include "src/runtime/deadline.h"

#include <utility>

namespace bnn::runtime {

Deadline::Deadline(double seconds, Now now) : now_(std::move(now)), seconds_(seconds), start_(now_()) {}

namespace {

void raise_to(std::atomic<double>& longest, double seconds) {
  double seen = longest.load();
  while (seconds > seen && !longest.compare_exchange_weak(seen, seconds)) {
  }
}

}  // namespace

void Deadline::epoch_took(double seconds) { raise_to(longest_epoch_, seconds); }

void Deadline::member_took(double seconds) { raise_to(longest_member_, seconds); }

bool Deadline::allows_a_member(int64_t epochs) const {
  const double member = longest_member_.load();
  return member > 0 ? elapsed() + member <= seconds_ : allows_epochs(epochs);
}

bool Deadline::allows_epochs(int64_t epochs) const {
  return elapsed() + static_cast<double>(epochs) * longest_epoch_.load() <= seconds_;
}

double Deadline::elapsed() const { return std::chrono::duration<double>(now_() - start_).count(); }

}  // namespace bnn::runtime
