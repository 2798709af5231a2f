// A clock the Kubernetes client layer reads and sleeps on, so that token
// refresh, backoff and watch timing can be driven by a fake in tests.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_CLOCK_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_CLOCK_H_

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace facet::controller::kube {

// Implementations: RealClock (below) and facet::testing::FakeClock.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time on a monotonic scale: only differences between
  // two readings are meaningful.
  virtual absl::Time Now() = 0;

  // Blocks until `duration` has passed or `cancel` is notified. Returns true
  // when the full duration passed, false when cancelled.
  virtual bool SleepFor(absl::Duration duration, const absl::Notification& cancel) = 0;
};

// Reads std::chrono::steady_clock and sleeps for real. Thread-safe.
class RealClock final : public Clock {
 public:
  absl::Time Now() override;
  bool SleepFor(absl::Duration duration, const absl::Notification& cancel) override;

  // Returns a process-wide instance (never destroyed).
  static RealClock& Get();
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_CLOCK_H_
