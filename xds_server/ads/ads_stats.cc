#include "xds_server/ads/ads_stats.h"

namespace facet::xds {

AdsStatsCounter::~AdsStatsCounter() {
  // Streams changed the map on gRPC's threads, under the lock: freed under
  // it, which orders their last change before this visibly to
  // ThreadSanitizer.
  absl::MutexLock lock(&authority_mu_);
  by_authority_.clear();
}

AdsStats AdsStatsCounter::stats() const {
  AdsStats stats;
  stats.streams_open = streams_open_.load();
  stats.streams_total = streams_total_.load();
  stats.pushes = pushes_.load();
  stats.acks = acks_.load();
  stats.nacks = nacks_.load();
  stats.snapshots = snapshots_.load();
  stats.stream_wakes = stream_wakes_.load();
  stats.streams_closed_names_limit = closed_names_limit_.load();
  stats.streams_closed_types_limit = closed_types_limit_.load();
  stats.streams_closed_bytes_limit = closed_bytes_limit_.load();
  stats.streams_closed_write_stall = closed_write_stall_.load();
  stats.streams_closed_connection_subscription_limit = closed_connection_memory_.load();
  stats.streams_closed_server_subscription_limit = closed_server_memory_.load();
  stats.subscription_memory_bytes = subscription_memory_.load();
  stats.nack_records_dropped = nack_records_dropped_.load();
  stats.nack_details_truncated = nack_details_truncated_.load();
  stats.nack_detail_bytes = nack_detail_bytes_.load();
  stats.response_bytes_in_flight = response_bytes_.load();
  stats.response_bytes_in_flight_peak = response_bytes_peak_.load();
  stats.responses_deferred = responses_deferred_.load();
  return stats;
}

std::map<std::string, int> AdsStatsCounter::StreamsByAuthority() const {
  absl::MutexLock lock(&authority_mu_);
  return by_authority_;
}

void AdsStatsCounter::OnStreamOpened() {
  streams_open_++;
  streams_total_++;
}

void AdsStatsCounter::OnStreamEnding(StreamEndReason reason) {
  switch (reason) {
    case StreamEndReason::kNamesLimit:
      closed_names_limit_++;
      break;
    case StreamEndReason::kTypesLimit:
      closed_types_limit_++;
      break;
    case StreamEndReason::kBytesLimit:
      closed_bytes_limit_++;
      break;
    case StreamEndReason::kConnectionSubscriptionLimit:
      closed_connection_memory_++;
      break;
    case StreamEndReason::kServerSubscriptionLimit:
      closed_server_memory_++;
      break;
    case StreamEndReason::kWriteStall:
      closed_write_stall_++;
      break;
    case StreamEndReason::kInvalidRequest:
    case StreamEndReason::kShutdown:
      break;
  }
}

void AdsStatsCounter::OnStreamClosed() { streams_open_--; }

void AdsStatsCounter::OnSnapshot(int64_t streams_woken) {
  snapshots_++;
  stream_wakes_ += streams_woken;
}

void AdsStatsCounter::OnPush(absl::string_view) { pushes_++; }
void AdsStatsCounter::OnAck(absl::string_view) { acks_++; }
void AdsStatsCounter::OnNack(absl::string_view) { nacks_++; }
void AdsStatsCounter::OnNackRecordDropped() { nack_records_dropped_++; }
void AdsStatsCounter::OnNackDetailTruncated() { nack_details_truncated_++; }
void AdsStatsCounter::OnResponseDeferred() { responses_deferred_++; }
void AdsStatsCounter::OnSubscriptionMemoryChange(int64_t bytes) { subscription_memory_ += bytes; }
void AdsStatsCounter::OnNackDetailBytesChange(int64_t bytes) { nack_detail_bytes_ += bytes; }

void AdsStatsCounter::OnResponseBytesInFlightChange(int64_t bytes) {
  const int64_t now = response_bytes_.fetch_add(bytes) + bytes;
  int64_t peak = response_bytes_peak_.load(std::memory_order_relaxed);
  while (now > peak &&
         !response_bytes_peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void AdsStatsCounter::OnStreamsByAuthorityChange(const std::string& authority, int64_t streams) {
  absl::MutexLock lock(&authority_mu_);
  auto [it, inserted] = by_authority_.try_emplace(authority, 0);
  it->second += static_cast<int>(streams);
  if (it->second == 0) by_authority_.erase(it);
}

}  // namespace facet::xds
