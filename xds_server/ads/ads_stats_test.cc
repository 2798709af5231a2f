#include "xds_server/ads/ads_stats.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(AdsStatsCounterTest, OpenStreamsAreThoseOpenedAndNotYetClosed) {
  AdsStatsCounter counter;
  counter.OnStreamOpened();
  counter.OnStreamOpened();
  counter.OnStreamEnding(StreamEndReason::kNamesLimit);
  counter.OnStreamClosed();
  const AdsStats stats = counter.stats();
  EXPECT_EQ(stats.streams_open, 1);
  EXPECT_EQ(stats.streams_total, 2);
  EXPECT_EQ(stats.streams_closed_names_limit, 1);
}

TEST(AdsStatsCounterTest, EachEndReasonHasItsCounter) {
  AdsStatsCounter counter;
  for (StreamEndReason reason :
       {StreamEndReason::kNamesLimit, StreamEndReason::kTypesLimit, StreamEndReason::kTypesLimit,
        StreamEndReason::kBytesLimit, StreamEndReason::kBytesLimit, StreamEndReason::kBytesLimit,
        StreamEndReason::kConnectionSubscriptionLimit, StreamEndReason::kServerSubscriptionLimit,
        StreamEndReason::kServerSubscriptionLimit, StreamEndReason::kWriteStall,
        StreamEndReason::kInvalidRequest, StreamEndReason::kShutdown}) {
    counter.OnStreamEnding(reason);
  }
  const AdsStats stats = counter.stats();
  EXPECT_EQ(stats.streams_closed_names_limit, 1);
  EXPECT_EQ(stats.streams_closed_types_limit, 2);
  EXPECT_EQ(stats.streams_closed_bytes_limit, 3);
  EXPECT_EQ(stats.streams_closed_connection_subscription_limit, 1);
  EXPECT_EQ(stats.streams_closed_server_subscription_limit, 2);
  EXPECT_EQ(stats.streams_closed_write_stall, 1);
}

TEST(AdsStatsCounterTest, CountsEvents) {
  AdsStatsCounter counter;
  counter.OnSnapshot(3);
  counter.OnSnapshot(0);
  counter.OnPush("t");
  counter.OnPush("t");
  counter.OnAck("t");
  counter.OnNack("t");
  counter.OnNackRecordDropped();
  counter.OnNackDetailTruncated();
  counter.OnResponseDeferred();
  counter.OnPushCompleted(absl::Seconds(1));  // Not an AdsStats counter.
  const AdsStats stats = counter.stats();
  EXPECT_EQ(stats.snapshots, 2);
  EXPECT_EQ(stats.stream_wakes, 3);
  EXPECT_EQ(stats.pushes, 2);
  EXPECT_EQ(stats.acks, 1);
  EXPECT_EQ(stats.nacks, 1);
  EXPECT_EQ(stats.nack_records_dropped, 1);
  EXPECT_EQ(stats.nack_details_truncated, 1);
  EXPECT_EQ(stats.responses_deferred, 1);
}

TEST(AdsStatsCounterTest, GaugesSumTheirChangesAndResponseBytesKeepTheirPeak) {
  AdsStatsCounter counter;
  counter.OnSubscriptionMemoryChange(100);
  counter.OnSubscriptionMemoryChange(-40);
  counter.OnNackDetailBytesChange(7);
  counter.OnResponseBytesInFlightChange(10);
  counter.OnResponseBytesInFlightChange(30);
  counter.OnResponseBytesInFlightChange(-30);
  counter.OnResponseBytesInFlightChange(5);
  const AdsStats stats = counter.stats();
  EXPECT_EQ(stats.subscription_memory_bytes, 60);
  EXPECT_EQ(stats.nack_detail_bytes, 7);
  EXPECT_EQ(stats.response_bytes_in_flight, 15);
  EXPECT_EQ(stats.response_bytes_in_flight_peak, 40);
}

TEST(AdsStatsCounterTest, AuthoritiesNoStreamHoldsAreLeftOut) {
  AdsStatsCounter counter;
  counter.OnStreamsByAuthorityChange("a.example", 1);
  counter.OnStreamsByAuthorityChange("a.example", 1);
  counter.OnStreamsByAuthorityChange("", 1);
  counter.OnStreamsByAuthorityChange("b.example", 1);
  counter.OnStreamsByAuthorityChange("b.example", -1);
  counter.OnStreamsByAuthorityChange("a.example", -1);
  EXPECT_THAT(counter.StreamsByAuthority(), ElementsAre(Pair("", 1), Pair("a.example", 1)));
}

// Records the calls it gets, to check a pair forwards to both.
class Recorder final : public AdsObserver {
 public:
  void OnPush(absl::string_view type_url) override { calls.push_back(std::string(type_url)); }
  void OnStreamsByAuthorityChange(const std::string& authority, int64_t streams) override {
    calls.push_back(authority + std::to_string(streams));
  }
  std::vector<std::string> calls;
};

TEST(AdsObserverPairTest, ForwardsToBothOrToTheFirstAlone) {
  Recorder first;
  Recorder second;
  AdsObserverPair both(first, &second);
  both.OnPush("t");
  both.OnStreamsByAuthorityChange("a", -1);
  both.OnAck("ignored");
  AdsObserverPair one(first, nullptr);
  one.OnPush("u");
  EXPECT_THAT(first.calls, ElementsAre("t", "a-1", "u"));
  EXPECT_THAT(second.calls, ElementsAre("t", "a-1"));
}

}  // namespace
}  // namespace facet::xds
