#include "xds_server/json/yaml_reader.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/json/hostile_yaml.h"
#include "xds_server/json/yaml_json.h"

namespace facet::json {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

YamlReadError ErrorOf(const std::string& text, const YamlLimits& limits = {}) {
  YamlDocuments read = ReadYamlDocuments(text, limits);
  EXPECT_TRUE(read.error.has_value()) << text.substr(0, 200);
  EXPECT_TRUE(read.documents.empty());
  return read.error.value_or(YamlReadError{});
}

TEST(ReadYamlDocumentsTest, ReadsDocumentsWithPositionsAndTags) {
  YamlDocuments read = ReadYamlDocuments(
      "a: 1\nb: \"2\"\n---\n---\nkind: List\nitems:\n- x: 1\n-   {y: 2}\n- [3]\n");
  ASSERT_FALSE(read.error.has_value()) << read.error->message;
  ASSERT_EQ(read.documents.size(), 3u);
  EXPECT_EQ(YamlToJson(read.documents[0].node, "").value(), R"({"a":1,"b":"2"})");
  EXPECT_EQ(read.documents[0].position.line, 1);
  EXPECT_TRUE(read.documents[1].node.IsNull());
  EXPECT_EQ(read.documents[2].position.line, 5);
  ASSERT_EQ(read.documents[2].item_positions.size(), 3u);
  EXPECT_EQ(read.documents[2].item_positions[0].line, 7);
  EXPECT_EQ(read.documents[2].item_positions[1].line, 8);
  EXPECT_EQ(read.documents[2].item_positions[1].column, 5);
  EXPECT_EQ(read.documents[2].item_positions[2].line, 9);
  EXPECT_EQ(YamlToJson(read.documents[2].node, "").value(),
            R"({"kind":"List","items":[{"x":1},{"y":2},[3]]})");
}

TEST(ReadYamlDocumentsTest, ReadsJson) {
  YamlDocuments read = ReadYamlDocuments(R"({"a": [1, "x", null, {"b": true}]})");
  ASSERT_FALSE(read.error.has_value());
  EXPECT_EQ(YamlToJson(read.documents[0].node, "").value(), R"({"a":[1,"x",null,{"b":true}]})");
}

TEST(ReadYamlDocumentsTest, AliasesWithinTheBoundsRepeatTheirAnchor) {
  YamlDocuments read = ReadYamlDocuments("base: &b {port: 80, tags: [x]}\ncopy: *b\nname: &n n1\nalso: *n\n");
  ASSERT_FALSE(read.error.has_value()) << read.error->message;
  EXPECT_EQ(YamlToJson(read.documents[0].node, "").value(),
            R"({"base":{"port":80,"tags":["x"]},"copy":{"port":80,"tags":["x"]},"name":"n1","also":"n1"})");
}

TEST(ReadYamlDocumentsTest, RejectsTheAliasBombBeforeExpandingIt) {
  const std::string bomb = AliasBomb();
  ASSERT_LT(bomb.size(), 900u);
  const YamlReadError error = ErrorOf(bomb);
  EXPECT_THAT(error.message, AllOf(HasSubstr("more than 250000 YAML nodes"), HasSubstr("alias *"),
                                   HasSubstr("limit per file")));
  EXPECT_GE(error.position.line, 6);
}

TEST(ReadYamlDocumentsTest, CountsAliasedBytes) {
  const std::string text =
      absl::StrCat("a: &a \"", std::string(1 << 20, 'x'), "\"\nb: [", "*a,*a,*a,*a,*a,*a,*a,*a,",
                   "*a,*a,*a,*a,*a,*a,*a,*a]\n");
  EXPECT_THAT(ErrorOf(text).message,
              AllOf(HasSubstr("more than 16777216 bytes of keys and values"), HasSubstr("*a")));
}

TEST(ReadYamlDocumentsTest, RejectsAnAliasInsideItsAnchor) {
  EXPECT_THAT(ErrorOf("a: &x [1, *x]\n").message, HasSubstr("alias *x is inside the node"));
}

TEST(ReadYamlDocumentsTest, RejectsDuplicateKeysNamingBothPositions) {
  const YamlReadError error = ErrorOf("spec:\n  name: a\n  type: route\n  name: b\n");
  EXPECT_EQ(error.position.line, 4);
  EXPECT_EQ(error.position.column, 3);
  EXPECT_THAT(error.message, HasSubstr("duplicate key \"name\" in a map (first at 2:3)"));
  // Keys are compared as strings, as they are in JSON.
  EXPECT_THAT(ErrorOf("{80: a, \"80\": b}").message, HasSubstr("duplicate key \"80\""));
  // The same key in different maps is fine.
  EXPECT_FALSE(ReadYamlDocuments("a: {name: x}\nb: {name: y}\n").error.has_value());
}

TEST(ReadYamlDocumentsTest, RejectsKeysThatAreNotStrings) {
  EXPECT_THAT(ErrorOf("? [a]\n: 1\n").message, HasSubstr("map keys must be strings, found a list"));
  EXPECT_THAT(ErrorOf("a: &k x\n*k : 1\n").message, HasSubstr("found an alias"));
}

TEST(ReadYamlDocumentsTest, BoundsAMillionListElements) {
  std::string text;
  text.reserve(4'000'000);
  for (int i = 0; i < 1'000'000; ++i) text.append("- 1\n");
  const YamlReadError error = ErrorOf(text);
  EXPECT_THAT(error.message, HasSubstr("more than 250000 YAML nodes"));
  EXPECT_EQ(error.position.line, 250000);
}

TEST(ReadYamlDocumentsTest, BoundsNestingDepth) {
  const std::string deep = std::string(101, '[') + std::string(101, ']');
  EXPECT_THAT(ErrorOf(deep).message, HasSubstr("nested more than 100 levels deep"));
  const std::string ok = std::string(100, '[') + std::string(100, ']');
  EXPECT_FALSE(ReadYamlDocuments(ok).error.has_value());
}

TEST(ReadYamlDocumentsTest, NestingFarPastTheBoundGetsTheBoundsMessage) {
  // Deep enough for yaml-cpp's own recursion guard ("bad file") to throw
  // after the bound was passed.
  for (int depth : {450, 1000, 5000}) {
    const std::string flow = std::string(depth, '[') + std::string(depth, ']');
    EXPECT_THAT(ErrorOf(flow).message, HasSubstr("nested more than 100 levels deep")) << depth;
    std::string block;
    for (int i = 0; i < depth; ++i) block.append(std::string(i, ' ')).append("-\n");
    EXPECT_THAT(ErrorOf(block).message, HasSubstr("nested more than 100 levels deep")) << depth;
  }
}

TEST(ReadYamlDocumentsTest, InvalidYamlHasAPosition) {
  const YamlReadError error = ErrorOf("a: 1\nb: [1, 2\n");
  EXPECT_THAT(error.message, HasSubstr("not valid YAML"));
  EXPECT_GT(error.position.line, 1);
}

// True when `text` has no byte below 0x20 and no DEL.
bool HasNoControlBytes(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
  }
  return true;
}

TEST(ReadYamlDocumentsTest, EscapesTheTextsBytesThatAMessageQuotes) {
  // yaml-cpp quotes the byte after a backslash it does not know.
  const std::string nul_escape = ErrorOf(std::string("a: \"\\\0\"\n", 8)).message;
  EXPECT_THAT(nul_escape, HasSubstr("unknown escape character: \\x00"));
  EXPECT_TRUE(HasNoControlBytes(nul_escape)) << nul_escape;
  const std::string esc_escape = ErrorOf("a: \"\\\x1b\"\n").message;
  EXPECT_THAT(esc_escape, HasSubstr("unknown escape character: \\x1b"));
  EXPECT_TRUE(HasNoControlBytes(esc_escape)) << esc_escape;
  // A duplicate key is quoted in the message.
  const std::string key = ErrorOf("\"k\\0\\e\": 1\n\"k\\0\\e\": 2\n").message;
  EXPECT_THAT(key, HasSubstr("duplicate key \"k\\x00\\x1b\""));
  EXPECT_TRUE(HasNoControlBytes(key)) << key;
}

// yaml-cpp reads a "," outside a flow collection as an endless run of empty
// documents at one position (each a null node): without the progress check
// each such text costs the node limit, 250,000 nodes, and seconds.
TEST(ReadYamlDocumentsTest, StopsWhereTheParserMakesNoProgress) {
  for (const std::string text : {",", "'a',", "[a],\n"}) {
    const YamlReadError error = ErrorOf(text);
    EXPECT_EQ(error.message, "not valid YAML: the parser makes no progress here") << text;
    EXPECT_GE(error.position.line, 1) << text;
  }
}

TEST(ReadYamlDocumentsTest, LimitsApplyToTheWholeText) {
  YamlLimits limits;
  limits.max_nodes = 5;
  EXPECT_FALSE(ReadYamlDocuments("[1, 2]\n---\n[3]\n", limits).error.has_value());
  EXPECT_THAT(ErrorOf("[1, 2]\n---\n[3, 4]\n", limits).message, HasSubstr("more than 5"));
}

YamlLimits ItemLimits() {
  YamlLimits limits;
  limits.max_nodes = 1000;
  limits.unit = "response body";
  limits.advice = "";
  limits.object_paths = {{"items", kEachElement}, {"object"}};
  limits.per_object.max_nodes = 6;
  limits.per_object.max_scalar_bytes = 10;
  limits.per_object.max_depth = 2;
  return limits;
}

TEST(ReadYamlDocumentsTest, BoundsEachObjectSeparately) {
  // Each item is 5 nodes (a map, two keys and two values): together more
  // than the per-object limit, each within it.
  const std::string list = R"({"kind": "List", "items": [{"a": 1, "b": [2]}, {"a": 3, "b": 4},
                                                          {"c": 5}]})";
  EXPECT_FALSE(ReadYamlDocuments(list, ItemLimits()).error.has_value());
  EXPECT_FALSE(ReadYamlDocuments(R"({"type": "ADDED", "object": {"a": [1, 2]}})", ItemLimits())
                   .error.has_value());
}

TEST(ReadYamlDocumentsTest, NamesTheObjectOverItsNodeLimit) {
  const YamlReadError error =
      ErrorOf(R"({"items": [{"a": 1}, {"a": 1, "b": 2, "c": 3}]})", ItemLimits());
  EXPECT_THAT(error.message,
              AllOf(HasSubstr("items[1] has more than 6 YAML nodes"),
                    HasSubstr("the limit per object")));
  EXPECT_EQ(error.position.line, 1);
  EXPECT_EQ(error.position.column, 44);  // At the seventh node, the value 3.
}

TEST(ReadYamlDocumentsTest, NamesTheObjectOverItsByteAndDepthLimits) {
  EXPECT_THAT(ErrorOf(R"({"object": {"name": "0123456789"}})", ItemLimits()).message,
              HasSubstr("object has more than 10 bytes of keys and values"));
  EXPECT_THAT(ErrorOf(R"({"items": [[1], [[[2]]]]})", ItemLimits()).message,
              HasSubstr("items[1] has lists and maps nested more than 2 levels deep (the limit "
                        "per object)"));
  // An alias counts as the nodes it repeats inside the object.
  EXPECT_THAT(ErrorOf("anchors: &x [1, 2, 3]\nitems: [[*x, *x]]\n", ItemLimits()).message,
              HasSubstr("items[0] has more than 6 YAML nodes"));
  // Outside the object paths only the limits of the whole text apply.
  EXPECT_FALSE(ReadYamlDocuments(R"({"metadata": [[[[1, 2, 3, 4, 5, 6, 7]]]]})", ItemLimits())
                   .error.has_value());
}

TEST(ReadYamlDocumentsTest, KeepsWhatWasReadBeforeTheProblem) {
  YamlDocuments read =
      ReadYamlDocuments(R"({"id": "u1", "object": {"name": "0123456789"}, "after": 1})",
                        ItemLimits());
  ASSERT_TRUE(read.error.has_value());
  EXPECT_TRUE(read.documents.empty());
  ASSERT_TRUE(read.partial.IsMap());
  EXPECT_EQ(Child(read.partial, "id").Scalar(), "u1");
  EXPECT_FALSE(Child(read.partial, "after").IsDefined());
}

TEST(ReadYamlDocumentsTest, NamesTheUnitOfTheWholeTextLimit) {
  YamlLimits limits = ItemLimits();
  limits.max_nodes = 8;
  EXPECT_THAT(ErrorOf(R"({"items": [{"a": 1}, {"a": 1}]})", limits).message,
              AllOf(HasSubstr("more than 8 YAML nodes"),
                    HasSubstr("that is the limit per response body")));
}

}  // namespace
}  // namespace facet::json

namespace facet::json {
namespace {

// Describes a document node by node: type, tag, style and scalar, so that
// two readings can be compared exactly.
void Describe(const YAML::Node& node, std::string* out) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
      out->append("U");
      return;
    case YAML::NodeType::Null:
      absl::StrAppend(out, "N<", node.Tag(), ">");
      return;
    case YAML::NodeType::Scalar:
      absl::StrAppend(out, "S<", node.Tag(), ">", node.Scalar().size(), ":", node.Scalar());
      return;
    case YAML::NodeType::Sequence:
      absl::StrAppend(out, "L<", node.Tag(), ",", static_cast<int>(node.Style()), ">[");
      for (const YAML::Node& item : node) Describe(item, out);
      out->append("]");
      return;
    case YAML::NodeType::Map:
      absl::StrAppend(out, "M<", node.Tag(), ",", static_cast<int>(node.Style()), ">{");
      for (const auto& entry : node) {
        Describe(entry.first, out);
        out->append("=");
        Describe(entry.second, out);
      }
      out->append("}");
      return;
  }
}

std::string Describe(const YamlDocuments& read) {
  std::string out;
  if (read.error.has_value()) {
    absl::StrAppend(&out, "error ", read.error->position.line, ":", read.error->position.column,
                    " ", read.error->message);
  }
  for (const YamlDocument& document : read.documents) {
    absl::StrAppend(&out, "\n@", document.position.line, ":", document.position.column, " ");
    Describe(document.node, &out);
    for (const YamlPosition& item : document.item_positions) {
      absl::StrAppend(&out, " item@", item.line, ":", item.column);
    }
  }
  return out;
}

TEST(ReadYamlDocumentsTest, LibyamlReadsWhatYamlCppReads) {
  // The fast parser must give the very documents yaml-cpp gives: tags of
  // untagged plain ("?") and quoted ("!") scalars, nulls, styles, anchors,
  // positions, `kind: List` item positions.
  const std::vector<std::string> texts = {
      "a: 1\nb: \"2\"\n---\n---\nkind: List\nitems:\n- x: 1\n-   {y: 2}\n- [3]\n",
      R"({"a": [1, "x", null, {"b": true}], "c": "", "d": ~, "e": Null})",
      "base: &b {port: 80, tags: [x]}\ncopy: *b\nname: &n n1\nalso: *n\nn: &n n2\nagain: *n\n",
      "plain: null\nempty:\nquoted: 'null'\ntagged: !!str 80\nint: !!int \"7\"\nlocal: !mine x\n"
      "verbatim: !<tag:yaml.org,2002:str> y\nbare: ! z\nseq: !!seq [a]\n",
      "literal: |\n  line one\n  line two\nfolded: >-\n  folded\n  text\nkeep: |+\n  k\n\n",
      "# comment only\n",
      "",
      "- a\n- - b\n  - c\n- {d: [e, {f: g}]}\n-\n- 'single ''quoted'''\n- \"double \\t \\u00e9\"\n",
      "%YAML 1.2\n---\nkey: value\n...\n---\nsecond: doc\n",
      "key:\n- indentless\n- sequence\nother: {flow: map, with: [nested, list]}\n",
      "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: r, namespace: load}\n"
      "spec:\n  type: route\n  variants:\n  - resource: {\"name\": \"r\", \"virtual_hosts\": "
      "[{\"name\": \"v\", \"domains\": [\"*\"], \"routes\": [{\"match\": {\"prefix\": \"\"}, "
      "\"route\": {\"cluster\": \"c\"}}]}]}\n",
      "a: 0x1F\nb: 0o17\nc: .inf\nd: -.NaN\ne: 1e3\nf: true\ng: False\nh: yes\n",
      "? complex\n: key\n",
      "dup: 1\ndup: 2\n",
  };
  for (const std::string& text : texts) {
    EXPECT_EQ(Describe(ReadYamlDocuments(text)),
              Describe(internal::ReadYamlDocumentsWithYamlCpp(text)))
        << text;
  }
}

TEST(ReadYamlDocumentsTest, BuildsTheNodesYamlLoadAllBuilds) {
  // The documents are built with yaml-cpp's detail API: the same nodes,
  // tags, styles and scalars as yaml-cpp's own loader gives.
  const std::vector<std::string> texts = {
      "a: 1\nb: \"2\"\n---\n---\nkind: List\nitems:\n- x: 1\n-   {y: 2}\n- [3]\n",
      R"({"a": [1, "x", null, {"b": true}], "c": "", "d": ~, "e": Null})",
      "base: &b {port: 80, tags: [x]}\ncopy: *b\nname: &n n1\nalso: *n\n",
      "tagged: !!str 80\nlocal: !mine x\nseq: !!seq [a]\nmap: !!map {k: v}\n",
      "literal: |\n  line one\nfolded: >-\n  folded\n  text\nempty:\n",
      "- a\n- - b\n  - c\n- {d: [e, {f: g}]}\n-\n- 'single ''quoted'''\n",
  };
  for (const std::string& text : texts) {
    std::string read;
    for (const YamlDocument& document : ReadYamlDocuments(text).documents) {
      read.append("\n");
      Describe(document.node, &read);
    }
    std::string loaded;
    for (const YAML::Node& node : YAML::LoadAll(text)) {
      loaded.append("\n");
      Describe(node, &loaded);
    }
    EXPECT_EQ(read, loaded) << text;
  }
}

TEST(ReadYamlDocumentsTest, MapKeysOfOneTextShareOneNode) {
  const YamlDocuments read =
      ReadYamlDocuments("name: a\nspec: {name: b}\n---\nname: c\n---\n'name': d\n");
  ASSERT_FALSE(read.error.has_value());
  ASSERT_EQ(read.documents.size(), 3u);
  std::vector<YAML::Node> keys;
  for (const YAML::Node& map : {read.documents[0].node, read.documents[0].node["spec"],
                                read.documents[1].node, read.documents[2].node}) {
    for (const auto& entry : map) keys.push_back(entry.first);
  }
  ASSERT_EQ(keys.size(), 5u);  // name, spec; name; name; 'name'
  EXPECT_TRUE(keys[0].is(keys[2]));
  EXPECT_TRUE(keys[0].is(keys[3]));
  EXPECT_FALSE(keys[0].is(keys[4]));  // Quoted: another tag.
  EXPECT_EQ(keys[4].Tag(), "!");
  // Values are not shared, and every document reads as written.
  EXPECT_EQ(read.documents[0].node["spec"]["name"].Scalar(), "b");
  EXPECT_EQ(read.documents[1].node["name"].Scalar(), "c");
  EXPECT_EQ(read.documents[2].node["name"].Scalar(), "d");
}

TEST(ReadYamlDocumentsTest, ADocumentOutlivesTheOthersOfItsText) {
  YAML::Node kept;
  {
    YamlDocuments read = ReadYamlDocuments("a: {b: [1, 2]}\n---\nb: 3\n");
    ASSERT_EQ(read.documents.size(), 2u);
    kept = read.documents[1].node;
  }
  EXPECT_EQ(kept["b"].Scalar(), "3");
}

TEST(ReadYamlDocumentsTest, TextsLibyamlRefusesGetYamlCppsAnswer) {
  // Invalid YAML, invalid UTF-8 and an alias to no anchor: the answer
  // (error or documents) is yaml-cpp's, as before libyaml read first.
  const std::vector<std::string> texts = {
      "a: [1, 2\n",
      "a: \"\\q\"\n",
      "name: \"caf\xe9\"\n",
      "name: caf\xff\n",
      "a: *nowhere\n",
      "a: b: c\n",
      "x\n,\n",
      "\t- tab\n",
  };
  for (const std::string& text : texts) {
    EXPECT_EQ(Describe(ReadYamlDocuments(text)),
              Describe(internal::ReadYamlDocumentsWithYamlCpp(text)))
        << text;
  }
}

}  // namespace
}  // namespace facet::json
