#include "controller/server/admin/metrics_text.h"

#include "absl/strings/str_cat.h"

namespace facet::controller {

void AppendMetric(const char* name, const char* type, const char* help, double value,
                  std::string* out) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ",
                  value, "\n");
}

void AppendAdsMetrics(const xds::AdsService& ads, std::string* out) {
  const xds::AdsStats stats = ads.stats();
  AppendMetric("facet_xds_streams_open", "gauge", "Open ADS streams.", stats.streams_open, out);
  AppendMetric("facet_xds_streams_total", "counter", "ADS streams opened.", stats.streams_total,
               out);
  AppendMetric("facet_xds_pushes_total", "counter", "Responses sent on ADS streams.", stats.pushes,
               out);
  AppendMetric("facet_xds_acks_total", "counter", "ACKs received.", stats.acks, out);
  AppendMetric("facet_xds_nacks_total", "counter", "NACKs received.", stats.nacks, out);
  AppendMetric("facet_snapshots_published_total", "counter", "Snapshots published.",
               stats.snapshots, out);
  AppendMetric("facet_xds_stream_wakes_total", "counter",
               "Streams woken by a snapshot because a variant they select changed.",
               stats.stream_wakes, out);
  AppendMetric("facet_xds_streams_closed_names_limit_total", "counter",
               "ADS streams closed for subscribing to more names than allowed.",
               stats.streams_closed_names_limit, out);
  AppendMetric("facet_xds_streams_closed_types_limit_total", "counter",
               "ADS streams closed for subscribing to more type URLs than allowed.",
               stats.streams_closed_types_limit, out);
  AppendMetric("facet_xds_streams_closed_subscription_bytes_limit_total", "counter",
               "ADS streams closed for subscribing to more name and parameter bytes than allowed.",
               stats.streams_closed_bytes_limit, out);
  AppendMetric("facet_xds_streams_closed_write_stall_total", "counter",
               "ADS streams cancelled because a write did not complete in time.",
               stats.streams_closed_write_stall, out);
  AppendMetric("facet_xds_streams_closed_connection_subscription_limit_total", "counter",
               "ADS streams closed for taking their connection's subscription memory beyond "
               "--max-subscription-bytes-per-connection.",
               stats.streams_closed_connection_subscription_limit, out);
  AppendMetric("facet_xds_streams_closed_server_subscription_limit_total", "counter",
               "ADS streams closed for taking the server's subscription memory beyond "
               "--max-subscription-bytes.",
               stats.streams_closed_server_subscription_limit, out);
  AppendMetric("facet_xds_subscription_memory_bytes", "gauge",
               "Estimated memory the subscriptions of all ADS streams hold.",
               stats.subscription_memory_bytes, out);
  AppendMetric("facet_xds_nack_records_dropped_total", "counter",
               "NACKs not recorded because the NACK record table was full.",
               stats.nack_records_dropped, out);
  AppendMetric("facet_xds_nack_details_truncated_total", "counter",
               "NACK error details cut to the configured size.", stats.nack_details_truncated,
               out);
  AppendMetric("facet_xds_nack_detail_bytes", "gauge",
               "Bytes of NACK error details kept (each once, however many records share it).",
               stats.nack_detail_bytes, out);
  AppendMetric("facet_xds_response_bytes_in_flight", "gauge",
               "Bytes of ADS responses being written (the response memory budget in use).",
               stats.response_bytes_in_flight, out);
  AppendMetric("facet_xds_responses_deferred_total", "counter",
               "ADS responses that waited for the response memory budget.",
               stats.responses_deferred, out);
  absl::StrAppend(out,
                  "# HELP facet_xds_streams_by_authority Open ADS streams holding resources of "
                  "an authority (\"\" for old-style names).\n"
                  "# TYPE facet_xds_streams_by_authority gauge\n");
  for (const auto& [authority, count] : ads.StreamsPerAuthority()) {
    absl::StrAppend(out, "facet_xds_streams_by_authority{authority=\"", authority, "\"} ", count,
                    "\n");
  }
}

}  // namespace facet::controller
