#include "xds_server/json/shared_node.h"

#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace facet::json {
namespace {

// A struct as the watch cache and the Gateway model declare them: every
// special member defaulted.
struct Held {
  std::string key;
  SharedNode node;
};
static_assert(std::is_nothrow_move_constructible_v<Held>);
static_assert(std::is_nothrow_move_assignable_v<Held>);
static_assert(!std::is_assignable_v<SharedNode&, int>);
static_assert(!std::is_assignable_v<SharedNode&, const char*>);
// Reading a missing key through a non-const SharedNode does not insert it.
static_assert(std::is_same_v<decltype(std::declval<SharedNode&>()["k"]), const YAML::Node>);

std::string ScalarAt(const YAML::Node& map, const char* key) {
  const YAML::Node& read = map;
  return read[key].as<std::string>();
}

TEST(SharedNodeTest, EveryAssignmentRebindsAndLeavesTheTreeItReferredToAlone) {
  const YAML::Node first = YAML::Load("{v: first}");
  const YAML::Node second = YAML::Load("{v: second}");
  SharedNode node = first;

  SharedNode copy_source = second;
  node = copy_source;  // Copy assignment.
  EXPECT_EQ(ScalarAt(first, "v"), "first");
  EXPECT_EQ(ScalarAt(node, "v"), "second");

  node = first;  // From a YAML::Node.
  EXPECT_EQ(ScalarAt(second, "v"), "second");
  EXPECT_EQ(ScalarAt(node, "v"), "first");

  node = SharedNode(second);  // Move assignment.
  EXPECT_EQ(ScalarAt(first, "v"), "first");
  EXPECT_EQ(ScalarAt(node, "v"), "second");
  EXPECT_TRUE(node.is(second));
}

TEST(SharedNodeTest, AStructReplacedInAMapLeavesACopyTakenBeforeAlone) {
  std::map<std::string, Held> pending;
  pending["a"] = Held{"a", YAML::Load("{v: old}")};
  const Held taken = pending["a"];  // What a reader took and reads unlocked.

  pending["a"] = Held{"a", YAML::Load("{v: new}")};
  Held replacement{"a", YAML::Load("{v: newer}")};
  pending["a"] = replacement;

  EXPECT_EQ(ScalarAt(taken.node, "v"), "old");
  EXPECT_EQ(ScalarAt(pending["a"].node, "v"), "newer");
}

TEST(SharedNodeTest, ReadingLeavesTheSharedTreeAlone) {
  // YAML::Node's non-const operator[] turns a null node into a map to look
  // a key up; a SharedNode's reads as a const node does.
  const YAML::Node null_tree = YAML::Load("~");
  SharedNode null_node = null_tree;
  EXPECT_FALSE(null_node["absent"].IsDefined());
  EXPECT_TRUE(null_tree.IsNull());
  const YAML::Node map_tree = YAML::Load("{v: x}");
  SharedNode map_node = map_tree;
  EXPECT_EQ(map_node["v"].as<std::string>(), "x");
  int keys = 0;
  for (const auto& entry : map_node) keys += entry.first.as<std::string>() == "v" ? 1 : 0;
  EXPECT_EQ(keys, 1);
}

TEST(SharedNodeTest, InvalidAndUndefinedNodesAreRebindableWithoutThrowing) {
  const YAML::Node map = YAML::Load("{v: x}");
  // A const node's operator[] on a missing key yields an invalid node, whose
  // Node::reset throws.
  const YAML::Node missing = map["absent"];
  SharedNode node = map;
  node = missing;
  EXPECT_FALSE(node.IsDefined());
  node = map;  // Rebinding an invalid node.
  EXPECT_EQ(ScalarAt(node, "v"), "x");
  // Self-assignment keeps the node, also one that alone holds its tree.
  SharedNode solo = YAML::Load("{v: alone}");
  const SharedNode& alias = solo;
  solo = alias;
  EXPECT_EQ(ScalarAt(solo, "v"), "alone");
  node = SharedNode();
  EXPECT_TRUE(node.IsNull());
  EXPECT_EQ(ScalarAt(map, "v"), "x");
}

}  // namespace
}  // namespace facet::json
