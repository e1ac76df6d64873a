#include "src/runtime/deadline.h"

#include <utility>

namespace bnn::runtime {

Deadline::Deadline(double seconds, Now now) : now_(std::move(now)), seconds_(seconds), start_(now_()) {}

void Deadline::epoch_took(double seconds) {
  double longest = longest_epoch_.load();
  while (seconds > longest && !longest_epoch_.compare_exchange_weak(longest, seconds)) {
  }
}

bool Deadline::allows_epochs(int64_t epochs) const {
  return elapsed() + static_cast<double>(epochs) * longest_epoch_.load() <= seconds_;
}

double Deadline::elapsed() const { return std::chrono::duration<double>(now_() - start_).count(); }

}  // namespace bnn::runtime
