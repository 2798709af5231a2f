#include "xds_server/json/yaml_json.h"

#include <string>

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

TEST(YamlToJsonTest, NamesThePathWhereTheTextGrewTooLong) {
  EXPECT_THAT(YamlToJson(YAML::Load("a: [x, {b: [1, 2, 3]}, {c: long text here}]"), "doc", 18),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("doc.a[1].b[2]: longer")));
}

TEST(YamlToJsonTest, NamesThePathNestedTooDeep) {
  std::string yaml;
  for (int i = 0; i < 101; ++i) yaml += "{k: ";
  yaml += "x";
  for (int i = 0; i < 101; ++i) yaml += "}";
  std::string path = "doc";
  for (int i = 0; i < 101; ++i) path += ".k";
  EXPECT_THAT(YamlToJson(YAML::Load(yaml), "doc"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path + ": nested more than 100 levels deep")));
}

TEST(YamlToJsonTest, ReadsAliasesAsOftenAsTheyAppear) {
  EXPECT_EQ(Convert("a: &x {b: [1]}\nc: *x\n"), R"({"a":{"b":[1]},"c":{"b":[1]}})");
}

TEST(ChildTest, FindsAKeyOrGivesAnUndefinedNode) {
  const YAML::Node map = YAML::Load("{a: 1, 'b': {c: 2}}");
  EXPECT_EQ(Child(map, "a").Scalar(), "1");
  EXPECT_EQ(Child(Child(map, "b"), "c").Scalar(), "2");
  EXPECT_FALSE(Child(map, "z").IsDefined());
  EXPECT_FALSE(Child(YAML::Load("[a]"), "a").IsDefined());
  EXPECT_FALSE(Child(Child(map, "z"), "a").IsDefined());
}

// Writes what WalkYaml reports, as Describe below writes what Node reports.
class Describer : public YamlVisitor {
 public:
  std::string out;
  void Undefined() override { out += "U "; }
  void Null() override { out += "N "; }
  void Scalar(const std::string& tag, const std::string& text) override {
    out += "S<" + tag + ">" + text + " ";
  }
  void List(size_t size) override { out += "L" + std::to_string(size) + " "; }
  void Map(size_t size) override { out += "M" + std::to_string(size) + " "; }
};

void Describe(const YAML::Node& node, std::string* out) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined: *out += "U "; return;
    case YAML::NodeType::Null: *out += "N "; return;
    case YAML::NodeType::Scalar: *out += "S<" + node.Tag() + ">" + node.Scalar() + " "; return;
    case YAML::NodeType::Sequence:
      *out += "L" + std::to_string(node.size()) + " ";
      for (const YAML::Node& item : node) Describe(item, out);
      return;
    case YAML::NodeType::Map:
      *out += "M" + std::to_string(node.size()) + " ";
      for (const auto& entry : node) {
        Describe(entry.first, out);
        Describe(entry.second, out);
      }
      return;
  }
}

TEST(WalkYamlTest, ReportsWhatTheNodeReports) {
  for (const char* yaml : {"a: [1, '2', !!str 3, ~, {b: c}]\nd: &x [e]\nf: *x\n", "x", "~",
                           "[]", "{}"}) {
    const YAML::Node node = YAML::Load(yaml);
    Describer walked;
    WalkYaml(node, walked);
    std::string described;
    Describe(node, &described);
    EXPECT_EQ(walked.out, described) << yaml;
  }
  Describer undefined;
  WalkYaml(YAML::Node(YAML::NodeType::Undefined), undefined);
  EXPECT_EQ(undefined.out, "U ");
}

TEST(ClassifyScalarTest, QuotedScalarsAreStrings) {
  EXPECT_EQ(ClassifyScalar(YAML::Load("\"1\"")), ScalarKind::kString);
  EXPECT_EQ(ClassifyScalar(YAML::Load("1")), ScalarKind::kInteger);
  EXPECT_EQ(ClassifyScalar(YAML::Load("1e3")), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyScalar(YAML::Load("FALSE")), ScalarKind::kBool);
  EXPECT_EQ(ClassifyScalar(YAML::Load("v1")), ScalarKind::kString);
  EXPECT_EQ(ClassifyScalar(YAML::Load("-.inf")), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyScalar(YAML::Load(".5")), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyScalar(YAML::Load("+7")), ScalarKind::kInteger);
  EXPECT_EQ(ClassifyScalar(YAML::Load(".nan")), ScalarKind::kFloat);
  EXPECT_EQ(ClassifyScalar(YAML::Load("nan")), ScalarKind::kString);
}

}  // namespace
}  // namespace facet::json
