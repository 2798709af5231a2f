#include "xds_server/ads/stall_check.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace facet::xds {

StallCheck::StallCheck(absl::Duration timeout, Scan scan)
    : timeout_(timeout), scan_(std::move(scan)) {
  if (timeout_ > absl::ZeroDuration()) thread_ = std::thread([this] { RunUntilStopped(); });
}

StallCheck::~StallCheck() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

absl::Duration StallCheck::PeriodFor(absl::Duration timeout) {
  return std::clamp(timeout / 8, absl::Milliseconds(10), absl::Milliseconds(500));
}

void StallCheck::RunUntilStopped() {
  const absl::Duration period = PeriodFor(timeout_);
  mu_.Lock();
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), period)) {
    mu_.Unlock();
    // No lock held: a scan may run streams' reactions on this thread.
    scan_(absl::Now() - timeout_);
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace facet::xds
