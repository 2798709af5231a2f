// The memory ADS subscriptions hold, charged to their connection and the
// server within a bound for each.
#ifndef FACET_XDS_SERVER_ADS_SUBSCRIPTION_LEDGER_H_
#define FACET_XDS_SERVER_ADS_SUBSCRIPTION_LEDGER_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/ads/ads_observer.h"
#include "xds_server/ads/stream_state.h"

namespace facet::xds {

// Subscription memory (StreamState::SubscriptionMemory) charged per
// connection (a peer address) and in all. Thread-safe: a leaf lock, taken
// under a stream's lock.
class SubscriptionLedger {
 public:
  // Bounds of zero or less are unlimited. `observer` (not owned) hears of
  // the memory charged in all; it must outlive the ledger.
  SubscriptionLedger(int64_t max_per_connection, int64_t max_in_all, AdsObserver& observer);
  ~SubscriptionLedger();

  // Charges `bytes` more to `connection` and the server, or returns
  // ResourceExhausted naming the bound and its flag (and sets *limit) when
  // either would go beyond its bound.
  absl::Status Take(const std::string& connection, int64_t bytes, RequestOutcome::Limit* limit);
  // Charges (or, negative, returns) `bytes` without a check.
  void Adjust(const std::string& connection, int64_t bytes);

  // Returns what `connection` holds, and all connections.
  int64_t charged(const std::string& connection) const;
  int64_t charged() const;

 private:
  const int64_t max_per_connection_;
  const int64_t max_in_all_;
  AdsObserver& observer_;
  mutable absl::Mutex mu_;
  // Connections holding none are erased.
  absl::flat_hash_map<std::string, int64_t> by_connection_ ABSL_GUARDED_BY(mu_);
  int64_t in_all_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_SUBSCRIPTION_LEDGER_H_
