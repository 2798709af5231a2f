// GRPCRoutes on a Service port: the RouteConfiguration (routes, order,
// actions, the trailing no-route) and each route's status for the parent.
// Every generated RouteConfiguration is built into a snapshot with the
// Listeners, Clusters and assignments of every Service port: it must be
// served without a finding.
#include "controller/gateway/translate/grpc_route.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "controller/gateway/translate/translate_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "re2/re2.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::BuildFindings;
using ::facet::controller::gateway::testing::Json;
using ::facet::controller::gateway::testing::ResourceJson;
using ::facet::controller::gateway::testing::Route;
using ::facet::controller::gateway::testing::Service;
using ::facet::controller::gateway::testing::World;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kEchoParent[] = "parentRefs: [{group: '', kind: Service, name: echo, port: 7070}]";

// Where gRPC sends a call with `path` and `headers` by `routes` (the first
// route that matches, gRFC A28): "<cluster>", "<a>:70,<b>:30", "abort <code>"
// (a route-level fault abort), or "none".
std::string Pick(const nlohmann::json& routes, const std::string& path,
                 const std::map<std::string, std::string>& headers = {}) {
  for (const nlohmann::json& route : routes) {
    const nlohmann::json& match = route["match"];
    bool matched = true;
    if (match.contains("path")) {
      matched = path == match["path"].get<std::string>();
    } else if (match.contains("prefix")) {
      matched = path.rfind(match["prefix"].get<std::string>(), 0) == 0;
    } else {
      matched = RE2::FullMatch(path, match["safe_regex"]["regex"].get<std::string>());
    }
    for (const nlohmann::json& header : match.value("headers", nlohmann::json::array())) {
      auto it = headers.find(header["name"].get<std::string>());
      if (it == headers.end()) {
        matched = false;
      } else if (header.contains("exact_match")) {
        matched = matched && it->second == header["exact_match"].get<std::string>();
      } else {
        matched = matched && RE2::FullMatch(it->second,
                                            header["safe_regex_match"]["regex"].get<std::string>());
      }
    }
    if (!matched) continue;
    if (route.contains("typed_per_filter_config")) {
      return absl::StrCat(
          "abort ",
          route["typed_per_filter_config"]["envoy.filters.http.fault"]["abort"]["grpc_status"]
              .get<int>());
    }
    if (route["route"].contains("cluster")) return route["route"]["cluster"].get<std::string>();
    std::vector<std::string> parts;
    for (const nlohmann::json& cluster : route["route"]["weighted_clusters"]["clusters"]) {
      parts.push_back(absl::StrCat(cluster["name"].get<std::string>(), ":",
                                   cluster["weight"].get<int>(),
                                   cluster.contains("typed_per_filter_config") ? " abort" : ""));
    }
    return absl::StrJoin(parts, ",");
  }
  return "none";
}

class GrpcRouteTest : public ::testing::Test {
 protected:
  GrpcRouteTest() {
    for (const char* name : {"echo", "echo-v1", "echo-v2", "echo-v3"}) {
      world_.Add(Service(name, "{ports: [{name: grpc, port: 7070}, {name: admin, port: 8080}]}"));
    }
    world_.Add(Service("far", "{ports: [{port: 7070}]}", "other"));
  }

  // Translates echo:7070 with `routes` attached by their parentRefs
  // (resolved as the front end would); checks the output builds cleanly.
  ParentTranslation Translate(const std::vector<const GatewayObject*>& routes, int port = 7070) {
    const GatewayObject& echo = world_.service("demo/echo");
    const ServicePort* service_port = nullptr;
    for (const ServicePort& p : std::get<ServiceInfo>(echo.spec).ports) {
      if (p.port == port) service_port = &p;
    }
    std::vector<AttachedRoute> attached;
    for (const GatewayObject* route : routes) {
      AttachedRoute& entry = attached.emplace_back();
      entry.route = route;
      const std::vector<ObjectReference>& parents = std::get<GrpcRoute>(route->spec).parent_refs;
      for (size_t i = 0; i < parents.size(); ++i) {
        const ParentResolution resolved =
            ResolveParentRef(route->ref.namespace_, parents[i], world_.Lookup());
        if (resolved.outcome == ParentResolution::Outcome::kAttached &&
            resolved.service == xds::ObjectRef{"Service", "demo", "echo"} &&
            std::count(resolved.ports.begin(), resolved.ports.end(), port) > 0) {
          entry.parent_refs.push_back(i);
        }
      }
      if (auto it = conditions_.find(route); it != conditions_.end()) {
        entry.conditions = &it->second;
      }
    }
    ParentTranslation out =
        TranslateParent(echo, *service_port, attached, world_.Lookup(), TranslateOptions());
    EXPECT_THAT(BuildFindings(WithEveryServicePort(out.route_configuration)), IsEmpty());
    return out;
  }

  // The routes of a translation's only virtual host.
  static nlohmann::json Routes(const ParentTranslation& translation) {
    const nlohmann::json config = ResourceJson(translation.route_configuration);
    EXPECT_THAT(config["virtual_hosts"], SizeIs(1));
    return config["virtual_hosts"][0]["routes"];
  }

  static std::vector<std::string> RouteNames(const ParentTranslation& translation) {
    std::vector<std::string> names;
    for (const nlohmann::json& route : Routes(translation)) names.push_back(route["name"]);
    return names;
  }

  // `route_configuration` with the generated objects of every Service port
  // in the world (its own default RouteConfiguration left out) and the
  // unroutable pair.
  std::vector<xds::ResourceObject> WithEveryServicePort(
      const xds::ResourceObject& route_configuration) const {
    std::vector<xds::ResourceObject> objects = UnroutableObjects();
    for (const auto& [key, service] : world_.services()) {
      for (const ServicePort& port : std::get<ServiceInfo>(service.spec).ports) {
        ServicePortObjects generated = TranslateServicePort(service, port, {}, TranslateOptions());
        objects.push_back(std::move(generated.listener));
        objects.push_back(std::move(generated.cluster));
        generated.endpoints.findings.clear();  // No slices: a warning of no interest here.
        objects.push_back(std::move(generated.endpoints));
        if (generated.route_configuration.ref != route_configuration.ref) {
          objects.push_back(std::move(generated.route_configuration));
        }
      }
    }
    objects.push_back(route_configuration);
    return objects;
  }

  static const Condition& ConditionOf(const ParentStatus& status, const std::string& type) {
    for (const Condition& condition : status.conditions) {
      if (condition.type == type) return condition;
    }
    static const Condition kNone;
    ADD_FAILURE() << "no condition " << type;
    return kNone;
  }

  World world_;
  std::map<const GatewayObject*, RouteConditions> conditions_;
};

TEST_F(GrpcRouteTest, WithoutRoutesThePortServesTheDefault) {
  const ParentTranslation translation = Translate({});
  EXPECT_THAT(RouteNames(translation), ElementsAre("facet/default"));
  EXPECT_THAT(translation.statuses, IsEmpty());
}

TEST_F(GrpcRouteTest, TranslatesTheWholeRouteConfiguration) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"yaml(, rules: [
    {name: canary, matches: [{method: {service: facet.test.Echo, method: Echo},
                              headers: [{name: X-Variant, value: blue}]}],
     backendRefs: [{name: echo-v2, port: 7070}]},
    {matches: [{method: {service: facet.test.Echo}}, {method: {type: RegularExpression, method: "Get|List"}}],
     backendRefs: [{name: echo-v1, port: 7070, weight: 3}, {name: echo-v3, port: 7070}]}]})yaml"));
  const ParentTranslation translation = Translate({&route});
  EXPECT_EQ(ResourceJson(translation.route_configuration), nlohmann::json::parse(R"json({
    "virtual_hosts": [{"name": "echo.demo.svc.cluster.local:7070", "domains": ["*"], "routes": [
      {"name": "demo/greeter/canary",
       "match": {"path": "/facet.test.Echo/Echo",
                 "headers": [{"name": "x-variant", "exact_match": "blue"}]},
       "route": {"cluster": "echo-v2.demo.svc.cluster.local:7070"}},
      {"name": "demo/greeter/rules[1]/matches[0]",
       "match": {"prefix": "/facet.test.Echo/"},
       "route": {"weighted_clusters": {"clusters": [
         {"name": "echo-v1.demo.svc.cluster.local:7070", "weight": 3},
         {"name": "echo-v3.demo.svc.cluster.local:7070", "weight": 1}], "total_weight": 4}}},
      {"name": "demo/greeter/rules[1]/matches[1]",
       "match": {"safe_regex": {"regex": "/[^/]+/(?:Get|List)"}},
       "route": {"weighted_clusters": {"clusters": [
         {"name": "echo-v1.demo.svc.cluster.local:7070", "weight": 3},
         {"name": "echo-v3.demo.svc.cluster.local:7070", "weight": 1}], "total_weight": 4}}},
      {"name": "facet/no-route", "match": {"prefix": ""},
       "route": {"cluster": "facet.dev/unroutable"},
       "typed_per_filter_config": {"envoy.filters.http.fault": {
         "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
         "abort": {"grpc_status": 12, "percentage": {"numerator": 100}}}}}]}]})json"));
  EXPECT_EQ(translation.route_configuration.ref,
            (xds::ObjectRef{"Generated", "demo", "route/echo.demo.svc.cluster.local:7070"}));
  EXPECT_EQ(translation.route_configuration.generated_from,
            "Service demo/echo port 7070 (GRPCRoute demo/greeter)");
  ASSERT_THAT(translation.statuses, SizeIs(1));
  const GatewayStatus& status = translation.statuses[0];
  EXPECT_EQ(status.object, (xds::ObjectRef{"GRPCRoute", "demo", "greeter"}));
  EXPECT_EQ(status.generation, 3);
  ASSERT_THAT(status.parents, SizeIs(1));
  EXPECT_EQ(status.parents[0].parent_ref.field, "spec.parentRefs[0]");
  EXPECT_EQ(status.parents[0].parent_ref.port, 7070);
  EXPECT_EQ(status.parents[0].conditions,
            (std::vector<Condition>{
                {"Accepted", "True", "Accepted", "Route is accepted", 3, {}},
                {"ResolvedRefs", "True", "ResolvedRefs", "All references are resolved", 3, {}}}));
}

TEST_F(GrpcRouteTest, RuleNameNamesXdsRoute) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {name: one, matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v1, port: 7070}]},
    {name: two, matches: [{method: {service: b.B}}, {method: {service: c.C}}],
     backendRefs: [{name: echo-v1, port: 7070}]},
    {matches: [{method: {service: d.D}}], backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  EXPECT_THAT(
      RouteNames(Translate({&route})),
      ElementsAre("demo/greeter/one", "demo/greeter/two/matches[0]", "demo/greeter/two/matches[1]",
                  "demo/greeter/rules[2]", "facet/no-route"));
}

TEST_F(GrpcRouteTest, CatchAllFailsUnimplemented) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  const nlohmann::json routes = Routes(Translate({&route}));
  EXPECT_EQ(Pick(routes, "/a.A/Get"), "echo-v1.demo.svc.cluster.local:7070");
  EXPECT_EQ(Pick(routes, "/b.B/Get"), "abort 12");
}

TEST_F(GrpcRouteTest, RuleWithoutMatchesSortsLastAndEndsTheList) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {backendRefs: [{name: echo-v2, port: 7070}]},
    {matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  const ParentTranslation translation = Translate({&route});
  // The match-all rule is the last route: no facet/no-route after it.
  EXPECT_THAT(RouteNames(translation),
              ElementsAre("demo/greeter/rules[1]", "demo/greeter/rules[0]"));
  EXPECT_EQ(Pick(Routes(translation), "/b.B/Get"), "echo-v2.demo.svc.cluster.local:7070");
}

TEST_F(GrpcRouteTest, MergesRoutesOfSeveralGrpcRoutesByPrecedence) {
  // Equal matches: the older route wins; equal age: namespace/name decides.
  const GatewayObject young = Route("a-young", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: x.X}}], backendRefs: [{name: echo-v1, port: 7070}]},
    {matches: [{method: {service: longer.Service}}], backendRefs: [{name: echo-v1, port: 7070}]}]})"),
                                    "2026-02-01T00:00:00Z");
  const GatewayObject old = Route("z-old", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: x.X}}], backendRefs: [{name: echo-v2, port: 7070}]}]})"),
                                  "2026-01-01T00:00:00Z");
  const GatewayObject twin = Route("b-twin", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: x.X}}], backendRefs: [{name: echo-v3, port: 7070}]}]})"),
                                   "2026-02-01T00:00:00Z");
  const ParentTranslation translation = Translate({&young, &old, &twin});
  EXPECT_THAT(RouteNames(translation),
              ElementsAre("demo/a-young/rules[1]", "demo/z-old/rules[0]", "demo/a-young/rules[0]",
                          "demo/b-twin/rules[0]", "facet/no-route"));
  EXPECT_EQ(Pick(Routes(translation), "/x.X/Get"), "echo-v2.demo.svc.cluster.local:7070");
  EXPECT_EQ(translation.route_configuration.generated_from,
            "Service demo/echo port 7070 (GRPCRoutes demo/a-young, demo/b-twin, demo/z-old)");
  EXPECT_THAT(translation.statuses, SizeIs(3));
}

TEST_F(GrpcRouteTest, WeightZeroLeftOut) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {backendRefs: [{name: echo-v1, port: 7070, weight: 0}, {name: echo-v2, port: 7070, weight: 5}]}]})"));
  EXPECT_EQ(Pick(Routes(Translate({&route})), "/a.A/B"), "echo-v2.demo.svc.cluster.local:7070");
}

TEST_F(GrpcRouteTest, TotalWeightIsSum) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {backendRefs: [{name: echo-v1, port: 7070, weight: 700}, {name: echo-v2, port: 7070, weight: 300},
                   {name: echo-v1, port: 7070, weight: 5}]}]})"));
  const nlohmann::json routes = Routes(Translate({&route}));
  // The same backend twice is one entry with both weights.
  EXPECT_EQ(Pick(routes, "/a.A/B"),
            "echo-v1.demo.svc.cluster.local:7070:705,echo-v2.demo.svc.cluster.local:7070:300");
  EXPECT_EQ(routes[0]["route"]["weighted_clusters"]["total_weight"], 1005);
}

TEST_F(GrpcRouteTest, InvalidSharesMergeIntoOneAbort14) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {backendRefs: [{name: missing, port: 7070, weight: 20}, {name: echo-v1, port: 7070, weight: 50},
                   {name: echo-v2, port: 9999, weight: 30}]}]})"));
  const ParentTranslation translation = Translate({&route});
  const nlohmann::json routes = Routes(translation);
  EXPECT_EQ(Pick(routes, "/a.A/B"),
            "echo-v1.demo.svc.cluster.local:7070:50,facet.dev/unroutable:50 abort");
  EXPECT_EQ(routes[0]["route"]["weighted_clusters"]["clusters"][1]["typed_per_filter_config"],
            nlohmann::json::parse(R"({"envoy.filters.http.fault": {
              "@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault",
              "abort": {"grpc_status": 14, "percentage": {"numerator": 100}}}})"));
  EXPECT_EQ(routes[0]["route"]["weighted_clusters"]["total_weight"], 100);
  const ParentStatus& status = translation.statuses[0].parents[0];
  EXPECT_EQ(ConditionOf(status, "Accepted").status, "True");
  const Condition& resolved = ConditionOf(status, "ResolvedRefs");
  EXPECT_EQ(resolved.status, "False");
  EXPECT_EQ(resolved.reason, "BackendNotFound");
  EXPECT_EQ(resolved.message,
            "spec.rules[0].backendRefs[0]: Service demo/missing does not exist; "
            "spec.rules[0].backendRefs[2]: Service demo/echo-v2 has no port 9999");
  EXPECT_THAT(resolved.causes, SizeIs(2));
}

TEST_F(GrpcRouteTest, AllInvalidFailsEveryCallUnavailable) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: a.A}}], backendRefs: [{name: missing, port: 7070}]}]})"));
  const nlohmann::json routes = Routes(Translate({&route}));
  EXPECT_EQ(Pick(routes, "/a.A/B"), "abort 14");
  EXPECT_EQ(routes[0]["route"]["cluster"], "facet.dev/unroutable");
}

TEST_F(GrpcRouteTest, AllZeroIsUnavailable) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v1, port: 7070, weight: 0}]},
    {matches: [{method: {service: b.B}}]}]})"));
  const nlohmann::json routes = Routes(Translate({&route}));
  EXPECT_EQ(Pick(routes, "/a.A/B"), "abort 14");
  EXPECT_EQ(Pick(routes, "/b.B/B"), "abort 14") << "no backendRefs";
}

TEST_F(GrpcRouteTest, CrossNamespaceBackendNeedsAGrant) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {backendRefs: [{name: far, namespace: other, port: 7070}]}]})"));
  ParentTranslation translation = Translate({&route});
  EXPECT_EQ(Pick(Routes(translation), "/a.A/B"), "abort 14");
  EXPECT_EQ(ConditionOf(translation.statuses[0].parents[0], "ResolvedRefs").reason,
            "RefNotPermitted");
  world_.Add(testing::Parse(
      "{apiVersion: gateway.networking.k8s.io/v1beta1, kind: ReferenceGrant, metadata: {name: g, "
      "namespace: other}, spec: {from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, "
      "namespace: demo}], to: [{group: '', kind: Service}]}}"));
  translation = Translate({&route});
  EXPECT_EQ(Pick(Routes(translation), "/a.A/B"), "far.other.svc.cluster.local:7070");
  EXPECT_EQ(ConditionOf(translation.statuses[0].parents[0], "ResolvedRefs").status, "True");
}

TEST_F(GrpcRouteTest, RequestHeaderModifierIsIncompatibleFilters) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: a.A}}],
     filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: y}]}}],
     backendRefs: [{name: echo-v1, port: 7070}]},
    {backendRefs: [{name: echo-v1, port: 7070,
                    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: echo-v2, port: 7070}}}]}]}]})"));
  const ParentTranslation translation = Translate({&route});
  // Nothing of a route that is not accepted is served.
  EXPECT_THAT(RouteNames(translation), ElementsAre("facet/default"));
  const Condition& accepted = ConditionOf(translation.statuses[0].parents[0], "Accepted");
  EXPECT_EQ(accepted.status, "False");
  EXPECT_EQ(accepted.reason, "IncompatibleFilters");
  ASSERT_THAT(accepted.causes, SizeIs(2));
  EXPECT_EQ(accepted.causes[0].field, "spec.rules[0].filters[0]");
  EXPECT_THAT(accepted.causes[0].message, HasSubstr("RequestHeaderModifier filter"));
  EXPECT_EQ(accepted.causes[1].field, "spec.rules[1].backendRefs[0].filters[0]");
  EXPECT_THAT(accepted.causes[1].message, HasSubstr("cannot mirror"));
}

TEST_F(GrpcRouteTest, InvalidRe2IsUnsupportedValue) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {type: RegularExpression, method: "("}}],
     backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  ASSERT_TRUE(route.has_errors());
  const ParentTranslation translation = Translate({&route});
  EXPECT_THAT(RouteNames(translation), ElementsAre("facet/default"));
  const Condition& accepted = ConditionOf(translation.statuses[0].parents[0], "Accepted");
  EXPECT_EQ(accepted.status, "False");
  EXPECT_EQ(accepted.reason, "UnsupportedValue");
  EXPECT_EQ(accepted.observed_generation, 3);
  ASSERT_THAT(accepted.causes, SizeIs(1));
  EXPECT_EQ(accepted.causes[0].field, "spec.rules[0].matches[0].method.method");
  EXPECT_THAT(accepted.message,
              HasSubstr("spec.rules[0].matches[0].method.method: \"(\" is not an RE2"));
}

TEST_F(GrpcRouteTest, BinHeaderMakesTheRouteUnsupported) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{headers: [{name: x-trace-bin, value: AAA=}]}], backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  const ParentTranslation translation = Translate({&route});
  EXPECT_THAT(RouteNames(translation), ElementsAre("facet/default"));
  const Condition& accepted = ConditionOf(translation.statuses[0].parents[0], "Accepted");
  EXPECT_EQ(accepted.reason, "UnsupportedValue");
  EXPECT_EQ(accepted.causes.at(0).field, "spec.rules[0].matches[0].headers[0].name");
}

TEST_F(GrpcRouteTest, InvalidRouteLeavesTheOthersServed) {
  const GatewayObject bad = Route("bad", absl::StrCat("{", kEchoParent, R"(, rules: [
    {filters: [{type: ExtensionRef, extensionRef: {group: x.io, kind: K, name: n}}],
     backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  const GatewayObject good = Route("good", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v2, port: 7070}]}]})"));
  const ParentTranslation translation = Translate({&bad, &good});
  EXPECT_THAT(RouteNames(translation), ElementsAre("demo/good/rules[0]", "facet/no-route"));
  EXPECT_EQ(translation.route_configuration.generated_from,
            "Service demo/echo port 7070 (GRPCRoute demo/good)");
  EXPECT_EQ(ConditionOf(translation.statuses[0].parents[0], "Accepted").reason,
            "IncompatibleFilters");
  EXPECT_EQ(ConditionOf(translation.statuses[1].parents[0], "Accepted").reason, "Accepted");
}

TEST_F(GrpcRouteTest, HostnamesIgnoredWithWarning) {
  const GatewayObject route =
      Route("greeter", absl::StrCat("{", kEchoParent, R"(, hostnames: [echo.example.com],
    rules: [{backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  const ParentTranslation translation = Translate({&route});
  const Condition& accepted = ConditionOf(translation.statuses[0].parents[0], "Accepted");
  EXPECT_EQ(accepted.status, "True");
  ASSERT_THAT(accepted.causes, SizeIs(1));
  EXPECT_EQ(accepted.causes[0].field, "spec.hostnames");
  EXPECT_THAT(accepted.message, HasSubstr("Route is accepted; spec.hostnames: ignored"));
}

TEST_F(GrpcRouteTest, OneStatusEntryPerParentRefOnThisPort) {
  // Two parentRefs reach port 7070 (by port, and by sectionName of the
  // same port... of another name); the Gateway parent gets no entry.
  const GatewayObject route = Route("greeter", R"({parentRefs: [
      {name: gw},
      {group: '', kind: Service, name: echo, sectionName: grpc},
      {group: '', kind: Service, name: echo, sectionName: admin}],
    rules: [{backendRefs: [{name: echo-v1, port: 7070}]}]})");
  ASSERT_FALSE(route.has_errors());
  ParentTranslation translation = Translate({&route});
  ASSERT_THAT(translation.statuses[0].parents, SizeIs(1));
  EXPECT_EQ(translation.statuses[0].parents[0].parent_ref.section_name, "grpc");
  translation = Translate({&route}, 8080);
  ASSERT_THAT(translation.statuses[0].parents, SizeIs(1));
  EXPECT_EQ(translation.statuses[0].parents[0].parent_ref.section_name, "admin");
  EXPECT_THAT(RouteNames(translation), ElementsAre("demo/greeter/rules[0]"));
}

TEST_F(GrpcRouteTest, RejectedParentGetsNoMatchingParentAndTheRouteConditions) {
  const GatewayObject route = Route("greeter", R"({parentRefs: [{kind: Service, name: echo}],
    rules: [{backendRefs: [{name: missing, port: 7070}]}]})");
  const std::vector<ObjectReference>& parents = std::get<GrpcRoute>(route.spec).parent_refs;
  const ParentResolution resolution = ResolveParentRef("demo", parents[0], world_.Lookup());
  const TranslatedRoute translated =
      TranslateRoute(route, nullptr, world_.Lookup(), TranslateOptions());
  const ParentStatus status = ParentStatusFor(translated, parents[0], resolution);
  EXPECT_EQ(status.parent_ref, parents[0]);
  const Condition& accepted = ConditionOf(status, "Accepted");
  EXPECT_EQ(accepted.status, "False");
  EXPECT_EQ(accepted.reason, "NoMatchingParent");
  EXPECT_EQ(accepted.causes.at(0).field, "spec.parentRefs[0]");
  EXPECT_THAT(accepted.message, HasSubstr("set group: \"\" for a core Service"));
  EXPECT_EQ(ConditionOf(status, "ResolvedRefs").reason, "BackendNotFound");
}

// Conformance test GRPCExactMethodMatching (grpcroute-exact-method-matching):
// Echo to v1, EchoTwo to v2, EchoThree UNIMPLEMENTED.
TEST_F(GrpcRouteTest, ConformanceExactMethodMatching) {
  const GatewayObject route = Route("exact-matching", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{method: {service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo}}],
     backendRefs: [{name: echo-v1, port: 7070}]},
    {matches: [{method: {service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: EchoTwo}}],
     backendRefs: [{name: echo-v2, port: 7070}]}]})"));
  const nlohmann::json routes = Routes(Translate({&route}));
  const std::string service = "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/";
  EXPECT_EQ(Pick(routes, service + "Echo"), "echo-v1.demo.svc.cluster.local:7070");
  EXPECT_EQ(Pick(routes, service + "EchoTwo"), "echo-v2.demo.svc.cluster.local:7070");
  EXPECT_EQ(Pick(routes, service + "EchoThree"), "abort 12");
}

// Conformance test GRPCRouteHeaderMatching (grpcroute-header-matching): ANDed
// headers in a match, ORed matches, more headers win, no match UNIMPLEMENTED.
TEST_F(GrpcRouteTest, ConformanceHeaderMatching) {
  const GatewayObject route =
      Route("grpc-header-matching", absl::StrCat("{", kEchoParent, R"(, rules: [
    {matches: [{headers: [{name: version, value: one}]}], backendRefs: [{name: echo-v1, port: 7070}]},
    {matches: [{headers: [{name: version, value: two}]}], backendRefs: [{name: echo-v2, port: 7070}]},
    {matches: [{headers: [{name: version, value: two}, {name: color, value: orange}]}],
     backendRefs: [{name: echo-v1, port: 7070}]},
    {matches: [{headers: [{name: color, value: blue}]}, {headers: [{name: color, value: green}]}],
     backendRefs: [{name: echo-v1, port: 7070}]},
    {matches: [{headers: [{name: color, value: red}]}, {headers: [{name: color, value: yellow}]}],
     backendRefs: [{name: echo-v2, port: 7070}]}]})"));
  const nlohmann::json routes = Routes(Translate({&route}));
  const std::string v1 = "echo-v1.demo.svc.cluster.local:7070";
  const std::string v2 = "echo-v2.demo.svc.cluster.local:7070";
  const std::string path = "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo";
  EXPECT_EQ(Pick(routes, path, {{"version", "one"}}), v1);
  EXPECT_EQ(Pick(routes, path, {{"version", "two"}}), v2);
  EXPECT_EQ(Pick(routes, path, {{"version", "two"}, {"color", "orange"}}), v1);
  EXPECT_EQ(Pick(routes, path, {{"color", "blue"}}), v1);
  EXPECT_EQ(Pick(routes, path, {{"color", "green"}}), v1);
  EXPECT_EQ(Pick(routes, path, {{"color", "red"}}), v2);
  EXPECT_EQ(Pick(routes, path, {{"color", "yellow"}}), v2);
  EXPECT_EQ(Pick(routes, path, {{"color", "purple"}}), "abort 12");
  EXPECT_EQ(Pick(routes, path, {{"version", "three"}}), "abort 12");
  EXPECT_EQ(Pick(routes, path), "abort 12");
}

// Conformance test MeshGRPCRouteWeight (mesh-grpcroute-weight): parent
// Service echo:7070, 70/30, and a weight-0 reference to a Service that does
// not exist: no traffic to it, ResolvedRefs False.
TEST_F(GrpcRouteTest, ConformanceMeshWeight) {
  const GatewayObject route = Route("mesh-grpc-weight", absl::StrCat("{", kEchoParent, R"(, rules: [
    {backendRefs: [{name: echo-v1, port: 7070, weight: 70}, {name: echo-v2, port: 7070, weight: 30},
                   {name: echo-v4, port: 7070, weight: 0}]}]})"));
  const ParentTranslation translation = Translate({&route});
  const nlohmann::json routes = Routes(translation);
  EXPECT_EQ(Pick(routes, "/any.Service/Call"),
            "echo-v1.demo.svc.cluster.local:7070:70,echo-v2.demo.svc.cluster.local:7070:30");
  EXPECT_EQ(routes[0]["route"]["weighted_clusters"]["total_weight"], 100);
  EXPECT_THAT(routes, SizeIs(1)) << "the rule matches every call: no facet/no-route";
  const ParentStatus& status = translation.statuses[0].parents[0];
  EXPECT_EQ(ConditionOf(status, "Accepted").status, "True");
  const Condition& resolved = ConditionOf(status, "ResolvedRefs");
  EXPECT_EQ(resolved.reason, "BackendNotFound");
  EXPECT_EQ(resolved.message,
            "spec.rules[0].backendRefs[2]: Service demo/echo-v4 does not exist (weight 0: no "
            "traffic)");
}

TEST_F(GrpcRouteTest, ConditionHookCompilesConditionalRulesIntoVariants) {
  const GatewayObject route = Route("greeter", absl::StrCat("{", kEchoParent, R"(, rules: [
    {name: canary, matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v2, port: 7070}]},
    {backendRefs: [{name: echo-v1, port: 7070}]}]})"));
  RouteConditions& conditions = conditions_[&route];
  conditions.rules[0] = YAML::Load("{constraint: {key: env, value: prod}}");
  const ParentTranslation translation = Translate({&route});
  const xds::ResourceObject& config = translation.route_configuration;
  EXPECT_THAT(config.findings, IsEmpty());
  ASSERT_THAT(config.spec->variants, SizeIs(2));
  std::vector<std::vector<std::string>> names;
  for (const xds::VariantSpec& variant : config.spec->variants) {
    std::vector<std::string>& variant_names = names.emplace_back();
    const nlohmann::json resource = Json(variant.resource);
    for (const nlohmann::json& r : resource["virtual_hosts"][0]["routes"]) {
      variant_names.push_back(r["name"]);
    }
    EXPECT_GT(variant.constraints.ByteSizeLong(), 0u);
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         ElementsAre("demo/greeter/canary", "demo/greeter/rules[1]"),
                         ElementsAre("demo/greeter/rules[1]")));
}

}  // namespace
}  // namespace facet::controller::gateway
