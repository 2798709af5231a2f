#include "controller/gateway/front_end/reverse_index.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ReverseIndexTest, AnswersFromBothSides) {
  ReverseIndex<std::string, std::string> index;
  index.Set("route-a", {"svc-1", "svc-2"});
  index.Set("route-b", {"svc-2"});
  EXPECT_THAT(index.ValuesOf("svc-1"), ElementsAre("route-a"));
  EXPECT_THAT(index.ValuesOf("svc-2"), ElementsAre("route-a", "route-b"));
  EXPECT_THAT(index.ValuesOf("svc-3"), IsEmpty());
  EXPECT_THAT(index.KeysOf("route-a"), ElementsAre("svc-1", "svc-2"));
  EXPECT_THAT(index.KeysOf("route-c"), IsEmpty());
}

TEST(ReverseIndexTest, SetLeavesOldKeysAndForgetsEmptyOnes) {
  ReverseIndex<std::string, std::string> index;
  index.Set("route-a", {"svc-1", "svc-2"});
  index.Set("route-a", {"svc-2", "svc-3"});
  EXPECT_THAT(index.ValuesOf("svc-1"), IsEmpty());
  EXPECT_THAT(index.ValuesOf("svc-3"), ElementsAre("route-a"));
  EXPECT_EQ(index.key_count(), 2u);
  index.Erase("route-a");
  EXPECT_THAT(index.KeysOf("route-a"), IsEmpty());
  EXPECT_EQ(index.key_count(), 0u);
  index.Erase("route-a");  // Unknown: a no-op.
  EXPECT_EQ(index.key_count(), 0u);
}

}  // namespace
}  // namespace facet::controller::gateway
