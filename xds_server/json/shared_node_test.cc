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
  SharedNode empty;
  empty = empty;  // Self-assignment keeps the node.
  EXPECT_TRUE(empty.IsNull());
  node = SharedNode();
  EXPECT_TRUE(node.IsNull());
  EXPECT_EQ(ScalarAt(map, "v"), "x");
}

}  // namespace
}  // namespace facet::json
