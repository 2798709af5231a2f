#include "xds_server/explain/explain.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::facet::xds::testing::MakeObject;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using Status = ExplainNode::Status;

std::string Listener(const std::string& route) {
  return R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: )" +
         route +
         R"(, config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})";
}
std::string Route(const std::string& domain, const std::string& cluster) {
  return R"({virtual_hosts: [{name: other, domains: [other], routes: [{match: {prefix: ""}, route: {cluster: unused}}]}, {name: main, domains: [")" +
         domain + R"("], routes: [{match: {prefix: ""}, route: {cluster: )" + cluster + "}}]}]}";
}
std::string Cluster() { return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"; }
std::string Endpoints(int port) {
  return "{endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: "
         "127.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}

// greeter -> route greeter (env=prod: cluster prod; otherwise: cluster
// `other_cluster`) -> clusters -> endpoints; cluster "v2" exists only for
// version=v2. "unused" is routed to by the virtual host that does not match.
std::shared_ptr<const Snapshot> Build(const std::string& other_cluster = "test") {
  std::vector<ResourceObject> objects = {
      MakeObject("demo", "listener", "listener", "greeter", {{"", Listener("greeter")}}),
      MakeObject("demo", "route", "route", "greeter",
                 {{"{env: prod}", Route("greeter", "prod")},
                  {"{env: {not: prod}}", Route("*", other_cluster)}}),
      MakeObject("demo", "prod", "cluster", "prod", {{"", Cluster()}}),
      MakeObject("demo", "test", "cluster", "test", {{"", Cluster()}}),
      MakeObject("demo", "unused", "cluster", "unused", {{"", Cluster()}}),
      MakeObject("demo", "prod-e", "endpoint", "prod", {{"", Endpoints(1)}}),
      MakeObject("demo", "test-e", "endpoint", "test", {{"", Endpoints(2)}}),
      MakeObject("demo", "unused-e", "endpoint", "unused", {{"", Endpoints(3)}}),
  };
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  BuildResult result = BuildSnapshot(objects, {}, nullptr, options);
  for (const auto& status : result.statuses) {
    EXPECT_TRUE(status.accepted) << status.ref.ToString()
                                 << (status.findings.empty() ? "" : status.findings[0].message);
  }
  return result.snapshot;
}

ExplainRequest Request(const std::string& target, const std::string& authority = "",
                       const ParameterSet& params = {}) {
  ExplainRequest request;
  request.target = target;
  request.authority = authority;
  request.params = params;
  return request;
}

ExplainResult ExplainFor(const Snapshot& snapshot, const ParameterSet& params,
                         const std::string& target = "greeter") {
  absl::StatusOr<ExplainResult> result = Explain(snapshot, Request(target, "", params));
  EXPECT_THAT(result.status(), IsOk());
  return result.ok() ? *result : ExplainResult();
}

TEST(ExplainTest, ResolvesTheGraphDownToTheEndpoints) {
  auto snapshot = Build();
  ExplainResult result = ExplainFor(*snapshot, {{"env", "prod"}});
  EXPECT_TRUE(result.complete());
  const ExplainNode& listener = result.root;
  EXPECT_EQ(listener.type, "listener");
  EXPECT_EQ(listener.status, Status::kSelected);
  EXPECT_EQ(listener.object, "demo/listener");
  ASSERT_THAT(listener.children, SizeIs(1));
  const ExplainNode& route = listener.children[0];
  EXPECT_EQ(route.name, "greeter");
  EXPECT_EQ(route.variant, "v0");
  EXPECT_EQ(route.constraints, "env=prod");
  EXPECT_THAT(route.details, ElementsAre(HasSubstr("virtual host \"main\"")));
  // Only the chosen virtual host's routes are followed.
  ASSERT_THAT(route.children, SizeIs(1));
  const ExplainNode& cluster = route.children[0];
  EXPECT_EQ(cluster.name, "prod");
  EXPECT_EQ(cluster.field, "virtual_hosts[1].routes[0].route.cluster");
  ASSERT_THAT(cluster.children, SizeIs(1));
  EXPECT_THAT(cluster.children[0].details, ElementsAre("endpoint 127.0.0.1:1"));
  EXPECT_THAT(ExplainToText(result), HasSubstr("graph complete"));
}

TEST(ExplainTest, OtherParametersSelectTheOtherVariant) {
  auto snapshot = Build();
  ExplainResult result = ExplainFor(*snapshot, {{"env", "staging"}});
  EXPECT_TRUE(result.complete());
  const ExplainNode& route = result.root.children[0];
  EXPECT_EQ(route.variant, "v1");
  // "*" matches, but the exact "other" does not, so the wildcard host wins.
  ASSERT_THAT(route.children, SizeIs(1));
  EXPECT_EQ(route.children[0].name, "test");
}

TEST(ExplainTest, ReportsAResourceNoVariantServesForTheParameters) {
  std::vector<ResourceObject> objects = {
      MakeObject("demo", "listener", "listener", "greeter",
                 {{"{version: v1}", Listener("greeter")}, {"{version: v2}", Listener("greeter")}}),
      MakeObject("demo", "route", "route", "greeter", {{"", Route("greeter", "prod")}}),
      MakeObject("demo", "prod", "cluster", "prod", {{"", Cluster()}}),
      MakeObject("demo", "unused", "cluster", "unused", {{"", Cluster()}}),
      MakeObject("demo", "prod-e", "endpoint", "prod", {{"", Endpoints(1)}}),
      MakeObject("demo", "unused-e", "endpoint", "unused", {{"", Endpoints(1)}}),
  };
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  BuildResult built = BuildSnapshot(objects, {}, nullptr, options);
  ExplainResult result = ExplainFor(*built.snapshot, {{"version", "v3"}});
  EXPECT_FALSE(result.complete());
  ASSERT_THAT(result.problems, SizeIs(1));
  EXPECT_THAT(result.problems[0], HasSubstr("listener \"greeter\""));
  EXPECT_THAT(result.problems[0], HasSubstr("does not exist for these parameters"));
  EXPECT_THAT(result.problems[0], HasSubstr("version=v1"));
  EXPECT_EQ(result.root.status, Status::kNoVariant);
  EXPECT_THAT(ExplainToText(result), HasSubstr("graph broken (1 problem)"));
  EXPECT_TRUE(ExplainFor(*built.snapshot, {{"version", "v2"}}).complete());
}

TEST(ExplainTest, SaysWhichRejectedObjectWouldHaveServedAMissingResource) {
  auto snapshot = Build();
  ExplainRequest request = Request("greeter", "", {{"env", "prod"}});
  request.rejected[{"cluster", "prod"}] = "demo/prod: spec.variants[0].resource: bad";
  // The snapshot serves "prod"; a rejection is only mentioned for what is missing.
  absl::StatusOr<ExplainResult> served = Explain(*snapshot, request);
  ASSERT_THAT(served.status(), IsOk());
  EXPECT_TRUE(served->complete());
  request.target = "missing";
  request.rejected[{"listener", "missing"}] = "demo/missing: spec.variants[0]: bad";
  absl::StatusOr<ExplainResult> missing = Explain(*snapshot, request);
  ASSERT_THAT(missing.status(), IsOk());
  EXPECT_THAT(missing->problems,
              ElementsAre(HasSubstr("rejected: demo/missing: spec.variants[0]: bad")));
}

TEST(ExplainTest, ReportsAMissingListenerAndAVirtualHostThatDoesNotMatch) {
  auto snapshot = Build();
  ExplainResult missing = ExplainFor(*snapshot, {}, "nothing");
  EXPECT_FALSE(missing.complete());
  EXPECT_EQ(missing.root.status, Status::kMissing);
  EXPECT_THAT(missing.problems, ElementsAre(HasSubstr("does not exist")));

  // The prod route has no virtual host for "greeter" other than "main"; ask
  // for a listener named differently but served by the same route.
  std::vector<ResourceObject> objects = {
      MakeObject("demo", "listener", "listener", "elsewhere", {{"", Listener("greeter")}}),
      MakeObject("demo", "route", "route", "greeter", {{"", Route("greeter", "prod")}}),
      MakeObject("demo", "prod", "cluster", "prod", {{"", Cluster()}}),
      MakeObject("demo", "unused", "cluster", "unused", {{"", Cluster()}}),
      MakeObject("demo", "prod-e", "endpoint", "prod", {{"", Endpoints(1)}}),
      MakeObject("demo", "unused-e", "endpoint", "unused", {{"", Endpoints(1)}}),
  };
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  ExplainResult result =
      ExplainFor(*BuildSnapshot(objects, {}, nullptr, options).snapshot, {}, "elsewhere");
  EXPECT_FALSE(result.complete());
  EXPECT_THAT(result.problems, ElementsAre(HasSubstr("no virtual host matches \"elsewhere\"")));
  EXPECT_THAT(result.root.children[0].children, IsEmpty());
}

TEST(ExplainTest, DerivesXdstpListenerNamesFromTheAuthority) {
  EXPECT_EQ(*ListenerNameFor(Request("greeter", "a.example")),
            "xdstp://a.example/envoy.config.listener.v3.Listener/greeter");
  EXPECT_EQ(*ListenerNameFor(Request("greeter")), "greeter");
  EXPECT_EQ(*ListenerNameFor(Request("xdstp://a.example/envoy.config.listener.v3.Listener/g")),
            "xdstp://a.example/envoy.config.listener.v3.Listener/g");
  EXPECT_THAT(
      ListenerNameFor(Request("xdstp://a.example/envoy.config.listener.v3.Listener/g", "b"))
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--authority")));
  EXPECT_THAT(ListenerNameFor(Request("")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--target")));
}

TEST(ExplainTest, NamesWhatAPartialSourceHasNotCached) {
  ExplainResult result = ExplainFor(*Snapshot::EmptyPartial(), {});
  EXPECT_FALSE(result.complete());
  EXPECT_TRUE(result.partial);
  EXPECT_EQ(result.root.status, Status::kNotCached);
  EXPECT_THAT(result.problems, ElementsAre(HasSubstr("not cached")));
}

TEST(ExplainTest, AcceptsTargetsWrittenAsXdsUris) {
  auto snapshot = Build();
  for (const char* target : {"greeter", "xds:///greeter"}) {
    ExplainResult result = ExplainFor(*snapshot, {{"env", "prod"}}, target);
    EXPECT_TRUE(result.complete()) << target;
    EXPECT_EQ(result.listener_name, "greeter") << target;
    EXPECT_EQ(result.target, target);
    // The virtual host is matched against NAME, not the URI.
    ASSERT_THAT(result.root.children, SizeIs(1)) << target;
    EXPECT_THAT(result.root.children[0].details, ElementsAre(HasSubstr("matches \"greeter\"")));
  }
  EXPECT_EQ(*ListenerNameFor(Request("xds://a.example/greeter")),
            "xdstp://a.example/envoy.config.listener.v3.Listener/greeter");
  EXPECT_EQ(*ListenerNameFor(Request("xds://a.example/greeter", "a.example")),
            "xdstp://a.example/envoy.config.listener.v3.Listener/greeter");
  EXPECT_EQ(*ListenerNameFor(Request("xds:///greeter", "b.example")),
            "xdstp://b.example/envoy.config.listener.v3.Listener/greeter");
  absl::StatusOr<ExplainTarget> target = ParseExplainTarget(Request("xds://a.example/greeter"));
  ASSERT_THAT(target.status(), IsOk());
  EXPECT_EQ(target->host, "greeter");
  EXPECT_EQ(target->authority, "a.example");
  EXPECT_THAT(ListenerNameFor(Request("xds://a.example/greeter", "b.example")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--authority")));
  for (const char* bad : {"xds:greeter", "xds://a.example", "xds:///"}) {
    EXPECT_THAT(ListenerNameFor(Request(bad)).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("xds:///NAME")))
        << bad;
  }
  // The result names the authority the URI gave.
  ExplainResult with_authority = ExplainFor(*snapshot, {}, "xds://a.example/greeter");
  EXPECT_EQ(with_authority.authority, "a.example");
}

TEST(ExplainTest, PrintsParametersInSingleBraces) {
  auto snapshot = Build();
  const std::string text = ExplainToText(ExplainFor(*snapshot, {{"env", "prod"}}));
  EXPECT_THAT(text, HasSubstr("target \"greeter\" with parameters {env=prod} -> listener"));
  EXPECT_THAT(text, Not(HasSubstr("{{")));
  EXPECT_THAT(ExplainToText(ExplainFor(*snapshot, {})), HasSubstr("with parameters {} ->"));
}

TEST(ExplainTest, SaysWhichObjectServesItsPreviousRevisionAndWhy) {
  auto snapshot = Build();
  ObjectStatus rejected;
  rejected.ref = {kXdsResourceKind, "demo", "route"};
  rejected.accepted = false;
  rejected.serving_previous = true;
  rejected.findings.push_back(
      {Severity::kWarning, "Lint", "spec.variants[0]", "only a warning", {}});
  rejected.findings.push_back(
      {Severity::kError, "InvalidResource", "spec.variants[1].resource", "unknown field", {}});
  ObjectStatus gone;  // Rejected with nothing serving: not a previous revision.
  gone.ref = {kXdsResourceKind, "demo", "prod"};
  std::vector<std::shared_ptr<const ObjectStatus>> statuses = {
      std::make_shared<const ObjectStatus>(rejected), std::make_shared<const ObjectStatus>(gone)};
  ExplainRequest request = Request("greeter", "", {{"env", "prod"}});
  AddSourceStatuses(statuses, &request);
  EXPECT_THAT(request.serving_previous, SizeIs(1));
  absl::StatusOr<ExplainResult> result = Explain(*snapshot, request);
  ASSERT_THAT(result.status(), IsOk());
  EXPECT_TRUE(result->complete());
  const ExplainNode& route = result->root.children[0];
  EXPECT_EQ(route.serving_previous, "spec.variants[1].resource: unknown field");
  EXPECT_EQ(result->root.serving_previous, "");
  EXPECT_EQ(route.children[0].serving_previous, "");
  const std::string text = ExplainToText(*result);
  EXPECT_THAT(text, HasSubstr("of demo/route (its previous revision: the latest is rejected: "
                              "spec.variants[1].resource: unknown field), version "));
  absl::StatusOr<ExplainResult> back = ExplainFromJson(ExplainToJson(*result));
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(ExplainToText(*back), text);
}

TEST(ExplainTest, FollowsARelaysCachedVariantsAndNamesWhatIsNotCached) {
  // A relay's cache holds what upstream sent, without the references a
  // build derives: here only the listener.
  auto built = Build();
  const ServedResource* listener = built->Find(ListenerType(), "greeter");
  ASSERT_NE(listener, nullptr);
  auto cached = std::make_shared<ServedResource>(*listener);
  cached->owner = {};
  for (auto& variant : cached->variants) {
    auto copy = std::make_shared<Variant>();
    copy->type = variant->type;
    copy->name = variant->name;
    copy->label = variant->label;
    copy->constraints = variant->constraints;
    copy->serialized = variant->serialized;
    copy->version = variant->version;
    variant = copy;
  }
  auto relay = Snapshot::Derive(*Snapshot::EmptyPartial(), {cached}, {});
  ExplainResult result = ExplainFor(*relay, {{"env", "prod"}});
  EXPECT_TRUE(result.partial);
  EXPECT_FALSE(result.complete());
  EXPECT_EQ(result.root.status, Status::kSelected);
  ASSERT_THAT(result.root.children, SizeIs(1));
  EXPECT_EQ(result.root.children[0].type, "route");
  EXPECT_EQ(result.root.children[0].status, Status::kNotCached);
  EXPECT_THAT(result.problems, ElementsAre(HasSubstr("route \"greeter\"")));
  EXPECT_THAT(ExplainToText(result), HasSubstr("not cached"));
}

constexpr char kFaultType[] =
    "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault";

// A listener whose filter chain has the fault filter (or not).
std::string FaultListener(bool with_fault_filter) {
  return absl::StrCat(
      R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: greeter, config_source: {ads: {}}}, http_filters: [)",
      with_fault_filter
          ? absl::StrCat(R"({name: envoy.filters.http.fault, typed_config: {"@type": )", kFaultType,
                         "}}, ")
          : "",
      R"({name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})");
}

// typed_per_filter_config carrying `fault` (an HTTPFault's fields) for the
// fault filter.
std::string FaultOverride(const std::string& fault) {
  return absl::StrCat(R"(typed_per_filter_config: {envoy.filters.http.fault: {"@type": )",
                      kFaultType, ", ", fault, "}}");
}

// The listener (with the fault filter, or not) -> `route` -> clusters
// "prod" (with an endpoint) and "unroutable" (with none); every object
// accepted.
std::shared_ptr<const Snapshot> BuildFaultGraph(const std::string& route,
                                                bool with_fault_filter = true) {
  std::vector<ResourceObject> objects = {
      MakeObject("demo", "listener", "listener", "greeter",
                 {{"", FaultListener(with_fault_filter)}}),
      MakeObject("demo", "route", "route", "greeter", {{"", route}}),
      MakeObject("demo", "prod", "cluster", "prod", {{"", Cluster()}}),
      MakeObject("demo", "unroutable", "cluster", "unroutable", {{"", Cluster()}}),
      MakeObject("demo", "prod-e", "endpoint", "prod", {{"", Endpoints(1)}}),
      MakeObject("demo", "unroutable-e", "endpoint", "unroutable", {{"", "{}"}}),
  };
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  BuildResult result = BuildSnapshot(objects, {}, nullptr, options);
  for (const auto& status : result.statuses) {
    EXPECT_TRUE(status.accepted) << status.ref.ToString() << ": "
                                 << (status.findings.empty() ? "" : status.findings[0].message);
  }
  return result.snapshot;
}

// Named routes as the Gateway API translation writes them: a plain route,
// a split with a share that fails UNAVAILABLE, and a catch-all that fails
// with `catch_all_fault` (route level) on a cluster without endpoints.
std::shared_ptr<const Snapshot> BuildWithFaults(const std::string& catch_all_fault,
                                                bool with_fault_filter = true) {
  const std::string route = absl::StrCat(
      R"({virtual_hosts: [{name: greeter, domains: ["*"], routes: [)",
      R"({name: demo/greeter/canary, match: {path: /demo.Echo/Echo, headers: [{name: x-env, exact_match: prod}]}, route: {cluster: prod}},)",
      R"({name: demo/greeter/split, match: {prefix: /demo.Echo/}, route: {weighted_clusters: {total_weight: 100, clusters: [{name: prod, weight: 70}, {name: unroutable, weight: 30, )",
      FaultOverride("abort: {grpc_status: 14, percentage: {numerator: 100, denominator: HUNDRED}}"),
      R"(}]}}},)", R"({name: facet/no-route, match: {prefix: ""}, route: {cluster: unroutable}, )",
      FaultOverride(catch_all_fault), "}]}]}");
  return BuildFaultGraph(route, with_fault_filter);
}

constexpr char kAbortAll12[] =
    "abort: {grpc_status: 12, percentage: {numerator: 100, denominator: HUNDRED}}";

TEST(ExplainTest, FaultAbortsAreTerminalsAndRoutesShowTheirNames) {
  auto snapshot = BuildWithFaults(kAbortAll12);
  ExplainResult result = ExplainFor(*snapshot, {});
  EXPECT_TRUE(result.complete()) << ExplainToText(result);
  const ExplainNode& route = result.root.children[0];
  EXPECT_THAT(
      route.details,
      ElementsAre(HasSubstr("virtual host \"greeter\""),
                  "route \"demo/greeter/canary\" (virtual_hosts[0].routes[0]): path "
                  "\"/demo.Echo/Echo\", header x-env == \"prod\" -> cluster \"prod\"",
                  "route \"demo/greeter/split\" (virtual_hosts[0].routes[1]): prefix "
                  "\"/demo.Echo/\" -> weighted clusters: \"prod\" weight 70, weight 30 fails with "
                  "UNAVAILABLE (fault abort)",
                  "route \"facet/no-route\" (virtual_hosts[0].routes[2]): prefix \"\" fails with "
                  "UNIMPLEMENTED (fault abort)"));
  // The cluster without endpoints behind the aborts is not followed.
  ASSERT_THAT(route.children, SizeIs(2));
  EXPECT_EQ(route.children[0].name, "prod");
  EXPECT_EQ(route.children[1].name, "prod");
  EXPECT_EQ(route.children[1].status, Status::kShownAbove);
  const std::string text = ExplainToText(result);
  EXPECT_THAT(text, HasSubstr("    - route \"facet/no-route\" (virtual_hosts[0].routes[2]): prefix "
                              "\"\" fails with UNIMPLEMENTED (fault abort)\n"));
  EXPECT_THAT(text, Not(HasSubstr("unroutable")));
  EXPECT_THAT(text, HasSubstr("graph complete"));
}

TEST(ExplainTest, OnlyAnAbortOfEveryRpcIsATerminal) {
  struct Case {
    std::string fault;
    std::string outcome;  // "" when the cluster is followed.
  };
  const std::vector<Case> cases = {
      {kAbortAll12, "UNIMPLEMENTED"},
      {"abort: {http_status: 404, percentage: {numerator: 1000000, denominator: MILLION}}",
       "UNIMPLEMENTED"},
      {"abort: {grpc_status: 14, percentage: {numerator: 100}}", "UNAVAILABLE"},
      {"abort: {grpc_status: 14, percentage: {numerator: 50}}", ""},
      {"abort: {grpc_status: 14, percentage: {numerator: 9999, denominator: TEN_THOUSAND}}", ""},
      {"abort: {grpc_status: 14}", ""},
      {"abort: {header_abort: {}, percentage: {numerator: 100}}", ""},
      {absl::StrCat(kAbortAll12, ", max_active_faults: 5"), ""},
      // gRPC reads no HTTPFault.headers (gRFC A33): the abort is for every RPC.
      {absl::StrCat(kAbortAll12, ", headers: [{name: x-fail, present_match: true}]"),
       "UNIMPLEMENTED"},
      // Codes that map to OK abort nothing (as C-core; grpc-js fails http
      // 200 with UNKNOWN).
      {"abort: {grpc_status: 0, percentage: {numerator: 100}}", ""},
      {"abort: {http_status: 200, percentage: {numerator: 100}}", ""},
      {"abort: {http_status: 500, percentage: {numerator: 100}}", "UNKNOWN"},
      {"delay: {fixed_delay: 1s, percentage: {numerator: 100}}", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fault);
    ExplainResult result = ExplainFor(*BuildWithFaults(c.fault), {});
    const std::string text = ExplainToText(result);
    if (c.outcome.empty()) {
      EXPECT_FALSE(result.complete());
      EXPECT_THAT(result.problems,
                  ElementsAre(HasSubstr("endpoint \"unroutable\" (name (EDS service name")));
      EXPECT_THAT(text, Not(HasSubstr("prefix \"\" fails with")));
      EXPECT_THAT(text, HasSubstr("prefix \"\" -> cluster \"unroutable\""));
    } else {
      EXPECT_TRUE(result.complete()) << text;
      EXPECT_THAT(text, HasSubstr(absl::StrCat("prefix \"\" fails with ", c.outcome)));
    }
  }
}

TEST(ExplainTest, AbortOverridesNeedTheFaultFilterInTheListener) {
  ExplainResult result = ExplainFor(*BuildWithFaults(kAbortAll12, /*with_fault_filter=*/false), {});
  EXPECT_FALSE(result.complete());
  EXPECT_THAT(ExplainToText(result),
              HasSubstr("-> weighted clusters: \"prod\" weight 70, \"unroutable\" weight 30"));
}

TEST(ExplainTest, MostSpecificFaultConfigWinsAndFilterConfigIsUnwrapped) {
  // The catch-all's abort sits in a FilterConfig; a weighted cluster's
  // delay-only override cancels the route's abort for that share only.
  const std::string route = absl::StrCat(
      R"({virtual_hosts: [{name: greeter, domains: ["*"], routes: [)",
      R"({name: split, match: {prefix: /demo.Echo/}, )", FaultOverride(kAbortAll12),
      R"(, route: {weighted_clusters: {clusters: [{name: unroutable, weight: 50}, {name: prod, weight: 50, )",
      FaultOverride("delay: {fixed_delay: 1s, percentage: {numerator: 100}}"), "}]}}},",
      R"({match: {prefix: ""}, route: {cluster: unroutable}, typed_per_filter_config: {envoy.filters.http.fault: )",
      R"({"@type": type.googleapis.com/envoy.config.route.v3.FilterConfig, config: {"@type": )",
      kFaultType, ", ", kAbortAll12, "}}}}]}]}");
  ExplainResult result = ExplainFor(*BuildFaultGraph(route), {});
  EXPECT_TRUE(result.complete()) << ExplainToText(result);
  EXPECT_THAT(result.root.children[0].details,
              ElementsAre(HasSubstr("virtual host"),
                          "route \"split\" (virtual_hosts[0].routes[0]): prefix \"/demo.Echo/\" -> "
                          "weighted clusters: weight 50 fails with UNIMPLEMENTED (fault abort), "
                          "\"prod\" weight 50",
                          "route (virtual_hosts[0].routes[1]): prefix \"\" fails with "
                          "UNIMPLEMENTED (fault abort)"));
}

TEST(ExplainTest, FilterConfigDisabledIsIgnoredAsByGrpcClients) {
  // Neither gRPC C-core nor grpc-js-xds reads FilterConfig.disabled: the
  // config inside applies.
  const std::string route = absl::StrCat(
      R"({virtual_hosts: [{name: greeter, domains: ["*"], routes: [)",
      R"({match: {prefix: ""}, route: {cluster: unroutable}, typed_per_filter_config: {envoy.filters.http.fault: )",
      R"({"@type": type.googleapis.com/envoy.config.route.v3.FilterConfig, disabled: true, config: {"@type": )",
      kFaultType, ", ", kAbortAll12, "}}}}]}]}");
  ExplainResult result = ExplainFor(*BuildFaultGraph(route), {});
  EXPECT_TRUE(result.complete()) << ExplainToText(result);
  EXPECT_THAT(ExplainToText(result),
              HasSubstr("prefix \"\" fails with UNIMPLEMENTED (fault abort)"));
}

TEST(ExplainTest, EachClusterReferenceCarriesItsRouteRuleAndWeightShare) {
  auto snapshot = BuildWithFaults(kAbortAll12);
  ExplainResult result = ExplainFor(*snapshot, {});
  const ExplainNode& route = result.root.children[0];
  EXPECT_EQ(route.virtual_host, "greeter");
  EXPECT_FALSE(route.route_rule.has_value());
  ASSERT_THAT(route.children, SizeIs(2));
  // A named route matching a path and a header, naming one cluster.
  ASSERT_TRUE(route.children[0].route_rule.has_value());
  const ExplainRouteRule& canary = *route.children[0].route_rule;
  EXPECT_EQ(canary.virtual_host, "greeter");
  EXPECT_EQ(canary.index, 0);
  EXPECT_EQ(canary.field, "virtual_hosts[0].routes[0]");
  EXPECT_EQ(canary.name, "demo/greeter/canary");
  EXPECT_EQ(canary.match, "path \"/demo.Echo/Echo\", header x-env == \"prod\"");
  EXPECT_FALSE(canary.weighted());
  // The split's followed share, reached again (shown above), with its weight
  // out of every share's, the aborted one included.
  ASSERT_TRUE(route.children[1].route_rule.has_value());
  const ExplainRouteRule& split = *route.children[1].route_rule;
  EXPECT_EQ(route.children[1].status, Status::kShownAbove);
  EXPECT_EQ(split.index, 1);
  EXPECT_EQ(split.name, "demo/greeter/split");
  EXPECT_EQ(split.match, "prefix \"/demo.Echo/\"");
  EXPECT_EQ(split.weight, 70u);
  EXPECT_EQ(split.total_weight, 100u);
  const std::string text = ExplainToText(result);
  EXPECT_THAT(text, HasSubstr("    cluster \"prod\" (virtual_hosts[0].routes[0].route.cluster): "
                              "variant \"v0\" (unconstrained) of demo/prod, version "));
  EXPECT_THAT(text, HasSubstr("      - from route \"demo/greeter/canary\" "
                              "(virtual_hosts[0].routes[0]) of virtual host \"greeter\": path "
                              "\"/demo.Echo/Echo\", header x-env == \"prod\"\n"));
  EXPECT_THAT(text, HasSubstr(": shown above\n      - from route \"demo/greeter/split\" "
                              "(virtual_hosts[0].routes[1]) of virtual host \"greeter\": prefix "
                              "\"/demo.Echo/\", weight 70 of 100 (70%)\n"));
  // Below the cluster, references carry no rule.
  ASSERT_THAT(route.children[0].children, SizeIs(1));
  EXPECT_FALSE(route.children[0].children[0].route_rule.has_value());
}

TEST(ExplainTest, WeightSharesDivideByTheSumOfTheWeights) {
  const std::string route =
      R"({virtual_hosts: [{name: greeter, domains: ["*"], routes: [{match: {prefix: ""}, route: {weighted_clusters: {clusters: [{name: prod, weight: 1}, {name: prod, weight: 2}]}}}]}]})";
  ExplainResult result = ExplainFor(*BuildFaultGraph(route), {});
  const ExplainNode& node = result.root.children[0];
  ASSERT_THAT(node.children, SizeIs(2));
  ASSERT_TRUE(node.children[1].route_rule.has_value());
  EXPECT_EQ(node.children[1].route_rule->weight, 2u);
  EXPECT_EQ(node.children[1].route_rule->total_weight, 3u);
  EXPECT_EQ(node.children[1].route_rule->name, "");
  EXPECT_THAT(ExplainToText(result),
              HasSubstr("- from route (virtual_hosts[0].routes[0]) of virtual host \"greeter\": "
                        "prefix \"\", weight 2 of 3 (66.67%)\n"));
}

TEST(ExplainTest, ASingleClusterRouteCarriesItsRuleWithoutAWeight) {
  auto snapshot = Build();
  ExplainResult result = ExplainFor(*snapshot, {{"env", "prod"}});
  const ExplainNode& route = result.root.children[0];
  EXPECT_EQ(route.virtual_host, "main");
  EXPECT_FALSE(result.root.route_rule.has_value());
  EXPECT_FALSE(route.route_rule.has_value());
  ASSERT_THAT(route.children, SizeIs(1));
  ASSERT_TRUE(route.children[0].route_rule.has_value());
  const ExplainRouteRule& rule = *route.children[0].route_rule;
  EXPECT_EQ(rule.virtual_host, "main");
  EXPECT_EQ(rule.field, "virtual_hosts[1].routes[0]");
  EXPECT_EQ(rule.match, "prefix \"\"");
  EXPECT_EQ(rule.weight, 0u);
  EXPECT_EQ(rule.total_weight, 0u);
  EXPECT_THAT(ExplainToText(result),
              HasSubstr("- from route (virtual_hosts[1].routes[0]) of virtual host \"main\": "
                        "prefix \"\"\n      - EDS cluster\n"));
}

TEST(ExplainTest, RouteRulesAreBoundedPerResource) {
  std::string routes;
  for (int r = 0; r < 70; ++r) {
    absl::StrAppend(&routes, r == 0 ? "" : ",", "{match: {path: /r", r,
                    R"(}, route: {cluster: prod}})");
  }
  const std::string route =
      absl::StrCat(R"({virtual_hosts: [{name: greeter, domains: ["*"], routes: [)", routes, "]}]}");
  ExplainResult result = ExplainFor(*BuildFaultGraph(route), {});
  const ExplainNode& node = result.root.children[0];
  ASSERT_THAT(node.children, SizeIs(70));
  ASSERT_TRUE(node.children[63].route_rule.has_value());
  EXPECT_EQ(node.children[63].route_rule->match, "path \"/r63\"");
  EXPECT_FALSE(node.children[64].route_rule.has_value());
  EXPECT_THAT(node.details, Contains("... and the route rules of 6 more cluster references"));
}

TEST(ExplainTest, JsonRoundTripsRouteRules) {
  ExplainResult result = ExplainFor(*BuildWithFaults(kAbortAll12), {});
  const std::string json = ExplainToJson(result);
  EXPECT_THAT(json, HasSubstr("\"virtual_host\": \"greeter\""));
  EXPECT_THAT(json, HasSubstr("\"route_rule\": null"));
  EXPECT_THAT(json, HasSubstr("\"total_weight\": 100"));
  absl::StatusOr<ExplainResult> back = ExplainFromJson(json);
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(ExplainToText(*back), ExplainToText(result));
  ASSERT_TRUE(back->root.children[0].children[1].route_rule.has_value());
  const ExplainRouteRule& rule = *back->root.children[0].children[1].route_rule;
  EXPECT_EQ(rule.index, 1);
  EXPECT_EQ(rule.weight, 70u);
  EXPECT_EQ(rule.total_weight, 100u);
  EXPECT_EQ(rule.virtual_host, "greeter");
  EXPECT_EQ(back->root.children[0].virtual_host, "greeter");
}

TEST(ExplainTest, JsonRoundTrips) {
  auto snapshot = Build();
  ExplainResult result = ExplainFor(*snapshot, {{"env", "prod"}});
  const std::string json = ExplainToJson(result);
  EXPECT_THAT(json, HasSubstr("\"complete\": true"));
  absl::StatusOr<ExplainResult> back = ExplainFromJson(json);
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(ExplainToText(*back), ExplainToText(result));
  EXPECT_THAT(ExplainFromJson("{").status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ExplainFromJson("{}").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("graph")));
}

}  // namespace
}  // namespace facet::xds
