// GRPCRoute parsing: the v1.4 standard CRD's defaults, bounds, patterns and
// CEL rules, unique rule names and the fields Facet does not support.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/gateway/model/gateway_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

GatewayObject ParseRoute(const std::string& spec) {
  return ParseGatewayObject(
      YAML::Load(absl::StrCat("apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\n"
                              "metadata: {name: greeter, namespace: demo}\nspec: ",
                              spec)),
      "route.yaml:1", "default");
}

const GrpcRoute& RouteOf(const GatewayObject& object) { return std::get<GrpcRoute>(object.spec); }

// "field: message" of each finding.
std::vector<std::string> Messages(const GatewayObject& object) {
  std::vector<std::string> out;
  for (const xds::Finding& f : object.findings) out.push_back(f.field + ": " + f.message);
  return out;
}

std::vector<std::string> Reasons(const GatewayObject& object) {
  std::vector<std::string> out;
  for (const xds::Finding& f : object.findings) out.push_back(f.reason);
  return out;
}

// A YAML flow list of `n` copies of `item`.
std::string Repeat(size_t n, const std::string& item) {
  return absl::StrCat("[", absl::StrJoin(std::vector<std::string>(n, item), ", "), "]");
}

// A flow list of `n` items made by `item(i)`.
template <typename F>
std::string ListOf(size_t n, F item) {
  std::vector<std::string> items;
  for (size_t i = 0; i < n; ++i) items.push_back(item(i));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

constexpr char kService[] = "{group: '', kind: Service, name: echo, port: 7070}";

TEST(GrpcRouteParserTest, ParsesTheMeshWeightExample) {
  const GatewayObject object = ParseRoute(R"(
  parentRefs: [{group: "", kind: Service, name: echo, port: 7070}]
  rules:
  - name: canary
    matches:
    - method: {service: grpc.testing.Echo, method: Echo}
      headers: [{name: x-canary, value: "true"}]
    backendRefs:
    - {name: echo-v1, port: 7070, weight: 70}
    - {name: echo-v2, namespace: other, port: 7070, weight: 30}
    - {name: echo-v3, port: 7070, weight: 0}
)");
  EXPECT_THAT(Messages(object), IsEmpty());
  EXPECT_EQ(object.ref.kind, kGrpcRouteKind);
  EXPECT_EQ(object.ref.ToString(), "demo/greeter");
  const GrpcRoute& route = RouteOf(object);
  ASSERT_EQ(route.parent_refs.size(), 1u);
  EXPECT_EQ(route.parent_refs[0].group, "");
  EXPECT_EQ(route.parent_refs[0].kind, "Service");
  EXPECT_THAT(route.parent_refs[0].port, Optional(7070));
  EXPECT_EQ(route.parent_refs[0].field, "spec.parentRefs[0]");
  ASSERT_EQ(route.rules.size(), 1u);
  const RouteRule& rule = route.rules[0];
  EXPECT_THAT(rule.name, Optional(std::string("canary")));
  EXPECT_FALSE(rule.has_errors);
  ASSERT_EQ(rule.matches.size(), 1u);
  ASSERT_TRUE(rule.matches[0].method.has_value());
  EXPECT_EQ(rule.matches[0].method->service, "grpc.testing.Echo");
  EXPECT_EQ(rule.matches[0].method->method, "Echo");
  EXPECT_EQ(rule.matches[0].field, "spec.rules[0].matches[0]");
  ASSERT_EQ(rule.matches[0].headers.size(), 1u);
  EXPECT_EQ(rule.matches[0].headers[0].value, "true");
  ASSERT_EQ(rule.backend_refs.size(), 3u);
  EXPECT_EQ(rule.backend_refs[0].weight, 70);
  EXPECT_EQ(rule.backend_refs[1].ref.namespace_, "other");
  EXPECT_EQ(rule.backend_refs[2].weight, 0);
  EXPECT_EQ(rule.backend_refs[2].ref.field, "spec.rules[0].backendRefs[2]");
}

TEST(GrpcRouteParserTest, DefaultsParentGroupToGateway) {
  const GrpcRoute route =
      RouteOf(ParseRoute("{parentRefs: [{name: echo}, {kind: Service, name: b}]}"));
  ASSERT_EQ(route.parent_refs.size(), 2u);
  EXPECT_EQ(route.parent_refs[0].group, "gateway.networking.k8s.io");
  EXPECT_EQ(route.parent_refs[0].kind, "Gateway");
  EXPECT_EQ(route.parent_refs[0].namespace_, "");
  EXPECT_FALSE(route.parent_refs[0].port.has_value());
  EXPECT_FALSE(route.parent_refs[0].section_name.has_value());
  // kind: Service without group "" is still in the Gateway API group.
  EXPECT_EQ(route.parent_refs[1].group, "gateway.networking.k8s.io");
}

TEST(GrpcRouteParserTest, DefaultsBackendRefToServiceWithWeightOne) {
  const GatewayObject object = ParseRoute("{rules: [{backendRefs: [{name: echo, port: 7070}]}]}");
  EXPECT_THAT(Messages(object), IsEmpty());
  const BackendRef& backend = RouteOf(object).rules[0].backend_refs[0];
  EXPECT_EQ(backend.ref.group, "");
  EXPECT_EQ(backend.ref.kind, "Service");
  EXPECT_EQ(backend.weight, 1);
  EXPECT_THAT(backend.ref.port, Optional(7070));
}

TEST(GrpcRouteParserTest, DefaultsMatchTypesToExact) {
  const GatewayObject object = ParseRoute(
      "{rules: [{matches: [{method: {service: a.B}, headers: [{name: x, value: y}]}]}]}");
  EXPECT_THAT(Messages(object), IsEmpty());
  const RouteMatch& match = RouteOf(object).rules[0].matches[0];
  EXPECT_EQ(match.method->type, MatchType::kExact);
  EXPECT_EQ(match.method->method, "");
  EXPECT_EQ(match.headers[0].type, MatchType::kExact);
}

TEST(GrpcRouteParserTest, ReadsRegularExpressionMatches) {
  const GatewayObject object = ParseRoute(R"({rules: [{matches: [
    {method: {type: RegularExpression, service: "grpc\\..*", method: "Echo.*"},
     headers: [{type: RegularExpression, name: env, value: "prod|staging"}]}]}]})");
  EXPECT_THAT(Messages(object), IsEmpty());
  const RouteMatch& match = RouteOf(object).rules[0].matches[0];
  EXPECT_EQ(match.method->type, MatchType::kRegularExpression);
  EXPECT_EQ(match.method->service, "grpc\\..*");
  EXPECT_EQ(match.headers[0].type, MatchType::kRegularExpression);
}

TEST(GrpcRouteParserTest, EmptySpecIsValid) {
  const GatewayObject object = ParseRoute("{}");
  EXPECT_THAT(Messages(object), IsEmpty());
  EXPECT_FALSE(object.has_errors());
  EXPECT_THAT(RouteOf(object).rules, IsEmpty());
}

TEST(GrpcRouteParserTest, RejectsUnknownFieldWithPath) {
  const GatewayObject object = ParseRoute(R"({parentRefs: [{name: a, prot: 1}], rules: [{
      matchs: [], matches: [{method: {service: a, verb: b}, header: []}],
      backendRefs: [{name: b, port: 1, wieght: 2}]}], hostname: x})");
  EXPECT_THAT(Messages(object),
              ::testing::UnorderedElementsAre(
                  AllOf(HasSubstr("spec.parentRefs[0].prot: unknown field"),
                        HasSubstr("did you mean \"port\"?")),
                  HasSubstr("spec.rules[0].matchs: unknown field"),
                  HasSubstr("spec.rules[0].matches[0].method.verb: unknown field"),
                  HasSubstr("spec.rules[0].matches[0].header: unknown field"),
                  HasSubstr("spec.rules[0].backendRefs[0].wieght: unknown field"),
                  HasSubstr("spec.hostname: unknown field")));
  EXPECT_TRUE(object.has_errors());
  EXPECT_TRUE(RouteOf(object).rules[0].has_errors);
}

TEST(GrpcRouteParserTest, RejectsMistypedFields) {
  EXPECT_THAT(
      Messages(ParseRoute("{rules: {name: a}, parentRefs: [{name: 5, port: http}]}")),
      ElementsAre(HasSubstr("spec.parentRefs[0].name: expected a string"),
                  HasSubstr("spec.parentRefs[0].port: expected an integer, found the string"),
                  HasSubstr("spec.rules: expected a list, found a map")));
  EXPECT_THAT(Messages(ParseRoute("[]")), ElementsAre("spec: expected a map, found a list"));
}

TEST(GrpcRouteParserTest, RequiresSpec) {
  const GatewayObject object =
      ParseGatewayObject(YAML::Load("{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, "
                                    "metadata: {name: r}}"),
                         "r.yaml:1", "default");
  EXPECT_THAT(Messages(object), ElementsAre("spec: is required"));
  EXPECT_TRUE(std::holds_alternative<GrpcRoute>(object.spec));
}

TEST(GrpcRouteParserTest, RejectsDuplicateRuleNames) {
  const GatewayObject object =
      ParseRoute("{rules: [{name: canary}, {name: stable}, {name: canary}, {}, {}]}");
  EXPECT_THAT(Messages(object),
              ElementsAre("spec.rules[2].name: \"canary\" is also the name of spec.rules[0]; "
                          "rule names must be unique within a route"));
  EXPECT_THAT(Reasons(object), ElementsAre("InvalidSpec"));
  const GrpcRoute& route = RouteOf(object);
  EXPECT_FALSE(route.rules[0].has_errors);
  EXPECT_TRUE(route.rules[2].has_errors);
  EXPECT_FALSE(route.rules[3].name.has_value());
}

TEST(GrpcRouteParserTest, RejectsRuleNamesThatAreNotSectionNames) {
  EXPECT_THAT(Messages(ParseRoute("{rules: [{name: Canary}, {name: ''}, {name: a.b-c}]}")),
              ElementsAre(HasSubstr("spec.rules[0].name: \"Canary\" does not match ^[a-z0-9]"),
                          "spec.rules[1].name: is empty"));
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: [{name: ", std::string(254, 'a'), "}]}"))),
              ElementsAre("spec.rules[0].name: is 254 characters long; at most 253 are allowed"));
}

TEST(GrpcRouteParserTest, RejectsTooManyRules) {
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: ", Repeat(16, "{}"), "}"))), IsEmpty());
  const GatewayObject object = ParseRoute(absl::StrCat("{rules: ", Repeat(17, "{}"), "}"));
  EXPECT_THAT(Messages(object),
              ElementsAre(HasSubstr("spec.rules: has 17 entries; at most 16 are allowed")));
  EXPECT_EQ(RouteOf(object).rules.size(), 16u);
}

TEST(GrpcRouteParserTest, RejectsTooManyMatches) {
  const std::string match = "{method: {service: a}}";
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: [{matches: ", Repeat(64, match), "}]}"))),
              IsEmpty());
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: [{matches: ", Repeat(65, match), "}]}"))),
              ElementsAre(HasSubstr("spec.rules[0].matches: has 65 entries; at most 64")));
  // 64 + 64 is the most a route may have; one more over all rules is not.
  const std::string full = absl::StrCat("{matches: ", Repeat(64, match), "}");
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: [", full, ", ", full, "]}"))), IsEmpty());
  EXPECT_THAT(Messages(ParseRoute(
                  absl::StrCat("{rules: [", full, ", ", full, ", {matches: [", match, "]}]}"))),
              ElementsAre("spec.rules: has 129 matches over all rules; at most 128 are allowed "
                          "in a route"));
}

TEST(GrpcRouteParserTest, RejectsTooManyParentRefs) {
  auto parents = [](size_t n) {
    return ListOf(n, [](size_t i) { return absl::StrCat("{name: p", i, "}"); });
  };
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{parentRefs: ", parents(32), "}"))), IsEmpty());
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{parentRefs: ", parents(33), "}"))),
              ElementsAre(HasSubstr("spec.parentRefs: has 33 entries; at most 32")));
}

TEST(GrpcRouteParserTest, RejectsSameParentWithoutDistinctSectionNames) {
  EXPECT_THAT(Messages(ParseRoute(
                  "{parentRefs: [{name: a, sectionName: grpc}, {name: a, sectionName: admin}, "
                  "{name: a, namespace: other}, {name: b}, {kind: Service, name: b}]}")),
              IsEmpty());
  EXPECT_THAT(Messages(ParseRoute("{parentRefs: [{name: a, sectionName: grpc}, {name: a}]}")),
              ElementsAre("spec.parentRefs[1]: sectionName must be specified when parentRefs "
                          "includes 2 or more references to the same parent (spec.parentRefs[0])"));
  EXPECT_THAT(Messages(ParseRoute("{parentRefs: [{name: a, sectionName: grpc}, "
                                  "{name: a, sectionName: grpc}]}")),
              ElementsAre(HasSubstr("spec.parentRefs[1]: sectionName must be unique")));
  // The standard CRD does not tell parents apart by port.
  EXPECT_THAT(Messages(ParseRoute("{parentRefs: [" + std::string(kService) +
                                  ", {group: '', "
                                  "kind: Service, name: echo, port: 8080}]}")),
              ElementsAre(HasSubstr("spec.parentRefs[1]: sectionName must be unique")));
}

TEST(GrpcRouteParserTest, RejectsBadParentRefFields) {
  EXPECT_THAT(Messages(ParseRoute("{parentRefs: [{group: Core, kind: 1Service, name: '', "
                                  "namespace: Demo, sectionName: Grpc, port: 0}, {port: 65536}, "
                                  "{name: x, port: 65535}]}")),
              ElementsAre(HasSubstr("spec.parentRefs[0].group: \"Core\" does not match"),
                          HasSubstr("spec.parentRefs[0].kind: \"1Service\" does not match"),
                          "spec.parentRefs[0].name: is empty",
                          HasSubstr("spec.parentRefs[0].namespace: \"Demo\" does not match"),
                          HasSubstr("spec.parentRefs[0].sectionName: \"Grpc\" does not match"),
                          "spec.parentRefs[0].port: 0 is not between 1 and 65535",
                          "spec.parentRefs[1].name: is required",
                          "spec.parentRefs[1].port: 65536 is not between 1 and 65535"));
}

TEST(GrpcRouteParserTest, RejectsTooManyOrInvalidHostnames) {
  const GatewayObject object = ParseRoute(
      "{hostnames: [a.example.com, '*.example.com', "
      "'a.*.com', EXAMPLE.com]}");
  EXPECT_THAT(Messages(object), ElementsAre(HasSubstr("spec.hostnames[2]: \"a.*.com\" does not"),
                                            HasSubstr("spec.hostnames[3]: \"EXAMPLE.com\"")));
  EXPECT_THAT(RouteOf(object).hostnames, ElementsAre("a.example.com", "*.example.com"));
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{hostnames: ", Repeat(17, "a.b"), "}"))),
              ElementsAre(HasSubstr("spec.hostnames: has 17 entries; at most 16")));
}

TEST(GrpcRouteParserTest, RejectsTooManyOrInvalidHeaderMatches) {
  auto headers = [](size_t n) {
    return ListOf(n, [](size_t i) { return absl::StrCat("{name: h", i, ", value: v}"); });
  };
  EXPECT_THAT(
      Messages(ParseRoute(absl::StrCat("{rules: [{matches: [{headers: ", headers(16), "}]}]}"))),
      IsEmpty());
  EXPECT_THAT(
      Messages(ParseRoute(absl::StrCat("{rules: [{matches: [{headers: ", headers(17), "}]}]}"))),
      ElementsAre(HasSubstr("spec.rules[0].matches[0].headers: has 17 entries; at most 16")));
  EXPECT_THAT(
      Messages(ParseRoute(absl::StrCat(
          "{rules: [{matches: [{headers: [{name: 'a b', value: v}, {name: ok, value: ''}, "
          "{name: ",
          std::string(257, 'h'), ", value: v}, {name: ok2, value: ", std::string(4097, 'v'),
          "}, {value: v}, {name: x}]}]}]}"))),
      ElementsAre(
          HasSubstr("spec.rules[0].matches[0].headers[0].name: \"a b\" does not match"),
          "spec.rules[0].matches[0].headers[1].value: is empty",
          "spec.rules[0].matches[0].headers[2].name: is 257 characters long; at most 256 are "
          "allowed",
          "spec.rules[0].matches[0].headers[3].value: is 4097 characters long; at most 4096 are "
          "allowed",
          "spec.rules[0].matches[0].headers[4].name: is required",
          "spec.rules[0].matches[0].headers[5].value: is required"));
}

TEST(GrpcRouteParserTest, HeaderValueLengthCountsCharactersNotBytes) {
  // 4096 two-byte characters: 8192 bytes, within the bound.
  std::string value;
  for (int i = 0; i < 4096; ++i) value += "\xc3\xa9";
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: [{matches: [{headers: [{name: x, value: \"",
                                               value, "\"}]}]}]}"))),
              IsEmpty());
}

TEST(GrpcRouteParserTest, RejectsRepeatedHeaderNameButKeepsCaseVariants) {
  // The CRD keys the list by name; names differing in case are the
  // translator's to resolve (the first wins).
  EXPECT_THAT(
      Messages(
          ParseRoute("{rules: [{matches: [{headers: [{name: x, value: a}, {name: X, value: b}, "
                     "{name: x, value: c}]}]}]}")),
      ElementsAre("spec.rules[0].matches[0].headers[2].name: \"x\" is also the name of "
                  "spec.rules[0].matches[0].headers[0]; names must be unique in this list"));
}

TEST(GrpcRouteParserTest, RejectsUnknownMatchTypesAsUnsupportedValue) {
  // Only that: the Exact patterns do not apply to a type that is not Exact.
  const GatewayObject object = ParseRoute(
      "{rules: [{matches: [{method: {type: Prefix, service: 'a/', method: 'b*'}, "
      "headers: [{type: Present, name: x, value: y}]}]}]}");
  EXPECT_THAT(Messages(object),
              ElementsAre(HasSubstr("spec.rules[0].matches[0].method.type: \"Prefix\" is not "
                                    "supported; expected one of Exact, RegularExpression"),
                          HasSubstr("spec.rules[0].matches[0].headers[0].type: \"Present\"")));
  EXPECT_THAT(Reasons(object), ElementsAre("UnsupportedValue", "UnsupportedValue"));
}

TEST(GrpcRouteParserTest, RequiresServiceOrMethodInAMethodMatch) {
  EXPECT_THAT(Messages(ParseRoute("{rules: [{matches: [{method: {type: Exact}}, {method: {}}, "
                                  "{method: {type: RegularExpression, service: '', method: ''}}, "
                                  "{method: {method: Get}}]}]}")),
              ElementsAre(HasSubstr("spec.rules[0].matches[0].method: set service or method"),
                          HasSubstr("spec.rules[0].matches[1].method: set service or method"),
                          HasSubstr("spec.rules[0].matches[2].method: set service or method")));
}

TEST(GrpcRouteParserTest, AnEmptyExactServiceOrMethodIsNotAGrpcName) {
  // The CRD's CEL rules apply whenever the key is present (has()), and ""
  // matches neither pattern.
  const GatewayObject object = ParseRoute(
      "{rules: [{matches: [{method: {service: '', method: Get}}, "
      "{method: {type: Exact, service: '', method: ''}}]}]}");
  EXPECT_THAT(Messages(object),
              ElementsAre(HasSubstr("spec.rules[0].matches[0].method.service: \"\" is not a gRPC "
                                    "service name"),
                          HasSubstr("spec.rules[0].matches[1].method.service: \"\" is not a gRPC "
                                    "service name"),
                          HasSubstr("spec.rules[0].matches[1].method.method: \"\" is not a gRPC "
                                    "method name")));
  EXPECT_THAT(Reasons(object), ElementsAre("InvalidSpec", "InvalidSpec", "InvalidSpec"));
}

TEST(GrpcRouteParserTest, RejectsExactNamesThatAreNotGrpcNames) {
  const GatewayObject object = ParseRoute(
      "{rules: [{matches: [{method: {service: .grpc.Echo_1, method: Echo_2}}, "
      "{method: {service: 'grpc/Echo', method: 'Echo.*'}}, {method: {service: 1a}}]}]}");
  EXPECT_THAT(
      Messages(object),
      ElementsAre(
          HasSubstr("spec.rules[0].matches[1].method.service: \"grpc/Echo\" is not a gRPC "
                    "service name (an Exact service must match "
                    "^(?i)\\.?[a-z_][a-z_0-9]*(\\.[a-z_][a-z_0-9]*)*$)"),
          HasSubstr("spec.rules[0].matches[1].method.method: \"Echo.*\" is not a gRPC method "
                    "name"),
          HasSubstr("spec.rules[0].matches[2].method.service: \"1a\" is not a gRPC service")));
  EXPECT_THAT(Reasons(object), ElementsAre("InvalidSpec", "InvalidSpec", "InvalidSpec"));
}

TEST(GrpcRouteParserTest, RejectsServiceAndMethodOver1024Characters) {
  const std::string long_name(1025, 'a');
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat(
                  "{rules: [{matches: [{method: {service: ", std::string(1024, 'a'), "}}]}]}"))),
              IsEmpty());
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat(
                  "{rules: [{matches: [{method: {type: RegularExpression, service: ", long_name,
                  ", method: ", long_name, "}}]}]}"))),
              ElementsAre(HasSubstr("method.service: is 1025 characters long; at most 1024"),
                          HasSubstr("method.method: is 1025 characters long; at most 1024")));
}

TEST(GrpcRouteParserTest, InvalidRe2IsUnsupportedValue) {
  const GatewayObject object = ParseRoute(
      "{rules: [{name: ok}, {matches: [{method: {type: RegularExpression, method: '('}, "
      "headers: [{type: RegularExpression, name: x, value: '[z-a]'}]}]}]}");
  EXPECT_THAT(
      Messages(object),
      ElementsAre(HasSubstr("spec.rules[1].matches[0].method.method: \"(\" is not an RE2 "
                            "regular expression: missing )"),
                  HasSubstr("spec.rules[1].matches[0].headers[0].value: \"[z-a]\" is not an RE2 "
                            "regular expression")));
  EXPECT_THAT(Reasons(object), ElementsAre("UnsupportedValue", "UnsupportedValue"));
  EXPECT_FALSE(RouteOf(object).rules[0].has_errors);
  EXPECT_TRUE(RouteOf(object).rules[1].has_errors);
}

TEST(GrpcRouteParserTest, RejectsTooManyBackendRefsAndBadWeights) {
  const std::string backend = "{name: b, port: 1}";
  EXPECT_THAT(
      Messages(ParseRoute(absl::StrCat("{rules: [{backendRefs: ", Repeat(16, backend), "}]}"))),
      IsEmpty());
  EXPECT_THAT(
      Messages(ParseRoute(absl::StrCat("{rules: [{backendRefs: ", Repeat(17, backend), "}]}"))),
      ElementsAre(HasSubstr("spec.rules[0].backendRefs: has 17 entries; at most 16")));
  EXPECT_THAT(Messages(ParseRoute("{rules: [{backendRefs: [{name: b, port: 1, weight: 1000000}, "
                                  "{name: b, port: 1, weight: 1000001}, "
                                  "{name: b, port: 1, weight: -1}]}]}")),
              ElementsAre("spec.rules[0].backendRefs[1].weight: 1000001 is not between 0 and "
                          "1000000",
                          "spec.rules[0].backendRefs[2].weight: -1 is not between 0 and 1000000"));
}

TEST(GrpcRouteParserTest, RequiresPortForServiceBackends) {
  EXPECT_THAT(Messages(ParseRoute("{rules: [{backendRefs: [{name: a}, {group: '', kind: Service, "
                                  "name: b}, {group: example.com, kind: Bucket, name: c}, "
                                  "{name: d, port: 70000}]}]}")),
              ElementsAre(HasSubstr("spec.rules[0].backendRefs[0].port: is required for a "
                                    "Service reference"),
                          HasSubstr("spec.rules[0].backendRefs[1].port: is required"),
                          "spec.rules[0].backendRefs[3].port: 70000 is not between 1 and 65535"));
}

TEST(GrpcRouteParserTest, KeepsFiltersAsTypesAndPaths) {
  const GatewayObject object = ParseRoute(R"({rules: [{
    filters: [
      {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: y}], remove: [z]}},
      {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: x, value: y}]}},
      {type: RequestMirror, requestMirror: {backendRef: {name: m, port: 1}, percent: 10}},
      {type: ExtensionRef, extensionRef: {group: example.com, kind: Fault, name: f}}],
    backendRefs: [{name: b, port: 1, filters: [{type: ExtensionRef,
                   extensionRef: {group: '', kind: ConfigMap, name: f}}]}]}]})");
  EXPECT_THAT(Messages(object), IsEmpty());
  const RouteRule& rule = RouteOf(object).rules[0];
  ASSERT_EQ(rule.filters.size(), 4u);
  EXPECT_EQ(rule.filters[0].type, "RequestHeaderModifier");
  EXPECT_EQ(rule.filters[2].type, "RequestMirror");
  EXPECT_EQ(rule.filters[3].field, "spec.rules[0].filters[3]");
  ASSERT_EQ(rule.backend_refs[0].filters.size(), 1u);
  EXPECT_EQ(rule.backend_refs[0].filters[0].field, "spec.rules[0].backendRefs[0].filters[0]");
}

TEST(GrpcRouteParserTest, RejectsFiltersTheCrdRefuses) {
  const GatewayObject object = ParseRoute(R"({rules: [{filters: [
      {type: RequestHeaderModifier},
      {type: RequestHeaderModifier, requestHeaderModifier: {}, extensionRef: {group: '', kind: K, name: n}},
      {type: URLRewrite},
      {type: RequestMirror, requestMirror: {backendRef: {name: m}, percent: 5, fraction: {numerator: 3, denominator: 2}}},
      {type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: a, value: b}, {name: a, value: c}], remove: [q, q]}},
      {type: ExtensionRef, extensionRef: {kind: K, name: n}}]}]})");
  EXPECT_THAT(
      Messages(object),
      ElementsAre(
          "spec.rules[0].filters[0].requestHeaderModifier: is required for type "
          "RequestHeaderModifier",
          "spec.rules[0].filters[1].extensionRef: must be unset unless type is ExtensionRef",
          "spec.rules[0].filters[1]: RequestHeaderModifier filter cannot be repeated (also "
          "spec.rules[0].filters[0])",
          HasSubstr("spec.rules[0].filters[2].type: \"URLRewrite\" is not supported"),
          HasSubstr("spec.rules[0].filters[3].requestMirror.backendRef.port: is required"),
          "spec.rules[0].filters[3].requestMirror.fraction: numerator must be less than or "
          "equal to denominator",
          "spec.rules[0].filters[3].requestMirror: set percent or fraction, not both",
          HasSubstr("spec.rules[0].filters[4].responseHeaderModifier.set[1].name: \"a\" is also "
                    "the name of spec.rules[0].filters[4].responseHeaderModifier.set[0]"),
          "spec.rules[0].filters[4].responseHeaderModifier.remove[1]: \"q\" is listed twice",
          "spec.rules[0].filters[5].extensionRef.group: is required"));
  EXPECT_THAT(Messages(ParseRoute(absl::StrCat("{rules: [{filters: ",
                                               Repeat(17,
                                                      "{type: ExtensionRef, extensionRef: "
                                                      "{group: '', kind: K, name: n}}"),
                                               "}]}"))),
              ElementsAre(HasSubstr("spec.rules[0].filters: has 17 entries; at most 16")));
}

TEST(GrpcRouteParserTest, SessionPersistenceIsKnownButUnsupported) {
  const GatewayObject object =
      ParseRoute("{rules: [{sessionPersistence: {sessionName: s, type: Cookie}}]}");
  EXPECT_THAT(Messages(object),
              ElementsAre(AllOf(HasSubstr("spec.rules[0].sessionPersistence: is an experimental "
                                          "field Facet does not support"),
                                ::testing::Not(HasSubstr("unknown field")))));
  EXPECT_THAT(Reasons(object), ElementsAre("UnsupportedValue"));
  EXPECT_TRUE(RouteOf(object).rules[0].session_persistence);
  EXPECT_TRUE(RouteOf(object).rules[0].has_errors);
}

TEST(GrpcRouteParserTest, UseDefaultGatewaysAllIsUnsupported) {
  EXPECT_THAT(Messages(ParseRoute("{useDefaultGateways: None}")), IsEmpty());
  const GatewayObject object = ParseRoute("{useDefaultGateways: All}");
  EXPECT_THAT(Messages(object),
              ElementsAre(HasSubstr("spec.useDefaultGateways: is an experimental field")));
  EXPECT_THAT(Reasons(object), ElementsAre("UnsupportedValue"));
}

}  // namespace
}  // namespace facet::controller::gateway
