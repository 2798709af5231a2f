// The ADS server's counters as one value, kept from what it reports.
#ifndef FACET_XDS_SERVER_ADS_ADS_STATS_H_
#define FACET_XDS_SERVER_ADS_ADS_STATS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/ads/ads_observer.h"

namespace facet::xds {

// Counters for logs, the admin endpoint and metrics.
struct AdsStats {
  int64_t streams_open = 0;
  int64_t streams_total = 0;
  int64_t pushes = 0;
  int64_t acks = 0;
  int64_t nacks = 0;  // Counted after nacks() holds the NACK's records.
  int64_t snapshots = 0;
  // Streams woken by a snapshot to re-examine names: only those watching a
  // changed name whose selected variant changed (or may have).
  int64_t stream_wakes = 0;
  // Per-stream bounds: streams closed for exceeding each, NACK records not
  // kept (map full) and NACK error details truncated.
  int64_t streams_closed_names_limit = 0;
  int64_t streams_closed_types_limit = 0;
  int64_t streams_closed_bytes_limit = 0;
  int64_t streams_closed_write_stall = 0;
  // Streams closed for taking their connection's or the server's
  // subscription memory beyond its bound, and the memory all streams'
  // subscriptions hold (StreamState::SubscriptionMemory).
  int64_t streams_closed_connection_subscription_limit = 0;
  int64_t streams_closed_server_subscription_limit = 0;
  int64_t subscription_memory_bytes = 0;
  int64_t nack_records_dropped = 0;
  int64_t nack_details_truncated = 0;
  // Bytes of NACK error details kept (each detail once, however many records
  // share it).
  int64_t nack_detail_bytes = 0;
  // The response memory budget: bytes of responses being written now, the
  // most there ever were, and responses that waited for the budget.
  int64_t response_bytes_in_flight = 0;
  int64_t response_bytes_in_flight_peak = 0;
  int64_t responses_deferred = 0;
};

// Counts what an AdsService reports into AdsStats, and the streams holding
// each authority. Thread-safe: counters are atomics, the authority map has
// its own (leaf) lock.
class AdsStatsCounter final : public AdsObserver {
 public:
  AdsStatsCounter() = default;
  ~AdsStatsCounter() override;

  AdsStats stats() const;
  // Returns how many open streams hold at least one resource of each
  // authority; authorities no stream holds are left out.
  std::map<std::string, int> StreamsByAuthority() const;

  void OnStreamOpened() override;
  void OnStreamEnding(StreamEndReason reason) override;
  void OnStreamClosed() override;
  void OnSnapshot(int64_t streams_woken) override;
  void OnPush(absl::string_view type_url) override;
  void OnAck(absl::string_view type_url) override;
  void OnNack(absl::string_view type_url) override;
  void OnNackRecordDropped() override;
  void OnNackDetailTruncated() override;
  void OnResponseDeferred() override;
  void OnSubscriptionMemoryChange(int64_t bytes) override;
  void OnResponseBytesInFlightChange(int64_t bytes) override;
  void OnNackDetailBytesChange(int64_t bytes) override;
  void OnStreamsByAuthorityChange(const std::string& authority, int64_t streams) override;

 private:
  std::atomic<int64_t> streams_open_{0};
  std::atomic<int64_t> streams_total_{0};
  std::atomic<int64_t> pushes_{0};
  std::atomic<int64_t> acks_{0};
  std::atomic<int64_t> nacks_{0};
  std::atomic<int64_t> snapshots_{0};
  std::atomic<int64_t> stream_wakes_{0};
  std::atomic<int64_t> closed_names_limit_{0};
  std::atomic<int64_t> closed_types_limit_{0};
  std::atomic<int64_t> closed_bytes_limit_{0};
  std::atomic<int64_t> closed_write_stall_{0};
  std::atomic<int64_t> closed_connection_memory_{0};
  std::atomic<int64_t> closed_server_memory_{0};
  std::atomic<int64_t> subscription_memory_{0};
  std::atomic<int64_t> nack_records_dropped_{0};
  std::atomic<int64_t> nack_details_truncated_{0};
  std::atomic<int64_t> nack_detail_bytes_{0};
  std::atomic<int64_t> response_bytes_{0};
  std::atomic<int64_t> response_bytes_peak_{0};
  std::atomic<int64_t> responses_deferred_{0};
  mutable absl::Mutex authority_mu_;
  // Authorities some stream holds (counts above zero only).
  std::map<std::string, int> by_authority_ ABSL_GUARDED_BY(authority_mu_);
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_ADS_STATS_H_
