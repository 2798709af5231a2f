#include "xds_server/ads/subscription_ledger.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/ads_stats.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;

TEST(SubscriptionLedgerTest, RefusesWhatWouldTakeAConnectionBeyondItsBoundNamingTheFlag) {
  AdsStatsCounter counter;
  SubscriptionLedger ledger(/*max_per_connection=*/100, /*max_in_all=*/1000, counter);
  RequestOutcome::Limit limit = RequestOutcome::Limit::kNone;
  EXPECT_THAT(ledger.Take("a", 100, &limit), IsOk());
  EXPECT_THAT(ledger.Take("a", 1, &limit),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("connection a beyond 100 bytes of memory "
                                 "(--max-subscription-bytes-per-connection)")));
  EXPECT_EQ(limit, RequestOutcome::Limit::kConnectionMemory);
  EXPECT_THAT(ledger.Take("b", 100, &limit), IsOk()) << "other connections have their own";
  EXPECT_EQ(ledger.charged("a"), 100);
  EXPECT_EQ(ledger.charged(), 200);
}

TEST(SubscriptionLedgerTest, RefusesWhatWouldTakeTheServerBeyondItsBound) {
  AdsStatsCounter counter;
  SubscriptionLedger ledger(/*max_per_connection=*/100, /*max_in_all=*/150, counter);
  RequestOutcome::Limit limit = RequestOutcome::Limit::kNone;
  EXPECT_THAT(ledger.Take("a", 100, &limit), IsOk());
  EXPECT_THAT(
      ledger.Take("b", 51, &limit),
      StatusIs(absl::StatusCode::kResourceExhausted,
               HasSubstr("all streams beyond 150 bytes of memory (--max-subscription-bytes)")));
  EXPECT_EQ(limit, RequestOutcome::Limit::kServerMemory);
  EXPECT_EQ(ledger.charged(), 100) << "a refused charge is not taken";
}

TEST(SubscriptionLedgerTest, ZeroBoundsAreUnlimited) {
  AdsStatsCounter counter;
  SubscriptionLedger ledger(0, 0, counter);
  RequestOutcome::Limit limit = RequestOutcome::Limit::kNone;
  EXPECT_THAT(ledger.Take("a", int64_t{1} << 50, &limit), IsOk());
  EXPECT_EQ(limit, RequestOutcome::Limit::kNone);
}

TEST(SubscriptionLedgerTest, AdjustmentsAreNotCheckedAndReturnedMemoryIsFreed) {
  AdsStatsCounter counter;
  SubscriptionLedger ledger(100, 100, counter);
  ledger.Adjust("a", 150);
  EXPECT_EQ(ledger.charged("a"), 150);
  EXPECT_EQ(counter.stats().subscription_memory_bytes, 150);
  ledger.Adjust("a", -150);
  EXPECT_EQ(ledger.charged("a"), 0);
  EXPECT_EQ(ledger.charged(), 0);
  EXPECT_EQ(counter.stats().subscription_memory_bytes, 0);
  RequestOutcome::Limit limit = RequestOutcome::Limit::kNone;
  EXPECT_THAT(ledger.Take("a", 100, &limit), IsOk()) << "the connection's bound is whole again";
}

}  // namespace
}  // namespace facet::xds
