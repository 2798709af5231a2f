#include "xds_server/json/yaml_json.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::json {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;

std::string Convert(const std::string& yaml) {
  absl::StatusOr<std::string> json = YamlToJson(YAML::Load(yaml), "doc");
  EXPECT_THAT(json, IsOk());
  return json.ok() ? *json : "";
}

TEST(YamlToJsonTest, PlainScalarsFollowTheCoreSchema) {
  EXPECT_EQ(Convert("{a: 80, b: \"80\", c: true, d: 'true', e: yes, f: null, g: ~, h: 1.5}"),
            R"({"a":80,"b":"80","c":true,"d":"true","e":"yes","f":null,"g":null,"h":1.5})");
}

TEST(YamlToJsonTest, NormalisesNumbersJsonDoesNotAllow) {
  EXPECT_EQ(Convert("[+7, 007, 0x1f, 0o17, .5, .inf, -.inf, .nan]"),
            R"([7,7,31,15,0.5,"Infinity","-Infinity","NaN"])");
}

TEST(YamlToJsonTest, EscapesStrings) {
  EXPECT_EQ(Convert("s: \"a\\\"b\\\\c\\n\\u0001\""), R"({"s":"a\"b\\c\n\u0001"})");
}

TEST(YamlToJsonTest, AcceptsJsonInput) {
  EXPECT_EQ(Convert(R"({"a": [1, "x", {"b": false}]})"), R"({"a":[1,"x",{"b":false}]})");
}

TEST(YamlToJsonTest, RejectsNonStringKeysWithPath) {
  EXPECT_THAT(YamlToJson(YAML::Load("a: {[1, 2]: x}"), "doc"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("doc.a: map keys must be strings")));
}

TEST(ClassifyScalarTest, QuotedScalarsAreStrings) {
  EXPECT_EQ(ClassifyScalar(YAML::Load("\"1\"")), ScalarKind::kString);
  EXPECT_EQ(ClassifyScalar(YAML::Load("1")), ScalarKind::kInteger);
  EXPECT_EQ(ClassifyScalar(YAML::Load("1e3")), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyScalar(YAML::Load("FALSE")), ScalarKind::kBool);
  EXPECT_EQ(ClassifyScalar(YAML::Load("v1")), ScalarKind::kString);
}

}  // namespace
}  // namespace facet::json
