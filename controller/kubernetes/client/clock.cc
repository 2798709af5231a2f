#include "controller/kubernetes/client/clock.h"

#include <chrono>

namespace facet::controller::kube {

absl::Time RealClock::Now() {
  const auto since_epoch = std::chrono::steady_clock::now().time_since_epoch();
  return absl::UnixEpoch() + absl::FromChrono(since_epoch);
}

bool RealClock::SleepFor(absl::Duration duration, const absl::Notification& cancel) {
  return !cancel.WaitForNotificationWithTimeout(duration);
}

RealClock& RealClock::Get() {
  static RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace facet::controller::kube
