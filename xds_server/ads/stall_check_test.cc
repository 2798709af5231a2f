#include "xds_server/ads/stall_check.h"

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

TEST(StallCheckTest, PeriodIsAnEighthOfTheTimeoutWithinBounds) {
  EXPECT_EQ(StallCheck::PeriodFor(absl::Seconds(2)), absl::Milliseconds(250));
  EXPECT_EQ(StallCheck::PeriodFor(absl::Minutes(2)), absl::Milliseconds(500));
  EXPECT_EQ(StallCheck::PeriodFor(absl::Milliseconds(20)), absl::Milliseconds(10));
}

TEST(StallCheckTest, ScansRepeatedlyWithTheTimeOfTheOldestWriteAllowed) {
  absl::Mutex mu;
  std::vector<absl::Time> limits;
  const absl::Duration timeout = absl::Milliseconds(80);
  const absl::Time start = absl::Now();
  {
    StallCheck check(timeout, [&](absl::Time limit) {
      absl::MutexLock lock(&mu);
      limits.push_back(limit);
    });
    absl::MutexLock lock(&mu);
    ASSERT_TRUE(mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::vector<absl::Time>* l) { return l->size() >= 3; }, &limits),
        absl::Seconds(30)));
  }
  const absl::Time end = absl::Now();
  absl::MutexLock lock(&mu);
  const size_t scans = limits.size();
  for (size_t i = 0; i < scans; ++i) {
    EXPECT_GE(limits[i], start - timeout);
    EXPECT_LE(limits[i], end - timeout);
    if (i > 0) EXPECT_GE(limits[i], limits[i - 1]);
  }
}

}  // namespace
}  // namespace facet::xds
