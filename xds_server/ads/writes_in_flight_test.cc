#include "xds_server/ads/writes_in_flight.h"

#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

class RecordingWriter : public WritesInFlight::Writer {
 public:
  void CancelIfStalled(absl::Time limit) override { limits.push_back(limit); }
  std::vector<absl::Time> limits;
};

const absl::Time kStart = absl::FromUnixSeconds(1000);

TEST(WritesInFlightTest, StreamsWithNoWriteInFlightCostThePassNothing) {
  WritesInFlight writes;
  std::vector<std::shared_ptr<RecordingWriter>> streams;
  for (uint64_t id = 1; id <= 1000; ++id) {
    streams.push_back(std::make_shared<RecordingWriter>());
    writes.Started(id, kStart, streams.back());
    writes.Ended(id);
  }
  EXPECT_EQ(writes.CancelStalled(kStart + absl::Minutes(5)), 0u);
  for (const auto& stream : streams) EXPECT_TRUE(stream->limits.empty());
}

TEST(WritesInFlightTest, LooksAtWritesInFlightAndCancelsThoseStartedBeforeTheLimit) {
  WritesInFlight writes;
  auto idle = std::make_shared<RecordingWriter>();
  auto stalled = std::make_shared<RecordingWriter>();
  auto recent = std::make_shared<RecordingWriter>();
  writes.Started(1, kStart, idle);
  writes.Ended(1);
  writes.Started(2, kStart, stalled);
  writes.Started(3, kStart + absl::Seconds(10), recent);
  const absl::Time limit = kStart + absl::Seconds(5);
  EXPECT_EQ(writes.CancelStalled(limit), 2u);
  EXPECT_TRUE(idle->limits.empty());
  EXPECT_EQ(stalled->limits, std::vector<absl::Time>{limit});
  EXPECT_TRUE(recent->limits.empty());
}

TEST(WritesInFlightTest, AWriteStartedAgainReplacesTheOneBefore) {
  WritesInFlight writes;
  auto stream = std::make_shared<RecordingWriter>();
  writes.Started(7, kStart, stream);
  writes.Started(7, kStart + absl::Seconds(10), stream);
  EXPECT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes.CancelStalled(kStart + absl::Seconds(5)), 1u);
  EXPECT_TRUE(stream->limits.empty());
}

TEST(WritesInFlightTest, EndedReleasesTheWriterAndForgetsTheWrite) {
  WritesInFlight writes;
  auto stream = std::make_shared<RecordingWriter>();
  writes.Started(7, kStart, stream);
  EXPECT_EQ(stream.use_count(), 2);
  writes.Ended(7);
  writes.Ended(7);  // Twice, or for a stream never seen: nothing.
  writes.Ended(8);
  EXPECT_EQ(stream.use_count(), 1);
  EXPECT_EQ(writes.size(), 0u);
  EXPECT_EQ(writes.CancelStalled(kStart + absl::Hours(1)), 0u);
  EXPECT_TRUE(stream->limits.empty());
}

// Writes are kept in shards by stream id: a pass and the count see every
// shard, and each stream's write stays its own whatever shard it falls in.
TEST(WritesInFlightTest, EveryStreamsWriteCountsWhicheverShardItIsIn) {
  WritesInFlight writes;
  std::vector<std::shared_ptr<RecordingWriter>> streams;
  for (uint64_t id = 0; id < 100; ++id) {
    streams.push_back(std::make_shared<RecordingWriter>());
    // Even ids started before the limit, odd ones after it.
    writes.Started(id, kStart + absl::Seconds(id % 2 == 0 ? 0 : 10), streams.back());
  }
  writes.Ended(50);
  EXPECT_EQ(writes.size(), 99u);
  const absl::Time limit = kStart + absl::Seconds(5);
  EXPECT_EQ(writes.CancelStalled(limit), 99u);
  for (uint64_t id = 0; id < 100; ++id) {
    const bool cancelled = id % 2 == 0 && id != 50;
    EXPECT_EQ(streams[id]->limits.size(), cancelled ? 1u : 0u) << "stream " << id;
  }
}

}  // namespace
}  // namespace facet::xds
