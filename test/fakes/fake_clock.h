// A Clock for tests: time moves only when the test advances it or when code
// under test sleeps (the sleep is recorded and returns at once).
#ifndef FACET_TEST_FAKES_FAKE_CLOCK_H_
#define FACET_TEST_FAKES_FAKE_CLOCK_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/clock.h"

namespace facet::testing {

// Thread-safe.
class FakeClock final : public controller::kube::Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24)) : now_(start) {}

  absl::Time Now() override;
  // Records `duration`, advances the time by it and returns at once; false
  // when `cancel` has been notified.
  bool SleepFor(absl::Duration duration, const absl::Notification& cancel) override;

  void Advance(absl::Duration duration);
  // Returns every duration slept so far, in order.
  std::vector<absl::Duration> sleeps() const;
  // Waits (in real time, at most `timeout`) until `count` sleeps happened.
  bool WaitForSleeps(size_t count, absl::Duration timeout = absl::Seconds(10)) const;

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> sleeps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::testing

#endif  // FACET_TEST_FAKES_FAKE_CLOCK_H_
