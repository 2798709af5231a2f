// The ADS service's metrics (facet_xds_*, facet_snapshots_published_total,
// facet_push_seconds), kept as the service reports what it does.
#ifndef FACET_CONTROLLER_SERVER_METRICS_ADS_METRICS_H_
#define FACET_CONTROLLER_SERVER_METRICS_ADS_METRICS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "controller/server/metrics/metrics.h"
#include "xds_server/ads/ads_observer.h"

namespace facet::controller {

// Counts what an AdsService reports (AdsService::Options::observer) into
// prometheus metrics of `metrics`, registered by the constructor. Must
// outlive the service it observes. Thread-safe, and never blocks: counters
// and gauges are atomics, the histogram and the per-authority gauges take a
// short leaf lock.
class PrometheusAdsObserver final : public xds::AdsObserver {
 public:
  explicit PrometheusAdsObserver(Metrics& metrics);

  void OnStreamOpened() override;
  void OnStreamEnding(xds::StreamEndReason reason) override;
  void OnStreamClosed() override;
  void OnSnapshot(int64_t streams_woken) override;
  void OnPush(absl::string_view type_url) override;
  void OnPushCompleted(absl::Duration since_publish) override;
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
  prometheus::Gauge& streams_open_;
  prometheus::Counter& streams_total_;
  prometheus::Counter& pushes_;
  prometheus::Counter& acks_;
  prometheus::Counter& nacks_;
  prometheus::Counter& snapshots_;
  prometheus::Counter& stream_wakes_;
  prometheus::Counter& closed_names_limit_;
  prometheus::Counter& closed_types_limit_;
  prometheus::Counter& closed_bytes_limit_;
  prometheus::Counter& closed_write_stall_;
  prometheus::Counter& closed_connection_subscription_limit_;
  prometheus::Counter& closed_server_subscription_limit_;
  prometheus::Gauge& subscription_memory_;
  prometheus::Counter& nack_records_dropped_;
  prometheus::Counter& nack_details_truncated_;
  prometheus::Gauge& nack_detail_bytes_;
  prometheus::Gauge& response_bytes_in_flight_;
  prometheus::Counter& responses_deferred_;
  prometheus::Histogram& push_seconds_;
  prometheus::Family<prometheus::Gauge>& by_authority_;
  absl::Mutex authority_mu_;
  // One gauge per authority some stream holds, with its count.
  std::map<std::string, std::pair<prometheus::Gauge*, int64_t>> authorities_
      ABSL_GUARDED_BY(authority_mu_);
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_METRICS_ADS_METRICS_H_
