#include "xds_server/ads/nack_log.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/ads_stats.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::SizeIs;

constexpr char kType[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

PushedItem Item(const std::string& name, const std::string& version) {
  return {name, "label-" + version, version, false};
}

TEST(NackLogTest, KeepsTheLastNackOfEachVariantWithItsCount) {
  AdsStatsCounter counter;
  NackLog log(/*max_records=*/10, /*max_detail_bytes=*/100, counter);
  log.Add(kType, {Item("a", "1"), Item("b", "1")}, "node-1", "bad a and b");
  log.Add(kType, {Item("a", "1")}, "node-2", "bad a");
  const std::vector<NackRecord> records = log.Records();
  ASSERT_THAT(records, SizeIs(2));
  EXPECT_EQ(records[0].name, "a");
  EXPECT_EQ(records[0].version, "1");
  EXPECT_EQ(records[0].label, "label-1");
  EXPECT_EQ(records[0].type_url, kType);
  EXPECT_EQ(records[0].node_id, "node-2");
  EXPECT_EQ(records[0].error_detail, "bad a");
  EXPECT_EQ(records[0].count, 2);
  EXPECT_EQ(records[1].name, "b");
  EXPECT_EQ(records[1].node_id, "node-1");
  EXPECT_EQ(records[1].count, 1);
}

TEST(NackLogTest, RemovalsAreNotRecorded) {
  AdsStatsCounter counter;
  NackLog log(10, 100, counter);
  log.Add(kType, {{"gone", "", "", true}, Item("kept", "2")}, "n", "no");
  EXPECT_THAT(log.Records(), ElementsAre(Field(&NackRecord::name, "kept")));
}

TEST(NackLogTest, RecordsBeyondTheBoundAreCountedNotKept) {
  AdsStatsCounter counter;
  NackLog log(/*max_records=*/2, 100, counter);
  log.Add(kType, {Item("a", "1"), Item("b", "1"), Item("c", "1")}, "n", "no");
  log.Add(kType, {Item("a", "1"), Item("d", "1")}, "n", "no");
  EXPECT_THAT(log.Records(),
              ElementsAre(Field(&NackRecord::name, "a"), Field(&NackRecord::name, "b")));
  EXPECT_EQ(log.Records()[0].count, 2) << "a kept record is still updated";
  EXPECT_EQ(counter.stats().nack_records_dropped, 2);
}

TEST(NackLogTest, DetailsAreCutAtACharacterBoundaryAndEscaped) {
  AdsStatsCounter counter;
  NackLog log(10, /*max_detail_bytes=*/6, counter);
  // "é" is two bytes: six bytes would split the second one.
  const NackLog::Detail detail = log.Add(kType, {Item("a", "1")}, "n",
                                         "\x01"
                                         "ab\xc3\xa9\xc3\xa9");
  EXPECT_TRUE(detail.truncated);
  EXPECT_EQ(*detail.text, "\\x01ab\xc3\xa9");
  EXPECT_EQ(log.Records()[0].error_detail, *detail.text);
  EXPECT_EQ(counter.stats().nack_details_truncated, 1);
  EXPECT_FALSE(log.Add(kType, {Item("a", "1")}, "n", "short").truncated);
  EXPECT_EQ(counter.stats().nack_details_truncated, 1);
}

TEST(NackLogTest, DetailBytesCountEachDetailKeptOnce) {
  AdsStatsCounter counter;
  NackLog log(10, 100, counter);
  log.Add(kType, {Item("a", "1"), Item("b", "1")}, "n", "0123456789");  // One detail, 2 records.
  EXPECT_EQ(counter.stats().nack_detail_bytes, 10);
  log.Add(kType, {Item("a", "1")}, "n", "abc");  // b still holds the first.
  EXPECT_EQ(counter.stats().nack_detail_bytes, 13);
  log.Add(kType, {Item("b", "1")}, "n", "xy");  // No record holds the first now.
  EXPECT_EQ(counter.stats().nack_detail_bytes, 5);
  log.Add(kType, {Item("c", "1")}, "n", "");
  EXPECT_EQ(counter.stats().nack_detail_bytes, 5);
}

}  // namespace
}  // namespace facet::xds
