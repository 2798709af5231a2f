#include "controller/server/metrics/ads_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PrometheusAdsObserverTest, CountsWhatTheServiceReportsUnderTheMetricNames) {
  Metrics metrics;
  PrometheusAdsObserver observer(metrics);
  observer.OnStreamOpened();
  observer.OnStreamOpened();
  observer.OnStreamEnding(xds::StreamEndReason::kNamesLimit);
  observer.OnStreamEnding(xds::StreamEndReason::kWriteStall);
  observer.OnStreamEnding(xds::StreamEndReason::kShutdown);
  observer.OnStreamClosed();
  observer.OnSnapshot(/*streams_woken=*/3);
  observer.OnPush("type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
  observer.OnAck("type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
  observer.OnNack("type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
  observer.OnResponseBytesInFlightChange(700);
  observer.OnResponseBytesInFlightChange(-200);
  observer.OnSubscriptionMemoryChange(4096);
  observer.OnPushCompleted(absl::Milliseconds(20));
  observer.OnPushCompleted(absl::Milliseconds(300));
  const std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("# TYPE facet_xds_streams_open gauge\nfacet_xds_streams_open 1\n"));
  EXPECT_THAT(text,
              HasSubstr("# TYPE facet_xds_streams_total counter\nfacet_xds_streams_total 2\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_streams_closed_names_limit_total 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_streams_closed_write_stall_total 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_streams_closed_types_limit_total 0\n"));
  EXPECT_THAT(text, HasSubstr("facet_snapshots_published_total 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_stream_wakes_total 3\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_pushes_total 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_acks_total 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_nacks_total 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_response_bytes_in_flight 500\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_subscription_memory_bytes 4096\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE facet_push_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("facet_push_seconds_bucket{le=\"0.025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_push_seconds_bucket{le=\"0.25\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_push_seconds_bucket{le=\"0.5\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("facet_push_seconds_count 2\n"));
}

// An authority is a name a manifest's or a client's writer chooses: quotes,
// backslashes and line breaks in it must not forge samples or break the
// exposition (the hand-written text before prometheus-cpp wrote them raw).
TEST(PrometheusAdsObserverTest, EscapesHostileAuthoritiesAndDropsThoseNoStreamHolds) {
  Metrics metrics;
  PrometheusAdsObserver observer(metrics);
  const std::string hostile = "evil\"} 1\nfacet_forged 1\n\\";
  observer.OnStreamsByAuthorityChange("", 2);
  observer.OnStreamsByAuthorityChange(hostile, 1);
  std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("facet_xds_streams_by_authority{authority=\"\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("facet_xds_streams_by_authority{authority="
                              "\"evil\\\"} 1\\nfacet_forged 1\\n\\\\\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("\nfacet_forged")));

  observer.OnStreamsByAuthorityChange(hostile, -1);
  observer.OnStreamsByAuthorityChange("", 1);
  text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("facet_xds_streams_by_authority{authority=\"\"} 3\n"));
  EXPECT_THAT(text, Not(HasSubstr("evil")));
}

}  // namespace
}  // namespace facet::controller
