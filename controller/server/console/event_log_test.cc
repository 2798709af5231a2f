#include "controller/server/console/event_log.h"

#include <string>

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
  EXPECT_EQ(events[0].text, "a client NACKed a listener response");
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
            "{\"events\":[{\"kind\":\"nack\",\"seq\":1,\"text\":\"a client NACKed a listener "
            "response\",\"time\":\"2027-01-15T08:00:00.123Z\"}],\"last_seq\":1,"
            "\"pushes_since_snapshot\":1}");
  EXPECT_EQ(log.Json(1), "{\"events\":[],\"last_seq\":1,\"pushes_since_snapshot\":1}");
}

TEST(EventLogTest, EscapesQuotesAndControlCharactersInJson) {
  EventLog log = FixedClockLog(8);
  log.OnRejected("demo/web", "spec.variants[0]", "a \"quoted\"\nline\x01", true,
                 absl::FromUnixSeconds(0));
  log.OnNack("type.googleapis.com/x.\"Evil\n");
  const std::string json = log.Json(0);
  EXPECT_THAT(json, HasSubstr("\"reason\":\"a \\\"quoted\\\"\\nline\\u0001\""));
  // A type URL no served type has is made safe for a log line first.
  EXPECT_THAT(json, HasSubstr("a client NACKed a type.googleapis.com/x.\\\"Evil\\\\n response"));
  EXPECT_THAT(json, Not(HasSubstr("\n")));
}

TEST(EventLogTest, RecordsARejectionWithItsObjectFieldReasonAndWhenItBegan) {
  EventLog log = FixedClockLog(8);
  log.OnRejected("demo/web", "spec.variants[0].resource.lb_policy", "unknown value \"FAST\"",
                 /*serving_previous=*/true, absl::FromUnixSeconds(1'800'000'000));
  log.OnRejected("demo/new", "", "no variants", /*serving_previous=*/false,
                 absl::FromUnixSeconds(1'800'000'000));
  log.OnAccepted("demo/web");
  const auto events = log.After(0);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "rejected");
  EXPECT_EQ(events[0].object, "demo/web");
  EXPECT_EQ(events[0].field, "spec.variants[0].resource.lb_policy");
  EXPECT_EQ(events[0].text,
            "demo/web rejected: spec.variants[0].resource.lb_policy: unknown value \"FAST\"; "
            "previous revision serving since 2027-01-15T08:00:00.000Z");
  EXPECT_EQ(events[1].text, "demo/new rejected: no variants; not served");
  EXPECT_EQ(events[2].kind, "accepted");
  EXPECT_EQ(events[2].text, "demo/web accepted again");
  EXPECT_THAT(log.Json(0),
              HasSubstr("{\"field\":\"spec.variants[0].resource.lb_policy\",\"kind\":"
                        "\"rejected\",\"object\":\"demo/web\",\"reason\":\"unknown value "
                        "\\\"FAST\\\"\",\"seq\":1,\"serving_previous\":true,\"since\":"
                        "\"2027-01-15T08:00:00.000Z\",\"text\":"));
}

TEST(EventLogTest, RecordsAFileThatStopsParsingAndParsesAgain) {
  EventLog log = FixedClockLog(8);
  log.OnFileRead("/m/broken.yaml", "3:7: did not find expected key");
  log.OnFileRead("/m/broken.yaml", "");
  const auto events = log.After(0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "unparsed");
  EXPECT_EQ(events[0].file, "/m/broken.yaml");
  EXPECT_EQ(events[0].text,
            "/m/broken.yaml does not parse: 3:7: did not find expected key; its last good read "
            "keeps serving");
  EXPECT_EQ(events[1].kind, "parsed");
  EXPECT_EQ(events[1].text, "/m/broken.yaml parses again");
  EXPECT_THAT(log.Json(0), HasSubstr("{\"file\":\"/m/broken.yaml\",\"kind\":\"unparsed\","
                                     "\"reason\":\"3:7: did not find expected key\",\"seq\":1,"));
}

TEST(EventLogTest, CutsLongAuthorTextAtACharacterBoundary) {
  EventLog log = FixedClockLog(8);
  std::string reason(1023, 'x');
  reason += "\xc3\xa9tail";  // "é" across the cut.
  log.OnRejected("demo/web", "", reason, /*serving_previous=*/false, absl::UnixEpoch());
  const std::string kept = log.After(0).front().reason;
  EXPECT_EQ(kept, std::string(1023, 'x') + "…");
}

}  // namespace
}  // namespace facet::controller
