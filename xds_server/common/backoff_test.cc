#include "xds_server/common/backoff.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace facet::xds {
namespace {

// Durations scaled by doubles are exact to a nanosecond or so.
void ExpectNear(absl::Duration actual, absl::Duration expected) {
  EXPECT_LE(absl::AbsDuration(actual - expected), absl::Microseconds(1))
      << actual << " vs " << expected;
}

TEST(ConnectionBackoffTest, DefaultsAreGrpcConnectionBackoff) {
  const ConnectionBackoff::Params params;
  EXPECT_EQ(params.initial, absl::Seconds(1));
  EXPECT_DOUBLE_EQ(params.multiplier, 1.6);
  EXPECT_DOUBLE_EQ(params.jitter, 0.2);
  EXPECT_EQ(params.max, absl::Seconds(120));
}

TEST(ConnectionBackoffTest, StepGrowsByTheMultiplierUpToTheMax) {
  ConnectionBackoff backoff({}, [] { return 0.5; });  // 0.5: no jitter.
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 12; ++i) waits.push_back(backoff.Next());
  ExpectNear(waits[0], absl::Seconds(1));
  ExpectNear(waits[1], absl::Milliseconds(1600));
  ExpectNear(waits[2], absl::Milliseconds(2560));
  EXPECT_LT(waits[10], absl::Seconds(120));
  ExpectNear(waits[11], absl::Seconds(120));
  ExpectNear(backoff.Next(), absl::Seconds(120));
}

TEST(ConnectionBackoffTest, WaitsStayWithinTheJitterBounds) {
  ConnectionBackoff low({}, [] { return 0.0; });
  ConnectionBackoff high({}, [] { return 0.999999; });
  ExpectNear(low.Next(), absl::Milliseconds(800));
  EXPECT_GE(high.Next(), absl::Milliseconds(1199));
  EXPECT_LT(high.Next(), absl::Milliseconds(1920));
  ExpectNear(low.Next(), absl::Milliseconds(1280));

  ConnectionBackoff own({});  // Its own generator.
  for (int i = 0; i < 1000; ++i) {
    own.Reset();
    const absl::Duration wait = own.Next();
    ASSERT_GE(wait, absl::Milliseconds(800));
    ASSERT_LT(wait, absl::Milliseconds(1200));
  }
}

TEST(ConnectionBackoffTest, ResetStartsOverFromTheInitialStep) {
  ConnectionBackoff backoff({}, [] { return 0.5; });
  backoff.Next();
  backoff.Next();
  ExpectNear(backoff.step(), absl::Milliseconds(2560));
  backoff.Reset();
  ExpectNear(backoff.Next(), absl::Seconds(1));
}

TEST(ConnectionBackoffTest, ZeroJitterWaitsExactlyTheStep) {
  ConnectionBackoff backoff({.initial = absl::Milliseconds(100), .jitter = 0.0},
                            [] { return 0.9; });
  ExpectNear(backoff.Next(), absl::Milliseconds(100));
  ExpectNear(backoff.Next(), absl::Milliseconds(160));
}

// Many clients that lose their server at the same moment retry spread evenly
// over [0.8 s, 1.2 s), not together: no bucket of 50 ms holds much more than
// its share.
TEST(ConnectionBackoffTest, FirstRetriesOfManyClientsSpreadEvenlyOverTheJitterWindow) {
  std::mt19937 generator(7);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  constexpr int kClients = 10000;
  constexpr int kBuckets = 8;
  std::vector<int> buckets(kBuckets, 0);
  for (int i = 0; i < kClients; ++i) {
    ConnectionBackoff backoff({}, [&] { return uniform(generator); });
    const absl::Duration wait = backoff.Next();
    ASSERT_GE(wait, absl::Milliseconds(800));
    ASSERT_LT(wait, absl::Milliseconds(1200));
    ++buckets[(wait - absl::Milliseconds(800)) / absl::Milliseconds(50)];
  }
  for (int count : buckets) {
    EXPECT_GT(count, kClients / kBuckets * 9 / 10);
    EXPECT_LT(count, kClients / kBuckets * 11 / 10);
  }
}

}  // namespace
}  // namespace facet::xds
