#include "controller/server/metrics/ads_metrics.h"

#include <memory>
#include <vector>

namespace facet::controller {

void AddAdsMetrics(Metrics& metrics, const xds::AdsService& ads) {
  using Stat = int64_t xds::AdsStats::*;
  struct Mirror {
    Stat stat;
    prometheus::Counter* counter;
    prometheus::Gauge* gauge;
  };
  auto counter = [&](const char* name, const char* help, Stat stat) {
    return Mirror{stat, &metrics.Counter(name, help), nullptr};
  };
  auto gauge = [&](const char* name, const char* help, Stat stat) {
    return Mirror{stat, nullptr, &metrics.Gauge(name, help)};
  };
  std::vector<Mirror> mirrors = {
      gauge("facet_xds_streams_open", "Open ADS streams.", &xds::AdsStats::streams_open),
      counter("facet_xds_streams_total", "ADS streams opened.", &xds::AdsStats::streams_total),
      counter("facet_xds_pushes_total", "Responses sent on ADS streams.", &xds::AdsStats::pushes),
      counter("facet_xds_acks_total", "ACKs received.", &xds::AdsStats::acks),
      counter("facet_xds_nacks_total", "NACKs received.", &xds::AdsStats::nacks),
      counter("facet_snapshots_published_total", "Snapshots published.",
              &xds::AdsStats::snapshots),
      counter("facet_xds_stream_wakes_total",
              "Streams woken by a snapshot because a variant they select changed.",
              &xds::AdsStats::stream_wakes),
      counter("facet_xds_streams_closed_names_limit_total",
              "ADS streams closed for subscribing to more names than allowed.",
              &xds::AdsStats::streams_closed_names_limit),
      counter("facet_xds_streams_closed_types_limit_total",
              "ADS streams closed for subscribing to more type URLs than allowed.",
              &xds::AdsStats::streams_closed_types_limit),
      counter("facet_xds_streams_closed_subscription_bytes_limit_total",
              "ADS streams closed for subscribing to more name and parameter bytes than allowed.",
              &xds::AdsStats::streams_closed_bytes_limit),
      counter("facet_xds_streams_closed_write_stall_total",
              "ADS streams cancelled because a write did not complete in time.",
              &xds::AdsStats::streams_closed_write_stall),
      counter("facet_xds_streams_closed_connection_subscription_limit_total",
              "ADS streams closed for taking their connection's subscription memory beyond "
              "--max-subscription-bytes-per-connection.",
              &xds::AdsStats::streams_closed_connection_subscription_limit),
      counter("facet_xds_streams_closed_server_subscription_limit_total",
              "ADS streams closed for taking the server's subscription memory beyond "
              "--max-subscription-bytes.",
              &xds::AdsStats::streams_closed_server_subscription_limit),
      gauge("facet_xds_subscription_memory_bytes",
            "Estimated memory the subscriptions of all ADS streams hold.",
            &xds::AdsStats::subscription_memory_bytes),
      counter("facet_xds_nack_records_dropped_total",
              "NACKs not recorded because the NACK record table was full.",
              &xds::AdsStats::nack_records_dropped),
      counter("facet_xds_nack_details_truncated_total",
              "NACK error details cut to the configured size.",
              &xds::AdsStats::nack_details_truncated),
      gauge("facet_xds_nack_detail_bytes",
            "Bytes of NACK error details kept (each once, however many records share it).",
            &xds::AdsStats::nack_detail_bytes),
      gauge("facet_xds_response_bytes_in_flight",
            "Bytes of ADS responses being written (the response memory budget in use).",
            &xds::AdsStats::response_bytes_in_flight),
      counter("facet_xds_responses_deferred_total",
              "ADS responses that waited for the response memory budget.",
              &xds::AdsStats::responses_deferred),
  };
  auto by_authority = std::make_shared<LabelledGauges>(
      prometheus::BuildGauge()
          .Name("facet_xds_streams_by_authority")
          .Help("Open ADS streams holding resources of an authority (\"\" for old-style names).")
          .Register(metrics.registry()),
      "authority");
  metrics.OnScrape([&ads, mirrors = std::move(mirrors), by_authority] {
    const xds::AdsStats stats = ads.stats();
    for (const Mirror& mirror : mirrors) {
      const double value = static_cast<double>(stats.*mirror.stat);
      if (mirror.counter != nullptr) AdvanceTo(*mirror.counter, value);
      if (mirror.gauge != nullptr) mirror.gauge->Set(value);
    }
    by_authority->Set(ads.StreamsPerAuthority());
  });
}

}  // namespace facet::controller
