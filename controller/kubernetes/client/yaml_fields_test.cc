#include "controller/kubernetes/client/yaml_fields.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller::kube {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A JSON object whose `data` holds `count` numbers.
std::string ObjectWithNumbers(const std::string& name, size_t count) {
  std::string numbers;
  numbers.reserve(2 * count);
  for (size_t i = 0; i < count; ++i) absl::StrAppend(&numbers, i == 0 ? "" : ",", "0");
  return absl::StrCat(R"({"metadata":{"name":")", name, R"("},"data":[)", numbers, "]}");
}

// A JSON object whose `data` nests lists so that the object is `depth` levels deep.
std::string ObjectWithDepth(const std::string& name, int depth) {
  return absl::StrCat(R"({"metadata":{"name":")", name, R"("},"data":)",
                      std::string(depth - 1, '['), std::string(depth - 1, ']'), "}");
}

std::string ListOf(const std::vector<std::string>& items) {
  std::string out = R"({"kind":"XdsResourceList","metadata":{"resourceVersion":"7"},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) absl::StrAppend(&out, i == 0 ? "" : ",", items[i]);
  return out + "]}";
}

TEST(ParseDocumentTextTest, ReadsAnObjectAndTheFirstDocument) {
  absl::StatusOr<YAML::Node> object = ParseDocumentText(R"({"metadata":{"name":"a"}})", "GET x");
  ASSERT_THAT(object, IsOk());
  EXPECT_EQ(StringAt(*object, {"metadata", "name"}), "a");
  absl::StatusOr<YAML::Node> empty = ParseDocumentText("", "GET x");
  ASSERT_THAT(empty, IsOk());
  EXPECT_TRUE(empty->IsNull());
  EXPECT_THAT(ParseDocumentText("a: 1\n---\nb: 2\n", "x"), IsOk());
}

TEST(ParseDocumentTextTest, RefusesAnObjectWithTooManyNodes) {
  // The object's map, two keys, metadata's map and name, the list: 6 nodes.
  EXPECT_THAT(ParseDocumentText(ObjectWithNumbers("a", 250'000 - 7), "GET x"), IsOk());
  EXPECT_THAT(
      ParseDocumentText(ObjectWithNumbers("a", 250'000 - 5), "GET x"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("GET x: line 1, column "), HasSubstr("more than 250000 YAML nodes"),
                     HasSubstr("that is the limit per object"))));
}

TEST(ParseDocumentTextTest, RefusesAnObjectNestedTooDeep) {
  EXPECT_THAT(ParseDocumentText(ObjectWithDepth("a", 100), "GET x"), IsOk());
  EXPECT_THAT(ParseDocumentText(ObjectWithDepth("a", 101), "GET x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("GET x: line 1, column 132: "),
                             HasSubstr("nested more than 100 levels deep (the limit)"))));
}

TEST(ParseDocumentTextTest, RefusesAnObjectWithTooManyBytes) {
  const std::string large = absl::StrCat(R"({"data":")", std::string(16 << 20, 'x'), R"("})");
  EXPECT_THAT(ParseDocumentText(large, "GET x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("GET x: line 1, column 9: "),
                             HasSubstr("more than 16777216 bytes of keys and values"))));
}

TEST(ParseDocumentTextTest, RefusesDuplicateKeysAndNamesLongKeys) {
  EXPECT_THAT(ParseDocumentText(R"({"a":1,"a":2})", "GET x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("GET x: line 1, column 8: duplicate key \"a\"")));
  // YAML takes a key of a flow map as an implicit key only up to 1,024 characters.
  EXPECT_THAT(ParseDocumentText(absl::StrCat(R"({")", std::string(1100, 'k'), R"(":1})"), "GET x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("GET x: line 1, column "), HasSubstr("not valid YAML"),
                             HasSubstr("a map key is longer than 1024 characters"))));
}

TEST(ParseDocumentTextTest, BoundsAListPerItemNotAsOneObject) {
  // 3,000 items of 100 nodes: more than one object may hold, as a list.
  std::vector<std::string> items;
  for (int i = 0; i < 3000; ++i) items.push_back(ObjectWithNumbers(absl::StrCat("o", i), 94));
  const std::string list = ListOf(items);
  EXPECT_THAT(ParseDocumentText(list, "LIST x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 250000")));
  absl::StatusOr<YAML::Node> parsed = ParseDocumentText(list, "LIST x", ListLimits());
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(Field(*parsed, "items").size(), 3000u);

  // Each item has the bounds of one object: depth counted from the item.
  EXPECT_THAT(ParseDocumentText(ListOf({ObjectWithDepth("a", 100)}), "LIST x", ListLimits()),
              IsOk());
  EXPECT_THAT(
      ParseDocumentText(ListOf({ObjectWithDepth("a", 2), ObjectWithDepth("b", 101)}), "LIST x",
                        ListLimits()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("LIST x: line 1, column "),
                     HasSubstr("items[1] has lists and maps nested more than 100 levels deep "
                               "(the limit per object)"))));
  EXPECT_THAT(
      ParseDocumentText(ListOf({ObjectWithNumbers("a", 3), ObjectWithNumbers("b", 250'000)}),
                        "LIST x", ListLimits()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("items[1] has more than 250000 YAML nodes"),
                     HasSubstr("the limit per object"))));
}

TEST(ParseDocumentTextTest, BoundsTheObjectOfAWatchEvent) {
  auto event = [](const std::string& object) {
    return absl::StrCat(R"({"type":"MODIFIED","object":)", object, "}");
  };
  EXPECT_THAT(
      ParseDocumentText(event(ObjectWithDepth("a", 100)), "watch event", WatchEventLimits()),
      IsOk());
  EXPECT_THAT(ParseDocumentText(event(ObjectWithNumbers("a", 250'000 - 7)), "watch event",
                                WatchEventLimits()),
              IsOk());
  EXPECT_THAT(
      ParseDocumentText(event(ObjectWithDepth("a", 101)), "watch event", WatchEventLimits()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("watch event: line 1, column "),
                     HasSubstr("object has lists and maps nested more than 100 levels "
                               "deep (the limit per object)"))));
  EXPECT_THAT(ParseDocumentText(event(ObjectWithNumbers("a", 250'000 - 5)), "watch event",
                                WatchEventLimits()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("object has more than 250000 YAML nodes")));
}

}  // namespace
}  // namespace facet::controller::kube
