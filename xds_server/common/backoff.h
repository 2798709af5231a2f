// gRPC's connection backoff (gRFC A6, grpc/doc/connection-backoff.md), the
// one reconnection schedule of Facet's xDS clients: the relay's upstream
// client and the load tool's simulated gRPC clients.
#ifndef FACET_XDS_SERVER_COMMON_BACKOFF_H_
#define FACET_XDS_SERVER_COMMON_BACKOFF_H_

#include <functional>

#include "absl/random/random.h"
#include "absl/time/time.h"

namespace facet::xds {

// Each wait is the current step times a factor drawn uniformly from
// [1 - jitter, 1 + jitter); the step starts at `initial` and is multiplied by
// `multiplier` after each wait, up to `max`. Owned by one thread (or guarded
// by its owner's lock).
class ConnectionBackoff {
 public:
  // gRPC's defaults.
  struct Params {
    absl::Duration initial = absl::Seconds(1);
    double multiplier = 1.6;
    double jitter = 0.2;
    absl::Duration max = absl::Seconds(120);
  };

  // `random` returns uniform values in [0, 1); null: an absl::BitGen of the
  // backoff's own.
  explicit ConnectionBackoff(Params params, std::function<double()> random = nullptr);

  // Returns how long to wait before the next attempt, and grows the step.
  absl::Duration Next();

  // Starts over from `initial` (after an attempt that succeeded).
  void Reset() { step_ = params_.initial; }

  // The un-jittered step the next wait is drawn around.
  absl::Duration step() const { return step_; }

 private:
  const Params params_;
  std::function<double()> random_;
  absl::BitGen own_random_;
  absl::Duration step_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_COMMON_BACKOFF_H_
