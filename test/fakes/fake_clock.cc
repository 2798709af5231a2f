#include "test/fakes/fake_clock.h"

namespace facet::testing {

absl::Time FakeClock::Now() {
  absl::MutexLock lock(&mu_);
  return now_;
}

bool FakeClock::SleepFor(absl::Duration duration, const absl::Notification& cancel) {
  absl::MutexLock lock(&mu_);
  sleeps_.push_back(duration);
  now_ += duration;
  return !cancel.HasBeenNotified();
}

void FakeClock::Advance(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  now_ += duration;
}

std::vector<absl::Duration> FakeClock::sleeps() const {
  absl::MutexLock lock(&mu_);
  return sleeps_;
}

bool FakeClock::WaitForSleeps(size_t count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, count]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sleeps_.size() >= count; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

}  // namespace facet::testing
