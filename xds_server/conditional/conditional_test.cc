#include "xds_server/conditional/conditional.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/constraints/variant_set.h"

namespace facet::xds {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// TP2's example: one route only env=prod clients get, one only version=v1
// clients get, and a default route everyone gets.
constexpr char kTp2Routes[] = R"({
  "virtualHosts": [{
    "name": "greeter", "domains": ["greeter"],
    "routes": [
      {"name": "prod-only", "@when": {"env": "prod"},
       "match": {"prefix": "/prod"}, "route": {"cluster": "prod"}},
      {"name": "v1-only", "@when": {"version": "v1"},
       "match": {"prefix": "/v1"}, "route": {"cluster": "v1"}},
      {"name": "default", "match": {"prefix": ""}, "route": {"cluster": "default"}}
    ]
  }]
})";

std::vector<Constraint> Compiled(const CompiledResource& compiled) {
  std::vector<Constraint> out;
  for (const CompiledVariant& variant : compiled.variants) {
    absl::StatusOr<Constraint> c = Constraint::Compile(variant.constraints);
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok()) out.push_back(*c);
  }
  return out;
}

// Returns the route names the variant matching `params` serves; fails the
// test unless exactly one variant matches.
std::vector<std::string> RoutesFor(const CompiledResource& compiled, const ParameterSet& params) {
  const std::vector<Constraint> constraints = Compiled(compiled);
  std::vector<std::string> routes;
  int matching = 0;
  for (size_t i = 0; i < constraints.size(); ++i) {
    if (!constraints[i].Matches(params)) continue;
    ++matching;
    const YAML::Node& list = compiled.variants[i].resource["virtualHosts"][0]["routes"];
    for (size_t r = 0; r < list.size(); ++r) routes.push_back(list[r]["name"].Scalar());
  }
  EXPECT_EQ(matching, 1) << ParameterSetToString(params);
  return routes;
}

void ExpectValidVariantSet(const CompiledResource& compiled) {
  absl::StatusOr<VariantSetReport> report = CheckVariantSet(Compiled(compiled));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << "mismatches " << report->key_set_mismatches.size() << ", overlaps "
                            << report->overlaps.size() << ", gap " << report->gap.has_value();
}

std::string Errors(const CompiledResource& compiled) {
  std::vector<std::string> parts;
  for (const ConditionalError& e : compiled.errors) {
    parts.push_back(absl::StrCat(e.reason, " ", e.field, ": ", e.message));
  }
  return absl::StrJoin(parts, "\n");
}

TEST(CompileConditionsTest, Tp2ExampleCompilesToFourVariants) {
  CompiledResource compiled = CompileConditions(YAML::Load(kTp2Routes), 0, "routes");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  ASSERT_THAT(compiled.variants, SizeIs(4));
  ExpectValidVariantSet(compiled);
  // The first variant is the content with no condition holding.
  EXPECT_EQ(compiled.variants[0].label, "routes/0");
  EXPECT_EQ(Constraint::Compile(compiled.variants[0].constraints)->ToString(),
            "NOT env=prod AND NOT version=v1");
  EXPECT_THAT(compiled.variants[0].included, IsEmpty());

  const std::vector<std::string> prod = {"prod-only", "default"};
  const std::vector<std::string> v1 = {"v1-only", "default"};
  const std::vector<std::string> both = {"prod-only", "v1-only", "default"};
  const std::vector<std::string> neither = {"default"};
  for (const std::string env : {"prod", "test", "other"}) {
    for (const std::string version : {"v1", "v2", "other"}) {
      const bool is_prod = env == "prod";
      const bool is_v1 = version == "v1";
      EXPECT_EQ(RoutesFor(compiled, {{"env", env}, {"version", version}}),
                is_prod ? (is_v1 ? both : prod) : (is_v1 ? v1 : neither))
          << env << " " << version;
    }
  }
  // Clients without a key: an exact value never matches an absent key.
  EXPECT_EQ(RoutesFor(compiled, {}), neither);
  EXPECT_EQ(RoutesFor(compiled, {{"env", "prod"}}), prod);
  EXPECT_EQ(RoutesFor(compiled, {{"version", "v1"}}), v1);
  EXPECT_EQ(RoutesFor(compiled, {{"zone", "a"}}), neither);
}

TEST(CompileConditionsTest, ThirdConditionOnSameKeyGivesSixVariants) {
  YAML::Node resource = YAML::Load(kTp2Routes);
  YAML::Node extra = YAML::Load(
      R"({"name": "test-only", "@when": {"env": "test"}, "match": {"prefix": "/t"},
          "route": {"cluster": "test"}})");
  resource["virtualHosts"][0]["routes"].push_back(extra);
  CompiledResource compiled = CompileConditions(resource, 0, "routes");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  // env is prod, test or neither (env=prod AND env=test reaches no client),
  // times version v1 or not.
  EXPECT_THAT(compiled.variants, SizeIs(6));
  ExpectValidVariantSet(compiled);
  EXPECT_EQ(RoutesFor(compiled, {{"env", "test"}, {"version", "v1"}}),
            (std::vector<std::string>{"v1-only", "default", "test-only"}));
  EXPECT_EQ(RoutesFor(compiled, {{"env", "test"}}),
            (std::vector<std::string>{"default", "test-only"}));
}

TEST(CompileConditionsTest, ThirdIndependentConditionDoublesTheCount) {
  YAML::Node resource = YAML::Load(kTp2Routes);
  resource["virtualHosts"][0]["routes"].push_back(YAML::Load(
      R"({"name": "eu", "@when": {"region": {"exists": true}}, "match": {"prefix": "/eu"},
          "route": {"cluster": "eu"}})"));
  CompiledResource compiled = CompileConditions(resource, 0, "routes");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  EXPECT_THAT(compiled.variants, SizeIs(8));
  ExpectValidVariantSet(compiled);
}

TEST(CompileConditionsTest, NestedConditionsKeepOneKeySet) {
  CompiledResource compiled = CompileConditions(YAML::Load(R"({
    "virtualHosts": [
      {"name": "all", "domains": ["*"], "routes": [{"name": "a", "match": {"prefix": ""},
                                                  "route": {"cluster": "a"}}]},
      {"name": "prod", "domains": ["prod"], "@when": {"env": "prod"},
       "routes": [
         {"name": "p1", "@when": {"version": "v1"}, "match": {"prefix": "/v1"},
          "route": {"cluster": "v1"}},
         {"name": "p", "match": {"prefix": ""}, "route": {"cluster": "p"}}]}
    ]})"),
                                                0, "nested");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  // version matters only for prod clients: 3 contents, not 4.
  ASSERT_THAT(compiled.variants, SizeIs(3));
  ExpectValidVariantSet(compiled);
  for (const Constraint& c : Compiled(compiled)) {
    EXPECT_THAT(c.keys(), ElementsAre("env", "version")) << c.ToString();
  }
  // The inner element counts as included only with its enclosing one.
  EXPECT_THAT(compiled.variants[0].included, IsEmpty());
  ASSERT_THAT(compiled.origin->elements, SizeIs(2));
  EXPECT_EQ(compiled.origin->elements[0].path, "virtualHosts[1]");
  EXPECT_EQ(compiled.origin->elements[1].path, "virtualHosts[1].routes[0]");
  EXPECT_EQ(compiled.origin->elements[1].parent, 0);
}

TEST(CompileConditionsTest, ConditionsThatNeverChangeTheContentGiveOneUnconstrainedVariant) {
  CompiledResource compiled = CompileConditions(YAML::Load(R"({
    "virtualHosts": [{"name": "v", "domains": ["*"], "routes": [
      {"@when": {"env": "prod"}, "match": {"prefix": ""}, "route": {"cluster": "a"}},
      {"@when": {"env": {"not": "prod"}}, "match": {"prefix": ""}, "route": {"cluster": "a"}},
      {"@when": {"and": []}, "match": {"prefix": ""}, "route": {"cluster": "b"}}
    ]}]})"),
                                                0, "v");
  // {"and": []} is a parameter key named "and" whose value spec is invalid.
  ASSERT_THAT(compiled.errors, SizeIs(1));
  EXPECT_EQ(compiled.errors[0].field, "spec.variants[0].resource.virtualHosts[0].routes[2].@when");

  compiled = CompileConditions(YAML::Load(R"({
    "virtualHosts": [{"name": "v", "domains": ["*"], "routes": [
      {"@when": {"env": "prod"}, "match": {"prefix": ""}, "route": {"cluster": "a"}},
      {"@when": {"env": {"not": "prod"}}, "match": {"prefix": ""}, "route": {"cluster": "a"}}
    ]}]})"),
                               0, "v");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  ASSERT_THAT(compiled.variants, SizeIs(1));
  EXPECT_FALSE(compiled.variants[0].constraints.has_constraint() ||
               compiled.variants[0].constraints.has_and_constraints() ||
               compiled.variants[0].constraints.has_or_constraints() ||
               compiled.variants[0].constraints.has_not_constraints());
  EXPECT_FALSE(compiled.variants[0].resource["virtualHosts"][0]["routes"][0]["@when"]);
}

TEST(CompileConditionsTest, CanonicalConditionsAndStrippedOutput) {
  CompiledResource compiled = CompileConditions(YAML::Load(R"({
    "endpoints": [{"lbEndpoints": [
      {"@whenConstraints": {"constraint": {"key": "zone", "value": "a"}},
       "endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 1}}}},
      {"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 1}}}}
    ]}]})"),
                                                0, "eps");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  ASSERT_THAT(compiled.variants, SizeIs(2));
  EXPECT_EQ(Constraint::Compile(compiled.variants[1].constraints)->ToString(), "zone=a");
  EXPECT_EQ(compiled.variants[0].resource["endpoints"][0]["lbEndpoints"].size(), 1);
  EXPECT_EQ(compiled.variants[1].resource["endpoints"][0]["lbEndpoints"].size(), 2);
  EXPECT_FALSE(compiled.variants[1].resource["endpoints"][0]["lbEndpoints"][0]["@whenConstraints"]);
  EXPECT_THAT(compiled.variants[1].included, ElementsAre(0));
  EXPECT_EQ(compiled.origin->elements[0].condition_field, "@whenConstraints");
}

TEST(CompileConditionsTest, RejectsConditionsOutsideListElements) {
  CompiledResource compiled = CompileConditions(
      YAML::Load(R"({"@when": {"env": "prod"}, "virtualHosts": [{"name": "v",
                     "retryPolicy": {"@when": {"env": "prod"}}}]})"),
      2, "r");
  ASSERT_THAT(compiled.errors, SizeIs(2)) << Errors(compiled);
  EXPECT_EQ(compiled.errors[0].field, "spec.variants[2].resource.@when");
  EXPECT_THAT(compiled.errors[0].message, HasSubstr("the resource itself"));
  EXPECT_EQ(compiled.errors[1].field, "spec.variants[2].resource.virtualHosts[0].retryPolicy.@when");
  EXPECT_THAT(compiled.errors[1].message, HasSubstr("only an element of a list"));
  EXPECT_THAT(compiled.variants, IsEmpty());
}

TEST(CompileConditionsTest, RejectsBothForms) {
  CompiledResource compiled = CompileConditions(YAML::Load(R"({"routes": [
      {"@when": {"env": "prod"}, "@whenConstraints": {"constraint": {"key": "env", "value": "p"}}}
    ]})"),
                                                0, "r");
  ASSERT_THAT(compiled.errors, SizeIs(1));
  EXPECT_EQ(compiled.errors[0].field, "spec.variants[0].resource.routes[0]");
  EXPECT_THAT(compiled.errors[0].message, HasSubstr("both @when and @whenConstraints"));
}

TEST(CompileConditionsTest, BoundsDistinctConditions) {
  YAML::Node resource = YAML::Load("{routes: []}");
  for (int i = 0; i < 17; ++i) {
    YAML::Node route;
    route["@when"]["key"] = absl::StrCat("value-", i);
    route["name"] = absl::StrCat("route-", i);
    resource["routes"].push_back(route);
  }
  // The same condition again counts once.
  resource["routes"].push_back(resource["routes"][0]);
  CompiledResource compiled = CompileConditions(resource, 0, "r");
  ASSERT_THAT(compiled.errors, SizeIs(1));
  EXPECT_EQ(compiled.errors[0].reason, "TooComplex");
  EXPECT_EQ(compiled.errors[0].field, "spec.variants[0].resource.routes[16].@when");
  EXPECT_THAT(compiled.errors[0].message,
              HasSubstr("is the 17th distinct condition of this resource; the limit is 16"));

  resource["routes"].remove(16);
  compiled = CompileConditions(resource, 0, "r");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  // 16 values of one key: 17 contents (each value, and none of them).
  EXPECT_THAT(compiled.variants, SizeIs(17));
  ExpectValidVariantSet(compiled);
}

TEST(CompileConditionsTest, BoundsCellsWithAClearError) {
  YAML::Node resource = YAML::Load("{routes: []}");
  for (int i = 0; i < 4; ++i) {
    YAML::Node route;
    route["@when"][absl::StrCat("key-", i)] = "on";
    route["name"] = absl::StrCat("route-", i);
    resource["routes"].push_back(route);
  }
  ConditionalLimits limits;
  limits.max_cells = 8;
  CompiledResource compiled = CompileConditions(resource, 0, "r", limits);
  ASSERT_THAT(compiled.errors, SizeIs(1));
  EXPECT_EQ(compiled.errors[0].reason, "TooComplex");
  EXPECT_EQ(compiled.errors[0].field, "spec.variants[0].resource");
  EXPECT_THAT(compiled.errors[0].message, HasSubstr("more than 8 cells"));

  limits = ConditionalLimits();
  limits.max_variants = 10;
  compiled = CompileConditions(resource, 0, "r", limits);
  ASSERT_THAT(compiled.errors, SizeIs(1));
  EXPECT_THAT(compiled.errors[0].message, HasSubstr("more than 10 distinct contents"));

  limits = ConditionalLimits();
  compiled = CompileConditions(resource, 0, "r", limits);
  EXPECT_THAT(compiled.variants, SizeIs(16));
}

TEST(CompileConditionsTest, EqualContentsMergeAcrossCells) {
  // Stripped of their conditions the routes are equal, so only how many are
  // included matters: 5 contents from 16 cells.
  YAML::Node resource = YAML::Load("{routes: []}");
  for (int i = 0; i < 4; ++i) {
    YAML::Node route;
    route["@when"][absl::StrCat("key-", i)] = "on";
    resource["routes"].push_back(route);
  }
  CompiledResource compiled = CompileConditions(resource, 0, "r");
  ASSERT_THAT(compiled.errors, IsEmpty()) << Errors(compiled);
  EXPECT_THAT(compiled.variants, SizeIs(5));
  ExpectValidVariantSet(compiled);
}

TEST(LocateWrittenTest, MapsCompiledPathsToWrittenElements) {
  CompiledResource compiled = CompileConditions(YAML::Load(kTp2Routes), 0, "routes");
  ASSERT_THAT(compiled.variants, SizeIs(4));
  // Variant 1 (version=v1 only) leaves out the prod-only route.
  const CompiledVariant& v1 = compiled.variants[1];
  ASSERT_THAT(v1.included, ElementsAre(1));
  WrittenLocation at = LocateWritten(*compiled.origin, v1.included,
                                     "virtual_hosts[0].routes[0].route.cluster");
  EXPECT_EQ(at.path, "virtualHosts[0].routes[1].route.cluster");
  EXPECT_EQ(at.element, 1);
  EXPECT_EQ(at.below_element, "route.cluster");

  at = LocateWritten(*compiled.origin, v1.included, "virtual_hosts[0].routes[1].route.cluster");
  EXPECT_EQ(at.path, "virtualHosts[0].routes[2].route.cluster");
  EXPECT_EQ(at.element, -1);

  // Fields that were not written are kept as given.
  at = LocateWritten(*compiled.origin, v1.included, "virtual_hosts[0].routes[0].name2.x[3]");
  EXPECT_EQ(at.path, "virtualHosts[0].routes[1].name2.x[3]");
  EXPECT_EQ(at.below_element, "name2.x[3]");
}

TEST(FindConditionTest, FindsTheFirstCondition) {
  EXPECT_EQ(FindCondition(YAML::Load(kTp2Routes)), "virtualHosts[0].routes[0].@when");
  EXPECT_EQ(FindCondition(YAML::Load(R"({"a": [{"b": 1}]})")), std::nullopt);
  EXPECT_EQ(FindCondition(YAML::Load(R"({"@when": {env: prod}})")), "@when");
  // Later elements, deeper maps: the path names each step.
  EXPECT_EQ(FindCondition(YAML::Load(R"({"a": [{"b": 1}, {"c": [0, {"@whenConstraints": {}}]}]})")),
            "a[1].c[1].@whenConstraints");
  // A map's own keys come before those under its values.
  EXPECT_EQ(FindCondition(YAML::Load(R"({"a": {"@when": {}}, "@whenConstraints": {}})")),
            "@whenConstraints");
  // The first in document order, when several are under the values.
  EXPECT_EQ(FindCondition(YAML::Load(R"({"x": [{"@when": {}}], "y": {"@when": {}}})")),
            "x[0].@when");
}

}  // namespace
}  // namespace facet::xds
