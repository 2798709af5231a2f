#include "controller/server/console/event_log.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kListener[] = "type.googleapis.com/envoy.config.listener.v3.Listener";

EventLog FixedClockLog(size_t capacity) {
  return EventLog(capacity, [] { return absl::FromUnixMillis(1'800'000'000'123); });
}

TEST(EventLogTest, RecordsSnapshotsWithThePushesSinceTheOneBefore) {
  EventLog log = FixedClockLog(8);
  log.OnPush(kListener);
  log.OnPush(kListener);
  log.OnSnapshot(/*streams_woken=*/3);
  log.OnSnapshot(/*streams_woken=*/1);
  const auto events = log.After(0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].seq, 1u);
  EXPECT_EQ(events[0].kind, "snapshot");
  EXPECT_EQ(events[0].text,
            "snapshot published; 3 streams woken; 2 responses pushed since the one before");
  EXPECT_EQ(events[1].text,
            "snapshot published; 1 stream woken; 0 responses pushed since the one before");
}

TEST(EventLogTest, RecordsNacksByTypeAndStreamsTheServerEndedButNotShutdown) {
  EventLog log = FixedClockLog(8);
  log.OnNack(kListener);
  log.OnStreamEnding(xds::StreamEndReason::kWriteStall);
  log.OnStreamEnding(xds::StreamEndReason::kShutdown);
  const auto events = log.After(0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "nack");
  EXPECT_EQ(events[0].text, "a client NACKed a Listener response");
  EXPECT_EQ(events[1].kind, "stream_ended");
  EXPECT_EQ(events[1].text, "the server ended a stream: a write stalled");
}

TEST(EventLogTest, KeepsOnlyTheLastEventsAndAnswersThoseAfterASequenceNumber) {
  EventLog log = FixedClockLog(3);
  for (int i = 0; i < 5; ++i) log.OnSnapshot(i);
  const auto kept = log.After(0);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().seq, 3u);
  EXPECT_EQ(kept.back().seq, 5u);
  EXPECT_EQ(log.After(4).size(), 1u);
  EXPECT_TRUE(log.After(5).empty());
}

TEST(EventLogTest, PrintsJsonWithSortedKeysAndTheLastSequenceNumber) {
  EventLog log = FixedClockLog(8);
  log.OnNack(kListener);
  log.OnPush(kListener);
  EXPECT_EQ(log.Json(0),
            "{\"events\":[\n{\"kind\":\"nack\",\"seq\":1,\"text\":\"a client NACKed a Listener "
            "response\",\"time\":\"2027-01-15T08:00:00.123Z\"}],\"last_seq\":1,"
            "\"pushes_since_snapshot\":1}");
  EXPECT_EQ(log.Json(1), "{\"events\":[],\"last_seq\":1,\"pushes_since_snapshot\":1}");
}

TEST(EventLogTest, EscapesQuotesAndControlCharactersInJson) {
  EventLog log = FixedClockLog(8);
  log.OnNack("type.googleapis.com/x.\"Evil\n");
  const std::string json = log.Json(0);
  EXPECT_THAT(json, HasSubstr("a \\\"Evil\\u000a response"));
  EXPECT_THAT(json, Not(HasSubstr("\n response")));
}

}  // namespace
}  // namespace facet::controller
