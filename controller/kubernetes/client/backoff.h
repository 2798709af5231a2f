// client-go's exponential backoff manager (wait.NewExponentialBackoffManager)
// as the Reflector uses it: 800 ms, x2, jitter 1.0, cap 30 s, reset after
// 2 min without a backoff.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_BACKOFF_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_BACKOFF_H_

#include <functional>

#include "absl/time/time.h"

namespace facet::controller::kube {

// Owned by one thread.
class Backoff {
 public:
  struct Params {
    absl::Duration initial = absl::Milliseconds(800);
    double factor = 2.0;
    // Each wait is d + random() * jitter * d, d the un-jittered step.
    double jitter = 1.0;
    absl::Duration cap = absl::Seconds(30);  // Caps d (before jitter).
    // When more than this has passed since the previous Next(), start over.
    absl::Duration reset_after = absl::Minutes(2);
  };

  // `random` returns uniform values in [0, 1).
  Backoff(Params params, std::function<double()> random);

  // Returns how long to wait now; `now` is the caller's clock reading.
  absl::Duration Next(absl::Time now);

 private:
  const Params params_;
  std::function<double()> random_;
  absl::Duration step_;
  absl::Time last_ = absl::InfinitePast();
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_BACKOFF_H_
