// Tests for the test API server's JSON helpers: what they add to
// nlohmann::json (number reading, bounded nesting, Status errors, lookups
// that tolerate malformed objects, the apiserver's JSON patch errors).
#include "test/kube_api_server/json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::testing::HasSubstr;

Json Parse(const std::string& text) {
  absl::StatusOr<Json> json = ParseJson(text);
  EXPECT_THAT(json, IsOk()) << text;
  return json.ok() ? *json : Json();
}

TEST(JsonTest, DumpSortsKeysAndKeepsInt64) {
  EXPECT_EQ(
      Dump(Parse(R"({"b":[1,2.5,"\u00e9\n"],"a":{"big":9007199254740993,"t":true,"n":null}})")),
      "{\"a\":{\"big\":9007199254740993,\"n\":null,\"t\":true},\"b\":[1,2.5,\"\xc3\xa9\\n\"]}");
}

TEST(JsonTest, ReadsIntegralNumbersAsIntegersAsTheApiserverStoresThem) {
  Json value = Parse(R"({"a":1.0,"b":1e2,"c":2.5,"d":-3.0})");
  EXPECT_TRUE(value["a"].is_number_integer());
  EXPECT_EQ(Dump(value), R"({"a":1,"b":100,"c":2.5,"d":-3})");
}

TEST(JsonTest, RejectsMalformedAndTooDeepInputWithInvalidArgument) {
  EXPECT_THAT(ParseJson("{\"a\":}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at byte 6")));
  EXPECT_THAT(ParseJson(""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseJson(std::string(100, '[') + std::string(100, ']')), IsOk());
  EXPECT_THAT(ParseJson(std::string(1000, '[') + std::string(1000, ']')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting")));
}

TEST(JsonTest, ParsesYamlWithCoreSchemaScalars) {
  absl::StatusOr<Json> yaml = ParseYaml("name: \"007\"\nport: 80\nratio: 0.5\non: true\n");
  ASSERT_THAT(yaml, IsOk());
  EXPECT_EQ(Dump(*yaml), R"({"name":"007","on":true,"port":80,"ratio":0.5})");
  EXPECT_THAT(ParseYaml("a: [1, 2"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(JsonTest, DumpWritesInvalidUtf8AsReplacementCharacters) {
  EXPECT_EQ(Dump(Json("a\xff")), "\"a\xef\xbf\xbd\"");
}

TEST(JsonTest, LookupsToleratesMissingMembersAndOtherTypes) {
  Json value = Parse(R"({"metadata":{"name":"a","labels":"x"},"items":[1]})");
  EXPECT_EQ(GetString(value, {"metadata", "name"}), "a");
  EXPECT_EQ(GetString(value, {"metadata", "missing"}), "");
  EXPECT_EQ(GetString(value, {"items"}), "");
  EXPECT_EQ(FindPath(value, {"metadata", "labels", "k"}), nullptr);
  EXPECT_EQ(Find(*Find(value, "items"), "0"), nullptr);
  ASSERT_NE(Find(value, "items"), nullptr);
  EXPECT_EQ(Dump(*Find(value, "items")), "[1]");
}

TEST(JsonTest, MemberTurnsAnythingButAnObjectIntoOne) {
  Json value = Parse(R"({"metadata":"x"})");
  Member(value["metadata"], "name") = "a";
  Member(value["metadata"], "namespace") = "demo";
  EXPECT_EQ(Dump(value), R"({"metadata":{"name":"a","namespace":"demo"}})");
}

TEST(JsonTest, JsonPatchAppliesRfc6902Operations) {
  absl::StatusOr<Json> patched = ApplyJsonPatch(
      Parse(R"({"a":[1,2],"b":{"c":1}})"),
      Parse(R"([{"op":"add","path":"/a/1","value":9},{"op":"remove","path":"/b/c"},)"
            R"({"op":"copy","from":"/a/0","path":"/d"},{"op":"move","from":"/d","path":"/e"},)"
            R"({"op":"test","path":"/e","value":1},{"op":"replace","path":"/a/0","value":0}])"));
  ASSERT_THAT(patched, IsOk());
  EXPECT_EQ(Dump(*patched), R"({"a":[0,9,2],"b":{},"e":1})");
  EXPECT_THAT(ApplyJsonPatch(Parse(R"({"a":1})"), Json()), IsOk());
}

TEST(JsonTest, JsonPatchThatDoesNotApplyIsFailedPrecondition) {
  const Json target = Parse(R"({"a":[1],"b":"x"})");
  for (const char* patch :
       {R"([{"op":"test","path":"/b","value":"y"}])", R"([{"op":"remove","path":"/x"}])",
        R"([{"op":"replace","path":"/a/5","value":1}])",
        R"([{"op":"add","path":"/x/y","value":1}])", R"([{"op":"frobnicate","path":"/a"}])"}) {
    EXPECT_THAT(ApplyJsonPatch(target, Parse(patch)),
                StatusIs(absl::StatusCode::kFailedPrecondition))
        << patch;
  }
}

TEST(JsonTest, JsonPatchThatIsNotAnArrayOfObjectsGetsTheDecodersMessage) {
  const Json target = Parse(R"({"a":1})");
  EXPECT_THAT(ApplyJsonPatch(target, Parse(R"({"op":"add"})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "json: cannot unmarshal object into Go value of type jsonpatch.Patch"));
  EXPECT_THAT(ApplyJsonPatch(target, Parse("[1]")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "json: cannot unmarshal number into Go value of type jsonpatch.Operation"));
}

}  // namespace
}  // namespace facet::testing
