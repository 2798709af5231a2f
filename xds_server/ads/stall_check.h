// The write-stall check: a thread that looks for streams whose write has not
// completed in time.
#ifndef FACET_XDS_SERVER_ADS_STALL_CHECK_H_
#define FACET_XDS_SERVER_ADS_STALL_CHECK_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace facet::xds {

// Calls `scan(limit)` on a thread of its own every PeriodFor(timeout), with
// `limit` the time a write still in flight must have started after, until
// destroyed. Thread-safe; the destructor waits for a scan in progress.
class StallCheck {
 public:
  using Scan = std::function<void(absl::Time limit)>;

  // A `timeout` of zero or less starts no thread: `scan` is never called.
  StallCheck(absl::Duration timeout, Scan scan);
  ~StallCheck();
  StallCheck(const StallCheck&) = delete;
  StallCheck& operator=(const StallCheck&) = delete;

  // Returns how often a check with `timeout` scans: an eighth of it, within
  // [10 ms, 500 ms], so that every stalled write is found within a period of
  // its timeout, and all of them in one pass.
  static absl::Duration PeriodFor(absl::Duration timeout);

 private:
  void RunUntilStopped();

  const absl::Duration timeout_;
  const Scan scan_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Started last by the constructor, joined first by the destructor.
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_STALL_CHECK_H_
