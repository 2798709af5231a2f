#include "xds_server/ads/response_budget.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/ads_stats.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A stream that writes a response of `bytes` once admitted, and notes when
// it was resumed.
class FakeStream final : public ResponseBudget::Waiter {
 public:
  FakeStream(ResponseBudget& budget, std::string name, std::string connection, bool reader,
             int64_t bytes, std::vector<std::string>* resumed)
      : budget_(budget),
        name_(std::move(name)),
        connection_(std::move(connection)),
        reader_(reader),
        bytes_(bytes),
        resumed_(resumed) {}

  // Writes if the budget admits it now; returns whether it did.
  bool TryWrite() {
    if (!budget_.Admit(*this, connection_, reader_)) return false;
    budget_.Add(bytes_);
    return true;
  }

  void Resume() override {
    resumed_->push_back(name_);
    EXPECT_TRUE(TryWrite()) << name_ << " was resumed without the budget to write";
  }

 private:
  ResponseBudget& budget_;
  const std::string name_;
  const std::string connection_;
  const bool reader_;
  const int64_t bytes_;
  std::vector<std::string>* const resumed_;
};

class ResponseBudgetTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeStream> Stream(const std::string& name, const std::string& connection,
                                     bool reader = true, int64_t bytes = 100) {
    return std::make_shared<FakeStream>(budget_, name, connection, reader, bytes, &resumed_);
  }

  AdsStatsCounter counter_;
  ResponseBudget budget_{/*budget_bytes=*/100, counter_};
  std::vector<std::string> resumed_;
};

TEST_F(ResponseBudgetTest, OneResponseIsAlwaysAllowedAndOthersWaitWhileTheBudgetIsSpent) {
  auto big = Stream("big", "c1", true, /*bytes=*/500);
  auto next = Stream("next", "c2");
  EXPECT_TRUE(big->TryWrite()) << "a response larger than the budget still goes out alone";
  EXPECT_FALSE(next->TryWrite());
  EXPECT_EQ(counter_.stats().responses_deferred, 1);
  EXPECT_EQ(budget_.in_flight(), 500);
  budget_.Release(500);
  EXPECT_THAT(resumed_, ElementsAre("next"));
  EXPECT_EQ(budget_.in_flight(), 100);
}

TEST_F(ResponseBudgetTest, ZeroIsUnlimited) {
  ResponseBudget unlimited(0, counter_);
  auto a = std::make_shared<FakeStream>(unlimited, "a", "c", true, 1 << 30, &resumed_);
  EXPECT_TRUE(a->TryWrite());
  EXPECT_TRUE(a->TryWrite());
  EXPECT_EQ(counter_.stats().responses_deferred, 0);
}

TEST_F(ResponseBudgetTest, ReadersAreResumedBeforeStreamsThatNeverCompletedAWrite) {
  auto first = Stream("first", "c0");
  ASSERT_TRUE(first->TryWrite());
  auto untried = Stream("untried", "c1", /*reader=*/false);
  auto reader = Stream("reader", "c2", /*reader=*/true);
  ASSERT_FALSE(untried->TryWrite());
  ASSERT_FALSE(reader->TryWrite());
  budget_.Release(100);
  EXPECT_THAT(resumed_, ElementsAre("reader"));
  budget_.Release(100);
  EXPECT_THAT(resumed_, ElementsAre("reader", "untried"));
}

TEST_F(ResponseBudgetTest, ConnectionsTakeTurnsHoweverManyStreamsEachHasWaiting) {
  auto first = Stream("first", "c0");
  ASSERT_TRUE(first->TryWrite());
  std::vector<std::shared_ptr<FakeStream>> streams = {Stream("a1", "a"), Stream("a2", "a"),
                                                      Stream("a3", "a"), Stream("b1", "b")};
  for (auto& stream : streams) ASSERT_FALSE(stream->TryWrite());
  for (int i = 0; i < 4; ++i) budget_.Release(100);
  EXPECT_THAT(resumed_, ElementsAre("a1", "b1", "a2", "a3"));
}

TEST_F(ResponseBudgetTest, ReleasedBytesResumeStreamsWhileTheBudgetLasts) {
  auto first = Stream("first", "c0", true, /*bytes=*/200);
  ASSERT_TRUE(first->TryWrite());
  std::vector<std::shared_ptr<FakeStream>> streams = {
      Stream("a", "a", true, 60), Stream("b", "b", true, 60), Stream("c", "c", true, 60)};
  for (auto& stream : streams) ASSERT_FALSE(stream->TryWrite());
  budget_.Release(200);
  // a (60 in flight) leaves room; b takes it to 120: c waits.
  EXPECT_THAT(resumed_, ElementsAre("a", "b"));
  budget_.Release(60);
  EXPECT_THAT(resumed_, ElementsAre("a", "b", "c"));
}

TEST_F(ResponseBudgetTest, ReportsTheBytesInFlight) {
  auto a = Stream("a", "a", true, 70);
  auto b = Stream("b", "b", true, 20);
  ASSERT_TRUE(a->TryWrite());
  ASSERT_TRUE(b->TryWrite());
  budget_.Release(70);
  EXPECT_THAT(resumed_, IsEmpty());
  const AdsStats stats = counter_.stats();
  EXPECT_EQ(stats.response_bytes_in_flight, 20);
  EXPECT_EQ(stats.response_bytes_in_flight_peak, 90);
}

}  // namespace
}  // namespace facet::xds
