#include "controller/server/metrics/ads_metrics.h"

#include <memory>

namespace facet::controller {

void AddAdsMetrics(Metrics& metrics, const xds::AdsService& ads) {
  using S = xds::AdsStats;
  StatsMetrics<S>(metrics)
      .Gauge("facet_xds_streams_open", "Open ADS streams.",
             [](const S& s) { return s.streams_open; })
      .Counter("facet_xds_streams_total", "ADS streams opened.",
               [](const S& s) { return s.streams_total; })
      .Counter("facet_xds_pushes_total", "Responses sent on ADS streams.",
               [](const S& s) { return s.pushes; })
      .Counter("facet_xds_acks_total", "ACKs received.", [](const S& s) { return s.acks; })
      .Counter("facet_xds_nacks_total", "NACKs received.", [](const S& s) { return s.nacks; })
      .Counter("facet_snapshots_published_total", "Snapshots published.",
               [](const S& s) { return s.snapshots; })
      .Counter("facet_xds_stream_wakes_total",
               "Streams woken by a snapshot because a variant they select changed.",
               [](const S& s) { return s.stream_wakes; })
      .Counter("facet_xds_streams_closed_names_limit_total",
               "ADS streams closed for subscribing to more names than allowed.",
               [](const S& s) { return s.streams_closed_names_limit; })
      .Counter("facet_xds_streams_closed_types_limit_total",
               "ADS streams closed for subscribing to more type URLs than allowed.",
               [](const S& s) { return s.streams_closed_types_limit; })
      .Counter("facet_xds_streams_closed_subscription_bytes_limit_total",
               "ADS streams closed for subscribing to more name and parameter bytes than allowed.",
               [](const S& s) { return s.streams_closed_bytes_limit; })
      .Counter("facet_xds_streams_closed_write_stall_total",
               "ADS streams cancelled because a write did not complete in time.",
               [](const S& s) { return s.streams_closed_write_stall; })
      .Counter("facet_xds_streams_closed_connection_subscription_limit_total",
               "ADS streams closed for taking their connection's subscription memory beyond "
               "--max-subscription-bytes-per-connection.",
               [](const S& s) { return s.streams_closed_connection_subscription_limit; })
      .Counter("facet_xds_streams_closed_server_subscription_limit_total",
               "ADS streams closed for taking the server's subscription memory beyond "
               "--max-subscription-bytes.",
               [](const S& s) { return s.streams_closed_server_subscription_limit; })
      .Gauge("facet_xds_subscription_memory_bytes",
             "Estimated memory the subscriptions of all ADS streams hold.",
             [](const S& s) { return s.subscription_memory_bytes; })
      .Counter("facet_xds_nack_records_dropped_total",
               "NACKs not recorded because the NACK record table was full.",
               [](const S& s) { return s.nack_records_dropped; })
      .Counter("facet_xds_nack_details_truncated_total",
               "NACK error details cut to the configured size.",
               [](const S& s) { return s.nack_details_truncated; })
      .Gauge("facet_xds_nack_detail_bytes",
             "Bytes of NACK error details kept (each once, however many records share it).",
             [](const S& s) { return s.nack_detail_bytes; })
      .Gauge("facet_xds_response_bytes_in_flight",
             "Bytes of ADS responses being written (the response memory budget in use).",
             [](const S& s) { return s.response_bytes_in_flight; })
      .Counter("facet_xds_responses_deferred_total",
               "ADS responses that waited for the response memory budget.",
               [](const S& s) { return s.responses_deferred; })
      .Install([&ads] { return ads.stats(); });
  auto by_authority = std::make_shared<LabelledGauges>(
      prometheus::BuildGauge()
          .Name("facet_xds_streams_by_authority")
          .Help("Open ADS streams holding resources of an authority (\"\" for old-style names).")
          .Register(metrics.registry()),
      "authority");
  metrics.OnScrape([&ads, by_authority] { by_authority->Set(ads.StreamsPerAuthority()); });
}

}  // namespace facet::controller
