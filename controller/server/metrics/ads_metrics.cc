#include "controller/server/metrics/ads_metrics.h"

namespace facet::controller {

PrometheusAdsObserver::PrometheusAdsObserver(Metrics& metrics)
    : streams_open_(metrics.Gauge("facet_xds_streams_open", "Open ADS streams.")),
      streams_total_(metrics.Counter("facet_xds_streams_total", "ADS streams opened.")),
      pushes_(metrics.Counter("facet_xds_pushes_total", "Responses sent on ADS streams.")),
      acks_(metrics.Counter("facet_xds_acks_total", "ACKs received.")),
      nacks_(metrics.Counter("facet_xds_nacks_total", "NACKs received.")),
      snapshots_(metrics.Counter("facet_snapshots_published_total", "Snapshots published.")),
      stream_wakes_(metrics.Counter(
          "facet_xds_stream_wakes_total",
          "Streams woken by a snapshot because a variant they select changed.")),
      closed_names_limit_(
          metrics.Counter("facet_xds_streams_closed_names_limit_total",
                          "ADS streams closed for subscribing to more names than allowed.")),
      closed_types_limit_(
          metrics.Counter("facet_xds_streams_closed_types_limit_total",
                          "ADS streams closed for subscribing to more type URLs than allowed.")),
      closed_bytes_limit_(metrics.Counter(
          "facet_xds_streams_closed_subscription_bytes_limit_total",
          "ADS streams closed for subscribing to more name and parameter bytes than allowed.")),
      closed_write_stall_(
          metrics.Counter("facet_xds_streams_closed_write_stall_total",
                          "ADS streams cancelled because a write did not complete in time.")),
      closed_connection_subscription_limit_(metrics.Counter(
          "facet_xds_streams_closed_connection_subscription_limit_total",
          "ADS streams closed for taking their connection's subscription memory beyond "
          "--max-subscription-bytes-per-connection.")),
      closed_server_subscription_limit_(metrics.Counter(
          "facet_xds_streams_closed_server_subscription_limit_total",
          "ADS streams closed for taking the server's subscription memory beyond "
          "--max-subscription-bytes.")),
      subscription_memory_(
          metrics.Gauge("facet_xds_subscription_memory_bytes",
                        "Estimated memory the subscriptions of all ADS streams hold.")),
      nack_records_dropped_(
          metrics.Counter("facet_xds_nack_records_dropped_total",
                          "NACKs not recorded because the NACK record table was full.")),
      nack_details_truncated_(metrics.Counter("facet_xds_nack_details_truncated_total",
                                              "NACK error details cut to the configured size.")),
      nack_detail_bytes_(metrics.Gauge(
          "facet_xds_nack_detail_bytes",
          "Bytes of NACK error details kept (each once, however many records share it).")),
      response_bytes_in_flight_(metrics.Gauge(
          "facet_xds_response_bytes_in_flight",
          "Bytes of ADS responses being written (the response memory budget in use).")),
      responses_deferred_(
          metrics.Counter("facet_xds_responses_deferred_total",
                          "ADS responses that waited for the response memory budget.")),
      push_seconds_(metrics.Histogram(
          "facet_push_seconds",
          "Time from a snapshot's publication to the completed write of a response it caused.",
          LatencyBuckets())),
      by_authority_(prometheus::BuildGauge()
                        .Name("facet_xds_streams_by_authority")
                        .Help("Open ADS streams holding resources of an authority (\"\" for "
                              "old-style names).")
                        .Register(metrics.registry())) {}

void PrometheusAdsObserver::OnStreamOpened() {
  streams_total_.Increment();
  streams_open_.Increment();
}

void PrometheusAdsObserver::OnStreamEnding(xds::StreamEndReason reason) {
  switch (reason) {
    case xds::StreamEndReason::kNamesLimit:
      closed_names_limit_.Increment();
      return;
    case xds::StreamEndReason::kTypesLimit:
      closed_types_limit_.Increment();
      return;
    case xds::StreamEndReason::kBytesLimit:
      closed_bytes_limit_.Increment();
      return;
    case xds::StreamEndReason::kConnectionSubscriptionLimit:
      closed_connection_subscription_limit_.Increment();
      return;
    case xds::StreamEndReason::kServerSubscriptionLimit:
      closed_server_subscription_limit_.Increment();
      return;
    case xds::StreamEndReason::kWriteStall:
      closed_write_stall_.Increment();
      return;
    case xds::StreamEndReason::kInvalidRequest:
    case xds::StreamEndReason::kShutdown:
      return;  // No metric of their own.
  }
}

void PrometheusAdsObserver::OnStreamClosed() { streams_open_.Decrement(); }

void PrometheusAdsObserver::OnSnapshot(int64_t streams_woken) {
  snapshots_.Increment();
  stream_wakes_.Increment(static_cast<double>(streams_woken));
}

void PrometheusAdsObserver::OnPush(absl::string_view /*type_url*/) { pushes_.Increment(); }

void PrometheusAdsObserver::OnPushCompleted(absl::Duration since_publish) {
  push_seconds_.Observe(absl::ToDoubleSeconds(since_publish));
}

void PrometheusAdsObserver::OnAck(absl::string_view /*type_url*/) { acks_.Increment(); }

void PrometheusAdsObserver::OnNack(absl::string_view /*type_url*/) { nacks_.Increment(); }

void PrometheusAdsObserver::OnNackRecordDropped() { nack_records_dropped_.Increment(); }

void PrometheusAdsObserver::OnNackDetailTruncated() { nack_details_truncated_.Increment(); }

void PrometheusAdsObserver::OnResponseDeferred() { responses_deferred_.Increment(); }

void PrometheusAdsObserver::OnSubscriptionMemoryChange(int64_t bytes) {
  subscription_memory_.Increment(static_cast<double>(bytes));
}

void PrometheusAdsObserver::OnResponseBytesInFlightChange(int64_t bytes) {
  response_bytes_in_flight_.Increment(static_cast<double>(bytes));
}

void PrometheusAdsObserver::OnNackDetailBytesChange(int64_t bytes) {
  nack_detail_bytes_.Increment(static_cast<double>(bytes));
}

void PrometheusAdsObserver::OnStreamsByAuthorityChange(const std::string& authority,
                                                       int64_t streams) {
  absl::MutexLock lock(&authority_mu_);
  auto [it, inserted] = authorities_.try_emplace(authority, nullptr, 0);
  auto& [gauge, count] = it->second;
  if (inserted) gauge = &by_authority_.Add({{"authority", authority}});
  count += streams;
  if (count <= 0) {
    // No stream holds the authority: its sample goes, as it went from the
    // hand-written exposition.
    by_authority_.Remove(gauge);
    authorities_.erase(it);
    return;
  }
  gauge->Set(static_cast<double>(count));
}

}  // namespace facet::controller
