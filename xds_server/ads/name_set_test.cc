#include "xds_server/ads/name_set.h"

#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Names(const NameSet& set) { return {set.begin(), set.end()}; }

TEST(NameSetTest, AnEmptySetHoldsNothing) {
  NameSet set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.size(), 0u);
  EXPECT_EQ(set.count("a"), 0u);
  EXPECT_TRUE(set.begin() == set.end());
  EXPECT_EQ(set.erase("a"), 0u);
}

TEST(NameSetTest, OneNameThenMoreKeepTheirOrderOnce) {
  NameSet set;
  set.insert("b");
  EXPECT_EQ(set.size(), 1u);
  EXPECT_THAT(Names(set), ElementsAre("b"));
  set.insert("b");
  EXPECT_EQ(set.size(), 1u);
  set.insert("c");
  set.insert("a");
  set.insert("a");
  EXPECT_EQ(set.size(), 3u);
  EXPECT_THAT(Names(set), ElementsAre("a", "b", "c"));
  EXPECT_EQ(set.count("b"), 1u);
  EXPECT_EQ(set.count("d"), 0u);
  EXPECT_EQ(std::distance(set.begin(), set.end()), 3);
}

TEST(NameSetTest, TheEmptyStringIsANameLikeAnyOther) {
  NameSet set;
  set.insert("");
  EXPECT_FALSE(set.empty());
  EXPECT_EQ(set.count(""), 1u);
  set.insert("x");
  EXPECT_THAT(Names(set), ElementsAre("", "x"));
  EXPECT_EQ(set.erase(""), 1u);
  EXPECT_THAT(Names(set), ElementsAre("x"));
}

TEST(NameSetTest, ErasingTheLastNameEmptiesTheSetForReuse) {
  NameSet set;
  set.insert("a");
  EXPECT_EQ(set.erase("b"), 0u);
  EXPECT_EQ(set.erase("a"), 1u);
  EXPECT_TRUE(set.empty());
  set.insert("a");
  set.insert("b");
  EXPECT_EQ(set.erase("a"), 1u);
  EXPECT_THAT(Names(set), ElementsAre("b"));
  EXPECT_EQ(set.erase("b"), 1u);
  EXPECT_TRUE(set.empty());
  set.insert("c");
  EXPECT_THAT(Names(set), ElementsAre("c"));
}

TEST(NameSetTest, EraseIfKeepsWhatThePredicateRefuses) {
  NameSet one;
  one.insert("a");
  one.EraseIf([](const std::string& name) { return name == "b"; });
  EXPECT_THAT(Names(one), ElementsAre("a"));
  one.EraseIf([](const std::string& name) { return name == "a"; });
  EXPECT_TRUE(one.empty());

  NameSet many;
  for (const char* name : {"a", "b", "c"}) many.insert(name);
  many.EraseIf([](const std::string& name) { return name != "b"; });
  EXPECT_THAT(Names(many), ElementsAre("b"));
  many.EraseIf([](const std::string&) { return true; });
  EXPECT_TRUE(many.empty());
}

TEST(NameSetTest, MergeMovesEveryNameAndEmptiesTheOther) {
  NameSet into;
  NameSet from;
  from.insert("b");
  into.merge(from);  // Into an empty set: taken whole.
  EXPECT_THAT(Names(into), ElementsAre("b"));
  EXPECT_TRUE(from.empty());

  from.insert("a");
  from.insert("b");
  from.insert("c");
  into.merge(from);
  EXPECT_THAT(Names(into), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(from.empty());

  NameSet nothing;
  into.merge(nothing);
  EXPECT_EQ(into.size(), 3u);
  into.merge(into);
  EXPECT_EQ(into.size(), 3u);

  NameSet one;
  one.insert("b");
  NameSet same;
  same.insert("b");
  one.merge(same);  // One name into the same one name.
  EXPECT_THAT(Names(one), ElementsAre("b"));
  EXPECT_TRUE(same.empty());
  NameSet tree;
  tree.insert("a");
  tree.insert("c");
  one.merge(tree);  // A tree into one name.
  EXPECT_THAT(Names(one), ElementsAre("a", "b", "c"));
  EXPECT_TRUE(tree.empty());
}

TEST(NameSetTest, CopiesAreIndependentAndMovesLeaveTheSourceEmpty) {
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"a"}, std::vector<std::string>{"a", "b"}}) {
    NameSet set;
    for (const std::string& name : names) set.insert(name);
    NameSet copy(set);
    copy.insert("z");
    EXPECT_EQ(Names(set), names);
    NameSet assigned;
    assigned = set;
    set.clear();
    EXPECT_EQ(Names(assigned), names);
    NameSet moved(std::move(assigned));
    EXPECT_TRUE(assigned.empty());  // A moved-from set is empty.
    EXPECT_EQ(Names(moved), names);
  }
  NameSet empty;
  NameSet copy(empty);
  EXPECT_TRUE(copy.empty());
}

TEST(NameSetTest, IteratorsStepOverTheOneNameAndOverTheTree) {
  NameSet set;
  set.insert("a");
  NameSet::const_iterator it = set.begin();
  EXPECT_EQ(*it, "a");
  EXPECT_EQ(it->size(), 1u);
  EXPECT_TRUE(it++ == set.begin());
  EXPECT_TRUE(it == set.end());
  set.insert("b");
  it = set.begin();
  EXPECT_EQ(*++it, "b");
  EXPECT_TRUE(++it == set.end());
  EXPECT_THAT(Names(NameSet()), IsEmpty());
}

}  // namespace
}  // namespace facet::xds
