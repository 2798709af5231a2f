// XdsVariantPolicies on GRPCRoutes: which policy applies to which target
// (GEP-713 conflicts, missing targets), the conditions bound per parent, and
// the parent's RouteConfiguration compiled into variants that are exclusive,
// covering and constrain the same keys (CheckVariantSet), each client's
// variant holding the routes meant for it.
#include "controller/gateway/translate/policies.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/gateway/translate/translate_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/constraints/variant_set.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::Json;
using ::facet::controller::gateway::testing::Parse;
using ::facet::controller::gateway::testing::Route;
using ::facet::controller::gateway::testing::Service;
using ::facet::controller::gateway::testing::World;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// The parent's scope in the bound tests: a Service in demo.
const ParentScope kDemo{"demo", "namespace"};

constexpr char kGreeter[] = R"({parentRefs: [{group: '', kind: Service, name: echo, port: 7070}],
  rules: [
    {name: canary, matches: [{method: {service: a.A}}], backendRefs: [{name: echo-v2, port: 7070}]},
    {name: stable, backendRefs: [{name: echo-v1, port: 7070}]}]})";

// Returns an XdsVariantPolicy demo/`name` with `targets` (a flow list) and
// `when`, created at `created` ("" unset).
GatewayObject Policy(const std::string& name, const std::string& targets, const std::string& when,
                     const std::string& created = "") {
  GatewayObject policy = Parse(absl::StrCat(
      "apiVersion: facet.dev/v1alpha1\nkind: XdsVariantPolicy\nmetadata: {name: ", name,
      ", namespace: demo, generation: 1",
      created.empty() ? "" : absl::StrCat(", creationTimestamp: \"", created, "\""),
      "}\nspec: {targetRefs: ", targets, ", when: ", when, "}"));
  EXPECT_FALSE(policy.has_errors()) << name;
  return policy;
}

std::string Target(const std::string& route, const std::string& section = "") {
  return absl::StrCat("{group: gateway.networking.k8s.io, kind: GRPCRoute, name: ", route,
                      section.empty() ? "" : absl::StrCat(", sectionName: ", section), "}");
}

const xds::ObjectRef kGreeterRef = {"GRPCRoute", "demo", "greeter"};

std::vector<std::string> Outcomes(const RoutePolicies& resolved) {
  std::vector<std::string> out;
  for (const TargetOutcome& outcome : resolved.outcomes) {
    out.push_back(absl::StrCat(outcome.policy.name, "[", outcome.target, "] ", outcome.reason, ": ",
                               outcome.message));
  }
  return out;
}

TEST(PoliciesTest, RuleTargetConditionsOnlyThatRule) {
  const GatewayObject route = Route("greeter", kGreeter);
  const GatewayObject policy =
      Policy("prod", absl::StrCat("[", Target("greeter", "canary"), "]"), "{env: prod}");
  const RoutePolicies resolved = ResolveRoutePolicies(kGreeterRef, &route, {&policy});
  EXPECT_THAT(Outcomes(resolved),
              ElementsAre("prod[0] Accepted: applies to GRPCRoute demo/greeter rule canary"));
  const RouteConditions conditions = ConditionsOf(resolved.applied);
  EXPECT_FALSE(conditions.route.has_value());
  ASSERT_THAT(conditions.rules, SizeIs(1));
  EXPECT_EQ(Json(conditions.rules.at(0)),
            nlohmann::json::parse(R"({"constraint": {"key": "env", "value": "prod"}})"));
}

TEST(PoliciesTest, OlderPolicyWinsAndTheOtherIsConflicted) {
  const GatewayObject route = Route("greeter", kGreeter);
  const std::string canary = absl::StrCat("[", Target("greeter", "canary"), "]");
  const GatewayObject newer = Policy("a-new", canary, "{env: dev}", "2026-02-01T00:00:00Z");
  const GatewayObject older = Policy("z-old", canary, "{env: prod}", "2026-01-01T00:00:00Z");
  const RoutePolicies resolved = ResolveRoutePolicies(kGreeterRef, &route, {&newer, &older});
  EXPECT_THAT(Outcomes(resolved),
              ElementsAre("a-new[0] Conflicted: demo/z-old (older) targets GRPCRoute "
                          "demo/greeter rule canary; only one policy applies",
                          "z-old[0] Accepted: applies to GRPCRoute demo/greeter rule canary"));
  ASSERT_THAT(resolved.applied, SizeIs(1));
  EXPECT_EQ(resolved.applied[0].policy.name, "z-old");
}

TEST(PoliciesTest, NamespaceNameBreaksTimestampTie) {
  const GatewayObject route = Route("greeter", kGreeter);
  const std::string canary = absl::StrCat("[", Target("greeter", "canary"), "]");
  const GatewayObject b = Policy("b", canary, "{env: dev}", "2026-01-01T00:00:00Z");
  const GatewayObject a = Policy("a", canary, "{env: prod}", "2026-01-01T00:00:00Z");
  const RoutePolicies resolved = ResolveRoutePolicies(kGreeterRef, &route, {&b, &a});
  EXPECT_THAT(Outcomes(resolved),
              ElementsAre("a[0] Accepted: applies to GRPCRoute demo/greeter rule canary",
                          "b[0] Conflicted: demo/a (as old, first by namespace/name) targets "
                          "GRPCRoute demo/greeter rule canary; only one policy applies"));
}

TEST(PoliciesTest, RouteTargetOverlapsEveryRuleTarget) {
  const GatewayObject route = Route("greeter", kGreeter);
  const GatewayObject whole = Policy("whole", absl::StrCat("[", Target("greeter"), "]"),
                                     "{env: prod}", "2026-01-01T00:00:00Z");
  const GatewayObject stable = Policy("stable", absl::StrCat("[", Target("greeter", "stable"), "]"),
                                      "{env: dev}", "2026-01-02T00:00:00Z");
  const RoutePolicies resolved = ResolveRoutePolicies(kGreeterRef, &route, {&stable, &whole});
  EXPECT_THAT(Outcomes(resolved),
              ElementsAre("stable[0] Conflicted: demo/whole (older) targets GRPCRoute "
                          "demo/greeter; only one policy applies",
                          "whole[0] Accepted: applies to GRPCRoute demo/greeter"));
  const RouteConditions conditions = ConditionsOf(resolved.applied);
  EXPECT_TRUE(conditions.route.has_value());
  EXPECT_THAT(conditions.rules, IsEmpty());
}

TEST(PoliciesTest, MissingRouteOrRuleIsTargetNotFound) {
  const GatewayObject route = Route("greeter", kGreeter);
  const GatewayObject policy =
      Policy("p", absl::StrCat("[", Target("greeter", "nope"), "]"), "{env: prod}");
  EXPECT_THAT(Outcomes(ResolveRoutePolicies(kGreeterRef, &route, {&policy})),
              ElementsAre("p[0] TargetNotFound: GRPCRoute demo/greeter has no rule named nope"));
  EXPECT_THAT(Outcomes(ResolveRoutePolicies(kGreeterRef, nullptr, {&policy})),
              ElementsAre("p[0] TargetNotFound: GRPCRoute demo/greeter does not exist"));
}

TEST(PoliciesTest, PoliciesPastTheBoundAreTheNewest) {
  // 20 routes on one parent, each made conditional as a whole by its own
  // policy: 20 conditions plus the default's complement.
  std::vector<GatewayObject> routes;
  std::vector<std::vector<AppliedPolicy>> applied(20);
  for (int i = 0; i < 20; ++i) routes.push_back(Route(absl::StrCat("r", i), kGreeter));
  std::vector<ParentRoutePolicies> parent;
  for (int i = 0; i < 20; ++i) {
    const GatewayObject policy =
        Policy(absl::StrCat("p", i), absl::StrCat("[", Target(absl::StrCat("r", i)), "]"),
               absl::StrCat("{env: e", i, "}"),
               absl::StrCat("2026-01-", i < 9 ? "0" : "", i + 1, "T00:00:00Z"));
    applied[i] = ResolveRoutePolicies(routes[i].ref, &routes[i], {&policy}).applied;
    parent.push_back({&routes[i], &applied[i]});
  }
  EXPECT_EQ(CountConditions(parent, kDemo), 22u);
  const std::set<xds::ObjectRef> left_out = PoliciesPastBound(parent, kDemo);
  // Once one route is unconditional the complement goes too: 16 left.
  std::set<std::string> names;
  for (const xds::ObjectRef& ref : left_out) names.insert(ref.name);
  EXPECT_EQ(names, (std::set<std::string>{"p16", "p17", "p18", "p19"}));
  EXPECT_EQ(CountConditions(parent, kDemo, left_out), 16u);
}

// A parent's translation with policies applied, read per client.
class PolicyVariantsTest : public ::testing::Test {
 protected:
  PolicyVariantsTest() {
    for (const char* name : {"echo", "echo-v1", "echo-v2"}) {
      world_.Add(Service(name, "{ports: [{name: grpc, port: 7070}]}"));
    }
  }

  // Translates echo:7070 with `routes`, each with the policies given for it;
  // checks the output builds and its variants pass CheckVariantSet.
  void Translate(const std::vector<const GatewayObject*>& routes,
                 const std::vector<const GatewayObject*>& policies,
                 const TranslateOptions& options = TranslateOptions()) {
    const GatewayObject& echo = world_.service("demo/echo");
    std::vector<RouteConditions> conditions;
    conditions.reserve(routes.size());
    std::vector<AttachedRoute> attached;
    for (const GatewayObject* route : routes) {
      conditions.push_back(ConditionsOf(ResolveRoutePolicies(route->ref, route, policies).applied));
      attached.push_back({route, {0}, &conditions.back()});
    }
    translation_ = TranslateParent(echo, std::get<ServiceInfo>(echo.spec).ports[0], attached,
                                   world_.Lookup(), options);
    const xds::ResourceObject& config = translation_.route_configuration;
    EXPECT_THAT(config.findings, IsEmpty());
    constraints_.clear();
    for (const xds::VariantSpec& variant : config.spec->variants) {
      absl::StatusOr<xds::Constraint> constraint = xds::Constraint::Compile(variant.constraints);
      ASSERT_TRUE(constraint.ok()) << constraint.status();
      constraints_.push_back(*constraint);
    }
    absl::StatusOr<xds::VariantSetReport> report = xds::CheckVariantSet(constraints_);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->ok()) << "variants overlap, leave a gap or differ in keys";
  }

  // The route names of the variant a client with `params` gets.
  std::vector<std::string> RoutesFor(const xds::ParameterSet& params) const {
    const auto& variants = translation_.route_configuration.spec->variants;
    std::vector<std::string> names;
    int matched = 0;
    for (size_t i = 0; i < variants.size(); ++i) {
      if (!constraints_[i].Matches(params)) continue;
      ++matched;
      const nlohmann::json resource = Json(variants[i].resource);
      for (const nlohmann::json& route : resource["virtual_hosts"][0]["routes"]) {
        names.push_back(route["name"]);
      }
    }
    EXPECT_EQ(matched, 1);
    return names;
  }

  World world_;
  ParentTranslation translation_;
  std::vector<xds::Constraint> constraints_;
};

TEST_F(PolicyVariantsTest, RuleOnlyForProd) {
  const GatewayObject route = Route("greeter", kGreeter);
  const GatewayObject policy =
      Policy("prod", absl::StrCat("[", Target("greeter", "canary"), "]"), "{env: prod}");
  Translate({&route}, {&policy});
  EXPECT_THAT(translation_.route_configuration.spec->variants, SizeIs(2));
  EXPECT_THAT(RoutesFor({{"env", "prod"}}),
              ElementsAre("demo/greeter/canary", "demo/greeter/stable"));
  EXPECT_THAT(RoutesFor({{"env", "dev"}}), ElementsAre("demo/greeter/stable"));
  EXPECT_THAT(RoutesFor({}), ElementsAre("demo/greeter/stable"));
}

TEST_F(PolicyVariantsTest, EveryRouteConditionalKeepsTheDefaultForOthers) {
  const GatewayObject route = Route("greeter", kGreeter);
  const GatewayObject policy =
      Policy("prod", absl::StrCat("[", Target("greeter"), "]"), "{env: prod}");
  Translate({&route}, {&policy});
  EXPECT_THAT(RoutesFor({{"env", "prod"}}),
              ElementsAre("demo/greeter/canary", "demo/greeter/stable", "facet/no-route"));
  EXPECT_THAT(RoutesFor({{"env", "dev"}}), ElementsAre("facet/default"));
  EXPECT_THAT(RoutesFor({}), ElementsAre("facet/default"));
}

TEST_F(PolicyVariantsTest, RouteConditionAndRuleConditionAreAnded) {
  const GatewayObject route = Route("greeter", kGreeter);
  const GatewayObject whole =
      Policy("whole", absl::StrCat("[", Target("greeter"), "]"), "{env: prod}");
  const GatewayObject other = Route("other", R"({parentRefs: [{group: '', kind: Service, name: echo,
      port: 7070}], rules: [{name: v2, matches: [{method: {service: b.B}}],
      backendRefs: [{name: echo-v2, port: 7070}]}]})");
  const GatewayObject rule =
      Policy("v2", absl::StrCat("[", Target("other", "v2"), "]"), "{version: v2}");
  Translate({&route, &other}, {&whole, &rule});
  EXPECT_THAT(
      RoutesFor({{"env", "prod"}, {"version", "v2"}}),
      ElementsAre("demo/greeter/canary", "demo/other/v2", "demo/greeter/stable", "facet/no-route"));
  EXPECT_THAT(RoutesFor({{"env", "prod"}}),
              ElementsAre("demo/greeter/canary", "demo/greeter/stable", "facet/no-route"));
  // Not every route is conditional as a whole: no default complement.
  EXPECT_THAT(RoutesFor({{"version", "v2"}}), ElementsAre("demo/other/v2", "facet/no-route"));
  EXPECT_THAT(RoutesFor({}), ElementsAre("facet/no-route"));
}

// A consumer route: GRPCRoute a/greeter on demo/echo (GEP-1294).
constexpr char kConsumer[] = R"({parentRefs: [{group: '', kind: Service, name: echo,
    namespace: demo, port: 7070}],
  rules: [{name: consumer, backendRefs: [{name: echo-v2, namespace: demo, port: 7070}]}]})";
constexpr char kProducer[] = R"({parentRefs: [{group: '', kind: Service, name: echo, port: 7070}],
  rules: [{name: producer, backendRefs: [{name: echo-v1, port: 7070}]}]})";

TEST_F(PolicyVariantsTest, ConsumerRouteIsForItsNamespaceAndProducerRouteForTheOthers) {
  const GatewayObject consumer = Route("greeter", kConsumer, "", "a");
  const GatewayObject producer = Route("greeter", kProducer);
  Translate({&consumer, &producer}, {});
  EXPECT_THAT(translation_.route_configuration.spec->variants, SizeIs(2));
  // Their match-all rules are conditional: facet/no-route stays after them.
  EXPECT_THAT(RoutesFor({{"namespace", "a"}}), ElementsAre("a/greeter/consumer", "facet/no-route"));
  EXPECT_THAT(RoutesFor({{"namespace", "b"}}),
              ElementsAre("demo/greeter/producer", "facet/no-route"));
  EXPECT_THAT(RoutesFor({}), ElementsAre("demo/greeter/producer", "facet/no-route"));
}

TEST_F(PolicyVariantsTest, ConsumerRoutesAloneLeaveTheDefaultToOtherNamespaces) {
  const GatewayObject in_a = Route("greeter", kConsumer, "", "a");
  const GatewayObject in_b = Route("greeter", kConsumer, "", "b");
  Translate({&in_a, &in_b}, {});
  EXPECT_THAT(RoutesFor({{"namespace", "a"}}), ElementsAre("a/greeter/consumer", "facet/no-route"));
  EXPECT_THAT(RoutesFor({{"namespace", "b"}}), ElementsAre("b/greeter/consumer", "facet/no-route"));
  EXPECT_THAT(RoutesFor({{"namespace", "c"}}), ElementsAre("facet/default"));
  EXPECT_THAT(RoutesFor({}), ElementsAre("facet/default"));
}

TEST_F(PolicyVariantsTest, PolicyOnAConsumerRouteIsAndedWithItsNamespace) {
  const GatewayObject consumer = Route("greeter", kConsumer, "", "a");
  const GatewayObject producer = Route("greeter", kProducer);
  // In the policy's namespace, a: it targets the consumer route.
  GatewayObject policy = Policy("prod", absl::StrCat("[", Target("greeter"), "]"), "{env: prod}");
  policy.ref.namespace_ = "a";
  Translate({&consumer, &producer}, {&policy});
  EXPECT_THAT(RoutesFor({{"namespace", "a"}, {"env", "prod"}}),
              ElementsAre("a/greeter/consumer", "facet/no-route"));
  // Clients of a without env=prod: no route of theirs, the default.
  EXPECT_THAT(RoutesFor({{"namespace", "a"}, {"env", "dev"}}), ElementsAre("facet/default"));
  EXPECT_THAT(RoutesFor({{"namespace", "b"}, {"env", "prod"}}),
              ElementsAre("demo/greeter/producer", "facet/no-route"));
}

TEST(PolicyBoundTest, ConsumerNamespacesShareTheBoundWithPolicies) {
  // A producer route with a policy per rule, and consumer routes from 13
  // namespaces: 13 scopes and the producer's rules' conditions, each ANDed
  // with NOT(the OR of the scopes).
  std::string rules;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&rules, i == 0 ? "" : ", ", "{name: r", i,
                    ", backendRefs: [{name: echo, port: 7070}]}");
  }
  const GatewayObject producer = Route(
      "greeter",
      absl::StrCat("{parentRefs: [{group: '', kind: Service, name: echo}], rules: [", rules, "]}"));
  std::vector<GatewayObject> policies;
  for (int i = 0; i < 4; ++i) {
    policies.push_back(Policy(
        absl::StrCat("p", i), absl::StrCat("[", Target("greeter", absl::StrCat("r", i)), "]"),
        absl::StrCat("{env: e", i, "}"), absl::StrCat("2026-01-0", i + 1, "T00:00:00Z")));
  }
  std::vector<const GatewayObject*> policy_ptrs;
  for (const GatewayObject& policy : policies) policy_ptrs.push_back(&policy);
  const std::vector<AppliedPolicy> applied =
      ResolveRoutePolicies(producer.ref, &producer, policy_ptrs).applied;
  std::vector<GatewayObject> consumers;
  for (int i = 0; i < 13; ++i) {
    consumers.push_back(Route("greeter", kConsumer, "", absl::StrCat("ns", i)));
  }
  std::vector<ParentRoutePolicies> parent = {{&producer, &applied}};
  for (const GatewayObject& consumer : consumers) parent.push_back({&consumer, nullptr});
  EXPECT_EQ(CountConditions(parent, kDemo), 17u);
  // The newest policies are left out, the namespaces never: without p3 its
  // rule has the producer scope alone (one more), so p2 goes too.
  const std::set<xds::ObjectRef> left_out = PoliciesPastBound(parent, kDemo);
  std::set<std::string> names;
  for (const xds::ObjectRef& ref : left_out) names.insert(ref.name);
  EXPECT_EQ(names, (std::set<std::string>{"p2", "p3"}));
  EXPECT_EQ(CountConditions(parent, kDemo, left_out), 16u);
  // Without consumer routes only the policies count.
  EXPECT_EQ(CountConditions({{&producer, &applied}}, kDemo), 4u);
}

}  // namespace
}  // namespace facet::controller::gateway
