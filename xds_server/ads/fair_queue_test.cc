#include "xds_server/ads/fair_queue.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> PopAll(FairQueue<std::string>& queue) {
  std::vector<std::string> out;
  while (!queue.empty()) out.push_back(queue.Pop());
  return out;
}

TEST(FairQueueTest, KeepsArrivalOrderWithinAKey) {
  FairQueue<std::string> queue;
  queue.Push("a", "a1");
  queue.Push("a", "a2");
  queue.Push("a", "a3");
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_THAT(PopAll(queue), ElementsAre("a1", "a2", "a3"));
  EXPECT_EQ(queue.size(), 0u);
}

TEST(FairQueueTest, ServesKeysInTurnWhateverTheirItemsQueued) {
  FairQueue<std::string> queue;
  for (int i = 1; i <= 4; ++i) queue.Push("many", "m" + std::to_string(i));
  queue.Push("one", "o1");
  queue.Push("two", "t1");
  queue.Push("two", "t2");
  EXPECT_THAT(PopAll(queue), ElementsAre("m1", "o1", "t1", "m2", "t2", "m3", "m4"));
}

TEST(FairQueueTest, AKeyThatArrivesLaterWaitsForOneItemOfEachKeyAhead) {
  FairQueue<std::string> queue;
  for (int i = 1; i <= 100; ++i) queue.Push("many", "m" + std::to_string(i));
  EXPECT_EQ(queue.Pop(), "m1");
  queue.Push("late", "l1");
  EXPECT_EQ(queue.Pop(), "m2");
  EXPECT_EQ(queue.Pop(), "l1");
  EXPECT_EQ(queue.Pop(), "m3");
  EXPECT_EQ(queue.size(), 97u);
}

TEST(FairQueueTest, AKeyEmptiedAndPushedAgainGoesToTheBackOfTheTurns) {
  FairQueue<std::string> queue;
  queue.Push("a", "a1");
  queue.Push("b", "b1");
  queue.Push("b", "b2");
  EXPECT_EQ(queue.Pop(), "a1");
  queue.Push("c", "c1");
  queue.Push("a", "a2");
  EXPECT_THAT(PopAll(queue), ElementsAre("b1", "c1", "a2", "b2"));
}

TEST(FairQueueTest, HoldsMoveOnlyItems) {
  FairQueue<std::unique_ptr<int>> queue;
  queue.Push("a", std::make_unique<int>(1));
  queue.Push("b", std::make_unique<int>(2));
  EXPECT_EQ(*queue.Pop(), 1);
  EXPECT_EQ(*queue.Pop(), 2);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace facet::xds
