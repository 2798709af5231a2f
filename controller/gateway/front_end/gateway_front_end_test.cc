// The front end re-translates exactly what a change reaches, its output
// equals a translation from scratch after any sequence of edits, and its
// statuses follow the translation and the builder.
#include "controller/gateway/front_end/gateway_front_end.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "controller/gateway/translate/translate_test_util.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::Parse;
using ::facet::controller::gateway::testing::Route;
using ::facet::controller::gateway::testing::Service;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

// "alias/S.N.svc.cluster.local:P", the name of a generated object.
std::string G(const std::string& alias, const std::string& service, int port,
              const std::string& ns = "demo") {
  return absl::StrCat(alias, "/", service, ".", ns, ".svc.cluster.local:", port);
}

// The four generated objects of a Service port.
std::vector<std::string> PortObjects(const std::string& service, int port,
                                     const std::string& ns = "demo") {
  return {G("listener", service, port, ns), G("route", service, port, ns),
          G("cluster", service, port, ns), G("endpoint", service, port, ns)};
}

GatewayObject Slice(const std::string& name, const std::string& service, const std::string& address,
                    const std::string& ns = "demo") {
  return Parse(
      absl::StrCat("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: ", name,
                   ", namespace: ", ns, ", labels: {kubernetes.io/service-name: ", service,
                   "}}\naddressType: IPv4\nports: [{name: grpc, port: 9000, protocol: TCP}]\n"
                   "endpoints: [{addresses: [",
                   address, "], conditions: {ready: true}}]"));
}

GatewayObject Grant(const std::string& name, const std::string& ns, const std::string& from_ns) {
  return Parse(absl::StrCat(
      "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {name: ",
      name, ", namespace: ", ns,
      "}\nspec: {from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: ", from_ns,
      "}], to: [{group: '', kind: Service}]}"));
}

// An XdsVariantPolicy demo/`name` on `targets` ("route" or "route/rule",
// comma-separated) with `when`, created at `created` ("" unset).
GatewayObject Policy(const std::string& name, const std::string& targets,
                     const std::string& when = "{env: prod}", const std::string& created = "",
                     int64_t generation = 1) {
  std::vector<std::string> refs;
  for (absl::string_view target : absl::StrSplit(targets, ',')) {
    std::vector<std::string> parts = absl::StrSplit(target, '/');
    refs.push_back(absl::StrCat("{group: gateway.networking.k8s.io, kind: GRPCRoute, name: ",
                                parts[0],
                                parts.size() > 1 ? absl::StrCat(", sectionName: ", parts[1]) : "",
                                "}"));
  }
  return Parse(absl::StrCat(
      "apiVersion: facet.dev/v1alpha1\nkind: XdsVariantPolicy\nmetadata: {name: ", name,
      ", namespace: demo, generation: ", generation,
      created.empty() ? "" : absl::StrCat(", creationTimestamp: \"", created, "\""),
      "}\nspec: {targetRefs: [", absl::StrJoin(refs, ", "), "], when: ", when, "}"));
}

constexpr char kEchoPorts[] = "{ports: [{name: grpc, port: 7070}, {name: admin, port: 8080}]}";
constexpr char kOnePort[] = "{ports: [{name: grpc, port: 7070}]}";

// demo/split on echo:7070: Echo calls to echo-v1/echo-v2 by `weights`.
GatewayObject Split(const std::string& weights = "70, 30", const std::string& parent = "port: 7070",
                    const std::string& method = "{service: Echo}") {
  const size_t comma = weights.find(',');
  return Route(
      "split",
      absl::StrCat(
          "{parentRefs: [{group: '', kind: Service, name: echo, ", parent,
          "}], rules: [{matches: [{method: ", method,
          "}], backendRefs: [{name: echo-v1, port: 7070, weight: ", weights.substr(0, comma),
          "}, {name: echo-v2, port: 7070, weight: ", weights.substr(comma + 1), "}]}]}"));
}

// demo/cross on echo:8080, to Service other/far.
GatewayObject Cross() {
  return Route("cross",
               "{parentRefs: [{group: '', kind: Service, name: echo, port: 8080}], rules: "
               "[{backendRefs: [{name: far, namespace: other, port: 7070}]}]}");
}

std::vector<std::string> Names(const std::vector<xds::ObjectRef>& refs) {
  std::vector<std::string> out;
  for (const xds::ObjectRef& ref : refs) out.push_back(ref.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

// The Accepted condition of a policy's ancestor.
const Condition* PolicyAccepted(const GatewayStatus& status, size_t ancestor = 0) {
  if (ancestor >= status.ancestors.size()) return nullptr;
  for (const Condition& condition : status.ancestors[ancestor].conditions) {
    if (condition.type == kConditionAccepted) return &condition;
  }
  return nullptr;
}

const Condition* Find(const GatewayStatus& status, const std::string& type, size_t parent = 0) {
  if (parent >= status.parents.size()) return nullptr;
  for (const Condition& condition : status.parents[parent].conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

class GatewayFrontEndTest : public ::testing::Test {
 protected:
  GatewayFrontEndTest() : builder_(xds::BuildOptions{}) {}

  // echo (7070, 8080), echo-v1, echo-v2 and other/far (7070), a slice each
  // for echo-v1 and echo-v2, and demo/split.
  void AddWorld() {
    front_end_.Upsert(Service("echo", kEchoPorts));
    front_end_.Upsert(Service("echo-v1", kOnePort));
    front_end_.Upsert(Service("echo-v2", kOnePort));
    front_end_.Upsert(Service("far", kOnePort, "other"));
    front_end_.Upsert(Slice("echo-v1-a", "echo-v1", "10.0.0.1"));
    front_end_.Upsert(Slice("echo-v2-a", "echo-v2", "10.0.0.2"));
    front_end_.Upsert(Split());
    const FlushStats first = Flush();
    ASSERT_THAT(first.upserted, SizeIs(5 * 4 + 2));
    ASSERT_EQ(builder_.rejected_count(), 0);
  }

  // Flushes, builds and reconciles; keeps the changed statuses.
  FlushStats Flush() {
    FlushStats stats = front_end_.Flush(builder_);
    result_ = builder_.Build();
    changed_ = front_end_.Reconcile(builder_, result_);
    EXPECT_FALSE(front_end_.has_pending());
    return stats;
  }

  // Builds and reconciles without a flush (a change outside the front end).
  void BuildOnly() {
    result_ = builder_.Build();
    changed_ = front_end_.Reconcile(builder_, result_);
  }

  // The names of the routes of the RouteConfiguration served as `name`.
  std::vector<std::string> ServedRoutes(const std::string& name) {
    const xds::ServedResource* served =
        builder_.snapshot()->Find(xds::RouteConfigurationType(), name);
    if (served == nullptr) return {"<none>"};
    envoy::config::route::v3::RouteConfiguration config;
    EXPECT_TRUE(config.ParseFromString(served->variants.at(0)->serialized));
    std::vector<std::string> out;
    for (const auto& route : config.virtual_hosts(0).routes()) out.push_back(route.name());
    return out;
  }

  std::shared_ptr<const GatewayStatus> StatusOf(const std::string& route,
                                                const std::string& ns = "demo") {
    return front_end_.StatusOf({kGrpcRouteKind, ns, route});
  }

  std::shared_ptr<const GatewayStatus> PolicyStatusOf(const std::string& policy) {
    return front_end_.StatusOf({kXdsVariantPolicyKind, "demo", policy});
  }

  // "Reason: message" of a policy's first ancestor.
  std::string PolicyOutcome(const std::string& policy, size_t ancestor = 0) {
    const auto status = PolicyStatusOf(policy);
    if (status == nullptr) return "<no status>";
    const Condition* accepted = PolicyAccepted(*status, ancestor);
    return accepted == nullptr ? "<no ancestor>"
                               : absl::StrCat(accepted->reason, ": ", accepted->message);
  }

  // The route names of each variant of the RouteConfiguration `name`, in
  // variant order.
  std::vector<std::vector<std::string>> ServedVariants(const std::string& name) {
    const xds::ServedResource* served =
        builder_.snapshot()->Find(xds::RouteConfigurationType(), name);
    if (served == nullptr) return {};
    std::vector<std::vector<std::string>> out;
    for (const auto& variant : served->variants) {
      envoy::config::route::v3::RouteConfiguration config;
      EXPECT_TRUE(config.ParseFromString(variant->serialized));
      std::vector<std::string>& names = out.emplace_back();
      for (const auto& route : config.virtual_hosts(0).routes()) names.push_back(route.name());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::string> ChangedRoutes() const {
    std::vector<std::string> out;
    for (const auto& status : changed_) out.push_back(status->object.name);
    return out;
  }

  GatewayFrontEnd front_end_;
  xds::IncrementalBuilder builder_;
  xds::IncrementalBuilder::Result result_;
  std::vector<std::shared_ptr<const GatewayStatus>> changed_;
};

TEST_F(GatewayFrontEndTest, ServiceAloneServesItsPortsWithTheDefaultRoute) {
  front_end_.Upsert(Service("echo", kEchoPorts));
  EXPECT_TRUE(front_end_.has_pending());
  const FlushStats stats = Flush();
  std::vector<std::string> expected = PortObjects("echo", 7070);
  for (const std::string& name : PortObjects("echo", 8080)) expected.push_back(name);
  EXPECT_EQ(Names(stats.upserted), Sorted(expected));  // No unroutable pair without routes.
  EXPECT_EQ(stats.service_ports, 2);
  EXPECT_EQ(stats.parents, 2);
  EXPECT_EQ(builder_.rejected_count(), 0);
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"), ElementsAre("facet/default"));
  EXPECT_THAT(changed_, IsEmpty());
}

TEST_F(GatewayFrontEndTest, FirstFlushServesRoutesAndStatuses) {
  AddWorld();
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:8080"), ElementsAre("facet/default"));
  EXPECT_THAT(ChangedRoutes(), ElementsAre("split"));
  const auto status = StatusOf("split");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(Find(*status, kConditionAccepted)->status, kStatusTrue);
  EXPECT_EQ(Find(*status, kConditionResolvedRefs)->status, kStatusTrue);
  EXPECT_THAT(front_end_.Statuses(), SizeIs(1));
}

TEST_F(GatewayFrontEndTest, RouteEditReupsertsOnlyItsParentsRouteConfiguration) {
  AddWorld();
  front_end_.Upsert(Split("50, 50"));
  FlushStats stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_THAT(stats.removed, IsEmpty());
  EXPECT_EQ(stats.routes, 1);
  EXPECT_EQ(stats.parents, 1);
  EXPECT_EQ(result_.validated_objects, 1);
  EXPECT_THAT(changed_, IsEmpty());  // Same generation, same status.

  // Moved to the other port: both RouteConfigurations, and nothing else.
  front_end_.Upsert(Split("50, 50", "port: 8080"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted),
              ElementsAre(G("route", "echo", 7070), G("route", "echo", 8080)));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"), ElementsAre("facet/default"));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:8080"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));

  // No port: every port of the parent.
  front_end_.Upsert(Split("50, 50", "sectionName: grpc", "{service: Echo, method: Hi}"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted),
              ElementsAre(G("route", "echo", 7070), G("route", "echo", 8080)));
  front_end_.Upsert(Route("split",
                          "{parentRefs: [{group: '', kind: Service, name: echo}], rules: "
                          "[{backendRefs: [{name: echo-v1, port: 7070}]}]}"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted),
              ElementsAre(G("route", "echo", 7070), G("route", "echo", 8080)));
  // A rule without matches matches every call: no facet/no-route after it.
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:8080"), ElementsAre("demo/split/rules[0]"));
}

TEST_F(GatewayFrontEndTest, SliceEditReupsertsOnlyItsServicesAssignment) {
  AddWorld();
  front_end_.Upsert(Slice("echo-v1-a", "echo-v1", "10.0.0.9"));
  FlushStats stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("endpoint", "echo-v1", 7070)));
  EXPECT_EQ(stats.endpoints, 1);
  EXPECT_EQ(stats.routes, 0);
  EXPECT_EQ(result_.validated_objects, 1);
  EXPECT_THAT(changed_, IsEmpty());

  // Relabelled to another Service: both assignments.
  front_end_.Upsert(Slice("echo-v1-a", "echo-v2", "10.0.0.9"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted),
              ElementsAre(G("endpoint", "echo-v1", 7070), G("endpoint", "echo-v2", 7070)));
  front_end_.Remove({kEndpointSliceKind, "demo", "echo-v1-a"});
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("endpoint", "echo-v2", 7070)));
}

TEST_F(GatewayFrontEndTest, ServiceEditReachesItsPortsAndTheParentsOfRoutesUsingIt) {
  AddWorld();
  // echo-v2 is a backend of split (on echo:7070): its ports, and that parent.
  front_end_.Upsert(
      Service("echo-v2", "{ports: [{name: grpc, port: 7070}, {name: extra, port: 9090}]}"));
  FlushStats stats = Flush();
  std::vector<std::string> expected = PortObjects("echo-v2", 9090);
  expected.push_back(G("listener", "echo-v2", 7070));
  expected.push_back(G("cluster", "echo-v2", 7070));
  expected.push_back(G("endpoint", "echo-v2", 7070));
  expected.push_back(G("route", "echo-v2", 7070));
  expected.push_back(G("route", "echo", 7070));
  EXPECT_EQ(Names(stats.upserted), Sorted(expected));
  EXPECT_THAT(stats.removed, IsEmpty());

  // Gone: its objects leave, and its share of split fails UNAVAILABLE.
  front_end_.Remove({kServiceKind, "demo", "echo-v2"});
  stats = Flush();
  std::vector<std::string> removed = PortObjects("echo-v2", 7070);
  for (const std::string& name : PortObjects("echo-v2", 9090)) removed.push_back(name);
  EXPECT_EQ(Names(stats.removed), Sorted(removed));
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_EQ(builder_.rejected_count(), 0);
  EXPECT_THAT(ChangedRoutes(), ElementsAre("split"));
  const Condition* resolved = Find(*StatusOf("split"), kConditionResolvedRefs);
  EXPECT_EQ(resolved->status, kStatusFalse);
  EXPECT_EQ(resolved->reason, kReasonBackendNotFound);
  EXPECT_THAT(resolved->message, HasSubstr("spec.rules[0].backendRefs[1]"));

  // The parent Service gone: the route is attached nowhere.
  front_end_.Remove({kServiceKind, "demo", "echo"});
  stats = Flush();
  EXPECT_THAT(stats.upserted, IsEmpty());
  EXPECT_THAT(stats.removed, SizeIs(8));
  EXPECT_EQ(Find(*StatusOf("split"), kConditionAccepted)->reason, kReasonNoMatchingParent);
}

TEST_F(GatewayFrontEndTest, GrantReachesOnlyTheRoutesFromTheNamespacesItNames) {
  AddWorld();
  front_end_.Upsert(Cross());
  Flush();
  EXPECT_EQ(Find(*StatusOf("cross"), kConditionResolvedRefs)->reason, kReasonRefNotPermitted);

  front_end_.Upsert(Grant("allow", "other", "elsewhere"));
  FlushStats stats = Flush();
  EXPECT_THAT(stats.upserted, IsEmpty());
  EXPECT_EQ(stats.routes, 0);

  front_end_.Upsert(Grant("allow", "other", "demo"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 8080)));
  EXPECT_THAT(ChangedRoutes(), ElementsAre("cross"));
  EXPECT_EQ(Find(*StatusOf("cross"), kConditionResolvedRefs)->status, kStatusTrue);

  front_end_.Remove({kReferenceGrantKind, "other", "allow"});
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 8080)));
  EXPECT_EQ(Find(*StatusOf("cross"), kConditionResolvedRefs)->reason, kReasonRefNotPermitted);
}

TEST_F(GatewayFrontEndTest, PolicyEditReachesOnlyItsTargetsParents) {
  AddWorld();
  front_end_.Upsert(Cross());
  Flush();
  front_end_.TakeAccepted();
  front_end_.Upsert(Policy("prod-only", "split"));
  EXPECT_TRUE(front_end_.has_pending());
  FlushStats stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_EQ(stats.policy_routes, 1);
  EXPECT_EQ(stats.routes, 0);
  // Clients with env=prod get the route, the others the Service's own
  // endpoints (every route on the parent is conditional).
  EXPECT_THAT(ServedVariants("echo.demo.svc.cluster.local:7070"),
              ElementsAre(ElementsAre("demo/split/rules[0]", "facet/no-route"),
                          ElementsAre("facet/default")));
  EXPECT_THAT(ChangedRoutes(), ElementsAre("prod-only"));
  EXPECT_EQ(changed_[0]->object.kind, kXdsVariantPolicyKind);
  EXPECT_EQ(PolicyOutcome("prod-only"),
            "Accepted: applies to GRPCRoute demo/split: RouteConfiguration "
            "echo.demo.svc.cluster.local:7070 compiles to 2 variants");
  EXPECT_EQ(PolicyStatusOf("prod-only")->ancestors[0].ancestor_ref.name, "echo");
  EXPECT_THAT(front_end_.Statuses(), SizeIs(3));  // Two routes, one policy.
  EXPECT_THAT(front_end_.TakeAccepted(),
              ElementsAre(xds::ObjectRef{kXdsVariantPolicyKind, "demo", "prod-only"}));

  // A `when` edit: the same RouteConfiguration again, nothing else.
  front_end_.Upsert(Policy("prod-only", "split", "{env: [prod, staging]}"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_EQ(result_.validated_objects, 1);

  // Moved to the route on the other port: both parents, nothing else.
  front_end_.Upsert(Policy("prod-only", "cross"));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted),
              ElementsAre(G("route", "echo", 7070), G("route", "echo", 8080)));
  EXPECT_EQ(stats.policy_routes, 2);
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));

  // Removed: its target's parent only, unconditional again.
  front_end_.Remove({kXdsVariantPolicyKind, "demo", "prod-only"});
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 8080)));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:8080"), ElementsAre("demo/cross/rules[0]"));
  EXPECT_EQ(front_end_.StatusOf({kXdsVariantPolicyKind, "demo", "prod-only"}), nullptr);
}

// other/cons on demo/echo:7070 (a consumer route), to Service other/far.
GatewayObject Consumer() {
  return Route("cons",
               "{parentRefs: [{group: '', kind: Service, name: echo, namespace: demo, "
               "port: 7070}], rules: [{backendRefs: [{name: far, port: 7070}]}]}",
               "", "other");
}

TEST_F(GatewayFrontEndTest, ConsumerRouteIsForItsNamespaceAndReachesOnlyItsParent) {
  AddWorld();
  front_end_.Upsert(Consumer());
  FlushStats stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_EQ(stats.parents, 1);
  // namespace=other: the consumer route; every other client: demo/split.
  EXPECT_THAT(ServedVariants("echo.demo.svc.cluster.local:7070"),
              ElementsAre(ElementsAre("demo/split/rules[0]", "facet/no-route"),
                          ElementsAre("other/cons/rules[0]", "facet/no-route")));
  const auto status = StatusOf("cons", "other");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(Find(*status, kConditionAccepted)->reason, kReasonAccepted);
  EXPECT_EQ(status->parents[0].parent_ref.namespace_, "demo");

  // A policy on it in its namespace: ANDed with the namespace.
  GatewayObject policy = Policy("cons-prod", "cons");
  policy.ref.namespace_ = "other";
  front_end_.Upsert(std::move(policy));
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_THAT(ServedVariants("echo.demo.svc.cluster.local:7070"),
              ElementsAre(ElementsAre("demo/split/rules[0]", "facet/no-route"),
                          ElementsAre("facet/default"),
                          ElementsAre("other/cons/rules[0]", "facet/no-route")));

  // Gone: demo/split for everyone again, one RouteConfiguration.
  front_end_.Remove({kGrpcRouteKind, "other", "cons"});
  stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_THAT(ServedVariants("echo.demo.svc.cluster.local:7070"),
              ElementsAre(ElementsAre("demo/split/rules[0]", "facet/no-route")));
}

TEST(GatewayFrontEndOptionsTest, ConsumerRouteWithoutANamespaceParameterIsDisabled) {
  TranslateOptions options;
  options.client_namespace_param = "";
  GatewayFrontEnd front_end(options);
  xds::IncrementalBuilder builder{xds::BuildOptions{}};
  front_end.Upsert(Service("echo", kOnePort));
  front_end.Upsert(Service("far", kOnePort, "other"));
  front_end.Upsert(Consumer());
  front_end.Flush(builder);
  const auto result = builder.Build();
  front_end.Reconcile(builder, result);
  const auto status = front_end.StatusOf({kGrpcRouteKind, "other", "cons"});
  ASSERT_NE(status, nullptr);
  const Condition* accepted = Find(*status, kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_EQ(accepted->reason, kReasonConsumerRoutesDisabled);
  const xds::ServedResource* served =
      builder.snapshot()->Find(xds::RouteConfigurationType(), "echo.demo.svc.cluster.local:7070");
  ASSERT_NE(served, nullptr);
  EXPECT_THAT(served->variants, SizeIs(1));
}

TEST_F(GatewayFrontEndTest, OlderPolicyWinsAndTheOtherIsConflicted) {
  AddWorld();
  front_end_.Upsert(Policy("new", "split", "{env: dev}", "2026-03-01T00:00:00Z"));
  front_end_.Upsert(Policy("old", "split", "{env: prod}", "2026-01-01T00:00:00Z"));
  Flush();
  EXPECT_THAT(PolicyOutcome("new"), ::testing::StartsWith("Conflicted: spec.targetRefs[0]: "
                                                          "demo/old (older) targets GRPCRoute "
                                                          "demo/split"));
  EXPECT_THAT(PolicyOutcome("old"), ::testing::StartsWith("Accepted: "));
  EXPECT_EQ(PolicyAccepted(*PolicyStatusOf("new"))->status, kStatusFalse);
  // The winner leaves: the other applies.
  front_end_.Remove({kXdsVariantPolicyKind, "demo", "old"});
  Flush();
  EXPECT_THAT(PolicyOutcome("new"), ::testing::StartsWith("Accepted: "));
  EXPECT_THAT(ChangedRoutes(), ElementsAre("new"));
}

TEST_F(GatewayFrontEndTest, MissingRouteOrRuleIsTargetNotFoundUntilItComes) {
  AddWorld();
  front_end_.Upsert(Policy("rule", "split/canary"));
  front_end_.Upsert(Policy("route", "absent"));
  FlushStats stats = Flush();
  EXPECT_THAT(stats.upserted, IsEmpty());
  EXPECT_EQ(PolicyOutcome("rule"),
            "TargetNotFound: spec.targetRefs[0]: GRPCRoute demo/split has no rule named canary");
  EXPECT_EQ(PolicyOutcome("route"),
            "TargetNotFound: spec.targetRefs[0]: GRPCRoute demo/absent does not exist");
  EXPECT_EQ(PolicyStatusOf("route")->ancestors[0].ancestor_ref.kind, kGrpcRouteKind);
  // The rule gets its name: the policy applies.
  front_end_.Upsert(Route("split",
                          "{parentRefs: [{group: '', kind: Service, name: echo, port: 7070}], "
                          "rules: [{name: canary, matches: [{method: {service: Echo}}], "
                          "backendRefs: [{name: echo-v2, port: 7070}]}]}"));
  Flush();
  EXPECT_THAT(PolicyOutcome("rule"), ::testing::StartsWith("Accepted: applies to GRPCRoute "
                                                           "demo/split rule canary"));
  EXPECT_THAT(ServedVariants("echo.demo.svc.cluster.local:7070"),
              ElementsAre(ElementsAre("demo/split/canary", "facet/no-route"),
                          ElementsAre("facet/no-route")));
}

TEST_F(GatewayFrontEndTest, InvalidPolicyAppliesNowhereWithoutLastGood) {
  AddWorld();
  front_end_.Upsert(Policy("bad", "split", "{env: {bogus: x}}"));
  Flush();
  EXPECT_THAT(PolicyOutcome("bad"), ::testing::StartsWith("Invalid: spec.when"));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));
  EXPECT_THAT(front_end_.TakeAccepted(), ElementsAre(xds::ObjectRef{kGrpcRouteKind, "demo",
                                                                    "split"}));
}

TEST_F(GatewayFrontEndTest, InvalidPolicyEditKeepsTheLastAcceptedWhen) {
  front_end_.SetLastGoodLookup([](const xds::ObjectRef&) { return std::nullopt; });
  AddWorld();
  front_end_.Upsert(Policy("prod-only", "split", "{env: prod}", "", 1));
  Flush();
  const auto variants = ServedVariants("echo.demo.svc.cluster.local:7070");
  ASSERT_THAT(variants, SizeIs(2));
  front_end_.Upsert(Policy("prod-only", "split", "{env: {bogus: x}}", "", 2));
  Flush();
  EXPECT_EQ(ServedVariants("echo.demo.svc.cluster.local:7070"), variants);
  EXPECT_THAT(PolicyOutcome("prod-only"), HasSubstr("its last accepted generation (1) keeps "
                                                    "applying"));
  EXPECT_EQ(PolicyAccepted(*PolicyStatusOf("prod-only"))->reason, kReasonInvalid);
}

TEST_F(GatewayFrontEndTest, LookupIsAskedForAPolicySeenInvalidFirst) {
  int asked = 0;
  front_end_.SetLastGoodLookup([&](const xds::ObjectRef& ref) -> std::optional<GatewayObject> {
    if (ref.kind != kXdsVariantPolicyKind) return std::nullopt;
    ++asked;
    return Policy("prod-only", "split", "{env: prod}", "", 1);
  });
  front_end_.Upsert(Policy("prod-only", "split", "{env: {bogus: x}}", "", 2));
  AddWorld();
  EXPECT_EQ(asked, 1);
  EXPECT_THAT(ServedVariants("echo.demo.svc.cluster.local:7070"), SizeIs(2));
  EXPECT_THAT(PolicyOutcome("prod-only"), HasSubstr("(1) keeps applying"));
}

TEST_F(GatewayFrontEndTest, PolicyWithMoreThan16AncestorsIsNotApplied) {
  AddWorld();
  std::vector<std::string> parents;
  for (int i = 0; i < 17; ++i) {
    parents.push_back(absl::StrCat("{group: '', kind: Service, name: s", i, "}"));
  }
  front_end_.Upsert(Route("wide", absl::StrCat("{parentRefs: [", absl::StrJoin(parents, ", "),
                                               "], rules: [{backendRefs: [{name: echo-v1, "
                                               "port: 7070}]}]}")));
  front_end_.Upsert(Policy("wide", "wide,split"));
  Flush();
  const auto status = PolicyStatusOf("wide");
  ASSERT_NE(status, nullptr);
  EXPECT_THAT(status->ancestors, SizeIs(16));
  EXPECT_THAT(PolicyOutcome("wide"), HasSubstr("have 18 ancestors"));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));
}

TEST_F(GatewayFrontEndTest, PoliciesPastTheConditionBoundAreInvalidThere) {
  AddWorld();
  // 17 routes on echo:8080, each with a rule-level policy of its own
  // (created in order): the newest is left out.
  for (int i = 0; i < 17; ++i) {
    const std::string name = absl::StrCat("r", i);
    front_end_.Upsert(Route(name, absl::StrCat("{parentRefs: [{group: '', kind: Service, name: "
                                               "echo, port: 8080}], rules: [{name: x, matches: "
                                               "[{method: {service: S",
                                               i, "}}], backendRefs: [{name: echo-v1, port: "
                                                  "7070}]}]}")));
    front_end_.Upsert(Policy(name, name + "/x", absl::StrCat("{env: e", i, "}"),
                             absl::StrCat("2026-01-", i < 9 ? "0" : "", i + 1, "T00:00:00Z")));
  }
  Flush();
  EXPECT_EQ(builder_.rejected_count(), 0);
  EXPECT_THAT(PolicyOutcome("r15"), ::testing::StartsWith("Accepted: "));
  EXPECT_THAT(PolicyOutcome("r16"),
              ::testing::StartsWith("Invalid: spec.targetRefs[0]: RouteConfiguration "
                                    "echo.demo.svc.cluster.local:8080 would have more than 16 "
                                    "distinct conditions"));
  // One fewer: every policy applies.
  front_end_.Remove({kXdsVariantPolicyKind, "demo", "r0"});
  Flush();
  EXPECT_THAT(PolicyOutcome("r16"), ::testing::StartsWith("Accepted: "));
}

TEST_F(GatewayFrontEndTest, LastRouteGoneRestoresTheDefaultAndDropsTheUnroutablePair) {
  AddWorld();
  front_end_.Remove({kGrpcRouteKind, "demo", "split"});
  const FlushStats stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("route", "echo", 7070)));
  EXPECT_THAT(Names(stats.removed),
              ElementsAre("cluster/facet.dev/unroutable", "endpoint/facet.dev/unroutable"));
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"), ElementsAre("facet/default"));
  EXPECT_EQ(StatusOf("split"), nullptr);
  EXPECT_THAT(front_end_.Statuses(), IsEmpty());
  EXPECT_EQ(builder_.rejected_count(), 0);
}

TEST_F(GatewayFrontEndTest, InvalidRouteServesNothingWithoutLastGood) {
  AddWorld();
  front_end_.Upsert(Split("70, 30", "port: 7070", "{type: RegularExpression, service: '('}"));
  Flush();
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"), ElementsAre("facet/default"));
  EXPECT_THAT(ChangedRoutes(), ElementsAre("split"));
  const Condition* accepted = Find(*StatusOf("split"), kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_EQ(accepted->reason, kReasonUnsupportedValue);
  EXPECT_THAT(front_end_.TakeAccepted(),
              ElementsAre(xds::ObjectRef{kGrpcRouteKind, "demo", "split"}));
  EXPECT_THAT(front_end_.TakeAccepted(), IsEmpty());
}

TEST_F(GatewayFrontEndTest, InvalidEditKeepsTheLastAcceptedServing) {
  front_end_.SetLastGoodLookup([](const xds::ObjectRef&) { return std::nullopt; });
  AddWorld();
  GatewayObject bad = Split("70, 30", "port: 7070", "{type: RegularExpression, service: '('}");
  bad.generation = 4;
  front_end_.Upsert(bad);
  FlushStats stats = Flush();
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));
  EXPECT_EQ(result_.validated_objects, 0);  // The same RouteConfiguration.
  const Condition* accepted = Find(*StatusOf("split"), kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_THAT(accepted->message, HasSubstr("generation 3, the last accepted, keeps serving"));
  EXPECT_EQ(StatusOf("split")->generation, 4);

  // Another invalid edit still falls back to generation 3; a valid one serves.
  bad.generation = 5;
  front_end_.Upsert(bad);
  Flush();
  EXPECT_THAT(Find(*StatusOf("split"), kConditionAccepted)->message, HasSubstr("generation 3"));
  GatewayObject good = Split("50, 50");
  good.generation = 6;
  front_end_.Upsert(good);
  stats = Flush();
  EXPECT_EQ(Find(*StatusOf("split"), kConditionAccepted)->status, kStatusTrue);
  EXPECT_EQ(Find(*StatusOf("split"), kConditionAccepted)->observed_generation, 6);
  EXPECT_THAT(front_end_.TakeAccepted(), SizeIs(1));
}

TEST_F(GatewayFrontEndTest, FreshFrontEndServesTheLastGoodRecordedElsewhere) {
  GatewayObject bad = Route("split",
                            "{parentRefs: [{group: '', kind: Service, name: echo, port: 7070}], "
                            "rules: [{backendRefs: [{name: echo-v1, port: 7070}]}, "
                            "{matches: [{method: {type: RegularExpression, service: '('}}]}]}");
  bad.generation = 9;
  int asked = 0;
  front_end_.SetLastGoodLookup([&](const xds::ObjectRef& ref) -> std::optional<GatewayObject> {
    ++asked;
    EXPECT_EQ(ref, (xds::ObjectRef{kGrpcRouteKind, "demo", "split"}));
    return Split();  // Generation 3.
  });
  front_end_.Upsert(Service("echo", kEchoPorts));
  front_end_.Upsert(Service("echo-v1", kOnePort));
  front_end_.Upsert(Service("echo-v2", kOnePort));
  front_end_.Upsert(bad);
  Flush();
  EXPECT_EQ(asked, 1);
  EXPECT_THAT(ServedRoutes("echo.demo.svc.cluster.local:7070"),
              ElementsAre("demo/split/rules[0]", "facet/no-route"));
  const auto status = StatusOf("split");
  EXPECT_EQ(Find(*status, kConditionAccepted)->status, kStatusTrue);
  EXPECT_EQ(Find(*status, kConditionAccepted)->observed_generation, 3);
  const Condition* partially = Find(*status, kConditionPartiallyInvalid);
  ASSERT_NE(partially, nullptr);
  EXPECT_THAT(partially->message, ::testing::StartsWith("Fall Back: spec.rules[1]"));
  EXPECT_THAT(front_end_.TakeAccepted(), IsEmpty());

  // A lookup answer that is not accepted itself is ignored.
  GatewayFrontEnd other;
  other.SetLastGoodLookup([&](const xds::ObjectRef&) { return bad; });
  other.Upsert(Service("echo", kEchoPorts));
  other.Upsert(bad);
  xds::IncrementalBuilder builder{xds::BuildOptions{}};
  other.Flush(builder);
  const auto result = builder.Build();
  other.Reconcile(builder, result);
  EXPECT_EQ(Find(*other.StatusOf({kGrpcRouteKind, "demo", "split"}), kConditionAccepted)->status,
            kStatusFalse);
}

TEST_F(GatewayFrontEndTest, XdsResourceHoldingAGeneratedNameMakesTheRouteConflicted) {
  AddWorld();
  // An XdsResource declares echo:7070's Listener: it serves, the route not.
  const xds::ResourceObject listener = xds::testing::MakeObject(
      "demo", "hand-written", "listener", "echo.demo.svc.cluster.local:7070",
      {{"",
        "{api_listener: {api_listener: {'@type': type.googleapis.com/envoy.extensions.filters."
        "network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: "
        "echo.demo.svc.cluster.local:7070, config_source: {ads: {}}}, http_filters: [{name: "
        "router, typed_config: {'@type': type.googleapis.com/envoy.extensions.filters.http."
        "router.v3.Router}}]}}}"}});
  builder_.Upsert(listener);
  BuildOnly();
  ASSERT_TRUE(builder_.StatusOf(listener.ref)->accepted);
  EXPECT_THAT(ChangedRoutes(), ElementsAre("split"));
  const Condition* accepted = Find(*StatusOf("split"), kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_EQ(accepted->reason, kReasonConflicted);
  EXPECT_THAT(accepted->message,
              HasSubstr("spec.parentRefs[0]: duplicate: listener "
                        "\"echo.demo.svc.cluster.local:7070\" is already declared by XdsResource "
                        "demo/hand-written"));

  // A backend's Cluster held by an XdsResource: ResolvedRefs.
  builder_.Upsert(xds::testing::MakeObject("demo", "v1-cluster", "cluster",
                                           "echo-v1.demo.svc.cluster.local:7070",
                                           {{"",
                                             "{type: EDS, eds_cluster_config: {eds_config: "
                                             "{ads: {}}}}"}}));
  BuildOnly();
  EXPECT_THAT(ChangedRoutes(), ElementsAre("split"));
  const Condition* resolved = Find(*StatusOf("split"), kConditionResolvedRefs);
  EXPECT_EQ(resolved->reason, kReasonConflicted);
  EXPECT_THAT(resolved->message, HasSubstr("spec.rules[0].backendRefs[0]: duplicate: cluster"));

  // Both gone: accepted again.
  builder_.Remove(listener.ref);
  builder_.Remove({xds::kXdsResourceKind, "demo", "v1-cluster"});
  BuildOnly();
  EXPECT_THAT(ChangedRoutes(), ElementsAre("split"));
  EXPECT_EQ(Find(*StatusOf("split"), kConditionAccepted)->status, kStatusTrue);
  EXPECT_EQ(Find(*StatusOf("split"), kConditionResolvedRefs)->status, kStatusTrue);
  BuildOnly();
  EXPECT_THAT(changed_, IsEmpty());
}

// A slice edit among 2,000 Services reaches one assignment, as an edit of
// an XdsResource's endpoints would.
TEST_F(GatewayFrontEndTest, SliceEditAmongTwoThousandServicesTouchesOneAssignment) {
  for (int i = 0; i < 2000; ++i) {
    const std::string name = absl::StrCat("s", i);
    front_end_.Upsert(Service(name, kOnePort));
    front_end_.Upsert(Slice(name + "-a", name, absl::StrCat("10.0.", i / 250, ".", i % 250)));
  }
  const FlushStats first = Flush();
  ASSERT_THAT(first.upserted, SizeIs(8000));
  front_end_.Upsert(Slice("s1234-a", "s1234", "10.9.9.9"));
  const FlushStats stats = Flush();
  EXPECT_THAT(Names(stats.upserted), ElementsAre(G("endpoint", "s1234", 7070)));
  EXPECT_EQ(result_.validated_objects, 1);
  ASSERT_TRUE(result_.snapshot_changed);
  EXPECT_EQ(result_.snapshot->changes().size(), 1u);  // One CLA.
}

// The objects the random edits pick from: a few variants of each.
struct Template {
  xds::ObjectRef ref;
  std::vector<GatewayObject> variants;
};

std::vector<Template> RandomWorld() {
  auto route = [](const std::string& name, const std::string& ns,
                  const std::vector<std::string>& specs) {
    Template t{{kGrpcRouteKind, ns, name}, {}};
    for (const std::string& spec : specs) t.variants.push_back(Route(name, spec, "", ns));
    return t;
  };
  std::vector<Template> out;
  out.push_back({{kServiceKind, "demo", "echo"},
                 {Service("echo", kEchoPorts), Service("echo", kOnePort),
                  Service("echo", "{ports: [{name: grpc, port: 7071}]}"),
                  Service("echo", "{clusterIP: None, ports: [{name: grpc, port: 7070}]}")}});
  out.push_back({{kServiceKind, "demo", "v1"},
                 {Service("v1", kOnePort),
                  Service("v1", "{ports: [{name: grpc, port: 7070}, {name: x, port: 9090}]}")}});
  out.push_back(
      {{kServiceKind, "demo", "v2"},
       {Service("v2", kOnePort), Service("v2", "{ports: [{port: 7070, protocol: UDP}]}")}});
  out.push_back({{kServiceKind, "other", "far"}, {Service("far", kOnePort, "other")}});
  out.push_back({{kEndpointSliceKind, "demo", "v1-a"},
                 {Slice("v1-a", "v1", "10.0.0.1"), Slice("v1-a", "v1", "10.0.0.2"),
                  Slice("v1-a", "v2", "10.0.0.3")}});
  out.push_back({{kEndpointSliceKind, "demo", "v2-a"}, {Slice("v2-a", "v2", "10.0.1.1")}});
  out.push_back(
      {{kEndpointSliceKind, "other", "far-a"}, {Slice("far-a", "far", "10.0.2.1", "other")}});
  out.push_back({{kReferenceGrantKind, "other", "allow"},
                 {Grant("allow", "other", "demo"), Grant("allow", "other", "elsewhere")}});
  out.push_back(route(
      "a", "demo",
      {"{parentRefs: [{group: '', kind: Service, name: echo, port: 7070}], rules: [{matches: "
       "[{method: {service: Echo}}], backendRefs: [{name: v1, port: 7070}]}]}",
       "{parentRefs: [{group: '', kind: Service, name: echo}], rules: [{backendRefs: [{name: v1, "
       "port: 7070, weight: 3}, {name: v2, port: 7070}]}]}",
       "{parentRefs: [{group: '', kind: Service, name: echo, port: 7070}], rules: [{matches: "
       "[{method: {type: RegularExpression, service: '('}}]}]}",
       "{parentRefs: [{group: '', kind: Service, name: v1}], rules: [{backendRefs: [{name: far, "
       "namespace: other, port: 7070}]}]}"}));
  out.push_back(route(
      "b", "demo",
      {"{parentRefs: [{group: '', kind: Service, name: echo, sectionName: admin}], rules: "
       "[{matches: [{headers: [{name: env, value: prod}]}], backendRefs: [{name: v2, port: "
       "7070}]}]}",
       "{parentRefs: [{group: '', kind: Service, name: echo, port: 7070}, {name: gw}], rules: "
       "[{backendRefs: [{name: far, namespace: other, port: 7070}, {name: v1, port: 9090}]}]}"}));
  auto policy = [](const std::string& name, std::vector<GatewayObject> variants) {
    return Template{{kXdsVariantPolicyKind, "demo", name}, std::move(variants)};
  };
  out.push_back(policy("p", {Policy("p", "a", "{env: prod}", "2026-01-02T00:00:00Z"),
                             Policy("p", "a,b", "{env: dev}", "2026-01-02T00:00:00Z"),
                             Policy("p", "b", "{env: {bogus: x}}", "2026-01-02T00:00:00Z"),
                             Policy("p", "a/x,missing", "{version: v2}", "2026-01-02T00:00:00Z")}));
  out.push_back(policy("q", {Policy("q", "a", "{env: staging}", "2026-01-01T00:00:00Z"),
                             Policy("q", "b", "[{env: prod}, {team: x}]")}));
  out.push_back(
      route("c", "other",
            {"{parentRefs: [{group: '', kind: Service, name: far}], rules: [{backendRefs: [{name: "
             "v1, namespace: demo, port: 7070}]}]}",
             "{parentRefs: [{group: '', kind: Service, name: echo, namespace: demo}]}"}));
  return out;
}

// Random edits and deletions of every kind: after each, the incremental
// front end and builder serve what a fresh front end and builder make of
// the same objects, with the same statuses, and Reconcile() reported
// exactly the statuses that changed.
TEST(GatewayFrontEndRandomTest, MatchesATranslationFromScratchAfterEveryEdit) {
  const std::vector<Template> world = RandomWorld();
  std::mt19937 random(7);
  GatewayFrontEnd front_end;
  xds::IncrementalBuilder builder{xds::BuildOptions{}};
  std::map<xds::ObjectRef, GatewayObject> live;
  std::map<xds::ObjectRef, GatewayStatus> statuses;
  for (int step = 0; step < 400; ++step) {
    SCOPED_TRACE(absl::StrCat("step ", step));
    // One to three changes per flush.
    const int changes = 1 + static_cast<int>(random() % 3);
    std::set<xds::ObjectRef> removed;  // A route removed and back is new.
    for (int i = 0; i < changes; ++i) {
      const Template& pick = world[random() % world.size()];
      if (random() % 4 == 0) {
        front_end.Remove(pick.ref);
        live.erase(pick.ref);
        removed.insert(pick.ref);
      } else {
        const GatewayObject& variant = pick.variants[random() % pick.variants.size()];
        front_end.Upsert(variant);
        live.insert_or_assign(pick.ref, variant);
      }
    }
    front_end.Flush(builder);
    const xds::IncrementalBuilder::Result result = builder.Build();
    std::set<xds::ObjectRef> reported;
    for (const auto& status : front_end.Reconcile(builder, result)) {
      reported.insert(status->object);
    }

    GatewayFrontEnd fresh;
    xds::IncrementalBuilder fresh_builder{xds::BuildOptions{}};
    for (const auto& [ref, object] : live) fresh.Upsert(object);
    fresh.Flush(fresh_builder);
    const xds::IncrementalBuilder::Result whole = fresh_builder.Build();
    fresh.Reconcile(fresh_builder, whole);

    ASSERT_EQ(builder.rejected_count(), 0);
    ASSERT_EQ(builder.object_count(), fresh_builder.object_count());
    // With nothing generated (only slices, grants and policies held), a
    // builder that held objects and one that never did differ in how they
    // spell the empty snapshot's version.
    if (builder.object_count() > 0) {
      ASSERT_EQ(result.snapshot->version(), whole.snapshot->version());
    }
    std::set<xds::ObjectRef> changed;
    std::map<xds::ObjectRef, GatewayStatus> now;
    for (const auto& status : fresh.Statuses()) {
      const auto mine = front_end.StatusOf(status->object);
      ASSERT_NE(mine, nullptr) << status->object.ToString();
      EXPECT_EQ(*mine, *status) << status->object.ToString();
      auto before = statuses.find(status->object);
      if (before == statuses.end() || !(before->second == *mine) ||
          removed.count(status->object) > 0) {
        changed.insert(status->object);
      }
      now.emplace(status->object, *mine);
    }
    EXPECT_EQ(front_end.Statuses().size(), fresh.Statuses().size());
    EXPECT_EQ(reported, changed);
    statuses = std::move(now);
  }
}

}  // namespace
}  // namespace facet::controller::gateway
