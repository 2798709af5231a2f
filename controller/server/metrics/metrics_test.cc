#include "controller/server/metrics/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, TextHasEachMetricWithItsHelpAndType) {
  Metrics metrics;
  metrics.Counter("facet_things_total", "Things done.").Increment(3);
  metrics.Gauge("facet_things_open", "Things open.").Set(2);
  metrics.Histogram("facet_thing_seconds", "Time a thing takes.", LatencyBuckets())
      .Observe(0.02);
  const std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("# HELP facet_things_total Things done.\n"
                              "# TYPE facet_things_total counter\n"
                              "facet_things_total 3\n"));
  EXPECT_THAT(text, HasSubstr("# HELP facet_things_open Things open.\n"
                              "# TYPE facet_things_open gauge\n"
                              "facet_things_open 2\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE facet_thing_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("facet_thing_seconds_bucket{le=\"0.01\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("facet_thing_seconds_bucket{le=\"0.025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_thing_seconds_count 1\n"));
}

TEST(MetricsTest, ScrapeUpdatesCopyStatsInAndCountersNeverGoBack) {
  Metrics metrics;
  prometheus::Counter& builds = metrics.Counter("facet_builds_total", "Builds.");
  prometheus::Gauge& open = metrics.Gauge("facet_open", "Open.");
  double kept_builds = 5;
  double kept_open = 7;
  metrics.OnScrape([&] {
    AdvanceTo(builds, kept_builds);
    open.Set(kept_open);
  });
  EXPECT_THAT(metrics.Text(), HasSubstr("facet_builds_total 5\n"));
  kept_builds = 9;
  kept_open = 1;
  std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("facet_builds_total 9\n"));
  EXPECT_THAT(text, HasSubstr("facet_open 1\n"));
  kept_builds = 4;  // A counter that was reset elsewhere stays where it was.
  EXPECT_THAT(metrics.Text(), HasSubstr("facet_builds_total 9\n"));
}

TEST(StatsMetricsTest, ReadsTheStatsOncePerScrapeIntoEachMetric) {
  struct Stats {
    int64_t builds = 0;
    bool watching = false;
  };
  Metrics metrics;
  Stats kept{4, true};
  int reads = 0;
  StatsMetrics<Stats>(metrics)
      .Counter("facet_builds_total", "Builds.", [](const Stats& s) { return s.builds; })
      .Gauge("facet_watching", "1 while watching.", [](const Stats& s) { return s.watching; })
      .Install([&] {
        ++reads;
        return kept;
      });
  std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("# TYPE facet_builds_total counter\nfacet_builds_total 4\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE facet_watching gauge\nfacet_watching 1\n"));
  kept = {6, false};
  text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("facet_builds_total 6\n"));
  EXPECT_THAT(text, HasSubstr("facet_watching 0\n"));
  EXPECT_EQ(reads, 2);
}

}  // namespace
}  // namespace facet::controller
