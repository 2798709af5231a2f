#include "xds_server/snapshot/builder.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/digest.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/constraints/match_syntax.h"

namespace facet::xds {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

struct V {
  std::string match;     // Concise form, YAML; "" = unconstrained.
  std::string resource;  // YAML.
  std::string label = "";
};

ResourceObject Object(const std::string& name, const std::string& type,
                      const std::string& xds_name, const std::vector<V>& variants,
                      const std::string& authority = "", const std::string& ns = "demo") {
  ResourceObject object;
  object.ref = {kXdsResourceKind, ns, name};
  ResourceSpec spec;
  spec.type = type;
  spec.name = xds_name;
  spec.authority = authority;
  for (size_t i = 0; i < variants.size(); ++i) {
    VariantSpec variant;
    variant.label = variants[i].label.empty() ? "variants[" + std::to_string(i) + "]" : variants[i].label;
    if (!variants[i].match.empty()) {
      auto compiled = CompileMatch(YAML::Load(variants[i].match), "match");
      EXPECT_THAT(compiled, facet::testing::IsOk());
      if (compiled.ok()) variant.constraints = *compiled;
      variant.constraints_field = "spec.variants[" + std::to_string(i) + "].match";
    }
    variant.resource = YAML::Load(variants[i].resource);
    spec.variants.push_back(std::move(variant));
  }
  object.spec = std::move(spec);
  return object;
}

std::string ListenerFor(const std::string& route) {
  return R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: ")" +
         route +
         R"(", config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})";
}

std::string RouteTo(const std::string& cluster) {
  return R"({virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: ""}, route: {cluster: ")" +
         cluster + R"("}}]}]})";
}

std::string EdsCluster(const std::string& service = "") {
  return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}" +
         (service.empty() ? std::string() : ", service_name: \"" + service + "\"") + "}}";
}

std::string Endpoints(int port) {
  return "{endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: "
         "{address: {socket_address: {address: 127.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}

const ObjectStatus& StatusOf(const BuildResult& result, const std::string& name) {
  for (const auto& status : result.statuses) {
    if (status.ref.name == name) return status;
  }
  ADD_FAILURE() << "no status for " << name;
  static const ObjectStatus kNone;
  return kNone;
}

std::vector<std::string> Errors(const ObjectStatus& status) {
  std::vector<std::string> out;
  for (const auto& f : status.findings) {
    if (f.severity == Severity::kError) out.push_back(f.reason + " " + f.field + ": " + f.message);
  }
  return out;
}

std::vector<std::string> Warnings(const ObjectStatus& status) {
  std::vector<std::string> out;
  for (const auto& f : status.findings) {
    if (f.severity == Severity::kWarning) out.push_back(f.reason + " " + f.field + ": " + f.message);
  }
  return out;
}

BuildResult Build(const std::vector<ResourceObject>& objects, const Snapshot* previous = nullptr,
                  std::vector<AuthorityObject> authorities = {},
                  BuildOptions::AuthorityPolicy policy = BuildOptions::AuthorityPolicy::kWarnUndeclared) {
  BuildOptions options;
  options.authority_policy = policy;
  return BuildSnapshot(objects, authorities, previous, options);
}

// A complete old-style set: listener -> route (env variants) -> clusters -> endpoints.
std::vector<ResourceObject> GreeterObjects() {
  return {
      Object("greeter-listener", "listener", "greeter", {{"", ListenerFor("greeter-route")}}),
      Object("greeter-route", "route", "greeter-route",
             {{"{env: prod}", RouteTo("greeter-prod"), "prod"},
              {"{env: {not: prod}}", RouteTo("greeter-test"), "other"}}),
      Object("greeter-prod", "cluster", "greeter-prod", {{"", EdsCluster()}}),
      Object("greeter-test", "cluster", "greeter-test", {{"", EdsCluster()}}),
      Object("greeter-prod-endpoints", "endpoint", "greeter-prod", {{"", Endpoints(50051)}}),
      Object("greeter-test-endpoints", "endpoint", "greeter-test", {{"", Endpoints(50052)}}),
  };
}

TEST(VariantSpecTest, AssigningAResourceRebindsAndLeavesCopiesAlone) {
  // A copied spec shares its documents (those of the watch cache, in the
  // Kubernetes source): replacing one copy's must not write into the other.
  VariantSpec cached;
  cached.resource = YAML::Load("{name: r, x: 1}");
  VariantSpec built = cached;
  built.resource = YAML::Load("{name: r, x: 2}");
  EXPECT_EQ(cached.resource["x"].as<int>(), 1);
  EXPECT_EQ(built.resource["x"].as<int>(), 2);
  std::vector<VariantSpec> grown(1, cached);
  grown.resize(100);  // Moved as the vector grows: the documents stay shared.
  EXPECT_EQ(grown[0].resource["x"].as<int>(), 1);
}

TEST(BuildSnapshotTest, ServesAValidSetAndSelectsVariantsByParameters) {
  BuildResult result = Build(GreeterObjects());
  for (const auto& status : result.statuses) {
    EXPECT_TRUE(status.accepted) << status.ref.ToString();
    EXPECT_THAT(Errors(status), IsEmpty());
  }
  ASSERT_EQ(result.snapshot->size(), 6u);
  const ServedResource* route = result.snapshot->Find(RouteConfigurationType(), "greeter-route");
  ASSERT_NE(route, nullptr);
  ASSERT_NE(route->Select({{"env", "prod"}}), nullptr);
  EXPECT_EQ(route->Select({{"env", "prod"}})->label, "prod");
  EXPECT_EQ(route->Select({{"env", "test"}})->label, "other");
  EXPECT_EQ(route->Select({})->label, "other");
  const ServedResource* cluster = result.snapshot->Find(ClusterType(), "greeter-prod");
  ASSERT_NE(cluster, nullptr);
  EXPECT_FALSE(cluster->variants[0]->serialized.empty());
}

TEST(BuildSnapshotTest, VersionsAreContentDerived) {
  BuildResult a = Build(GreeterObjects());
  BuildResult b = Build(GreeterObjects());
  EXPECT_EQ(a.snapshot->version(), b.snapshot->version());
  std::vector<ResourceObject> changed = GreeterObjects();
  changed[4] = Object("greeter-prod-endpoints", "endpoint", "greeter-prod", {{"", Endpoints(50099)}});
  BuildResult c = Build(changed);
  EXPECT_NE(a.snapshot->version(), c.snapshot->version());
  auto version = [](const BuildResult& r, const ResourceType& type, const std::string& name) {
    return r.snapshot->Find(type, name)->variants[0]->version;
  };
  EXPECT_EQ(version(a, ClusterLoadAssignmentType(), "greeter-test"),
            version(c, ClusterLoadAssignmentType(), "greeter-test"));
  EXPECT_NE(version(a, ClusterLoadAssignmentType(), "greeter-prod"),
            version(c, ClusterLoadAssignmentType(), "greeter-prod"));
}

TEST(BuildSnapshotTest, VersionsAreXxh3DigestsOfTheDocumentedContent) {
  BuildResult result = Build(GreeterObjects());
  const ServedResource* route = result.snapshot->Find(RouteConfigurationType(), "greeter-route");
  ASSERT_NE(route, nullptr);
  uint64_t sum = 0;
  for (const ResourceType* type : AllResourceTypes()) {
    for (const auto& [name, resource] : result.snapshot->resources(*type)) {
      for (const auto& variant : resource->variants) {
        // Type URL, served name, canonical constraints, resource bytes.
        std::string constraints;
        variant->constraints.proto().SerializeToString(&constraints);
        DigestStream<64> digest;
        digest.AddField(type->type_url()).AddField(name).AddField(constraints);
        digest.AddField(variant->serialized);
        EXPECT_EQ(variant->version, DigestHex(digest.Finish())) << name;
        EXPECT_EQ(variant->version.size(), 16u);
      }
      sum += ResourceDigest(*resource);
    }
  }
  // The snapshot's version sums a digest per resource (order-independent).
  EXPECT_EQ(result.snapshot->version(), DigestHex(sum));
  DigestStream<64> resource_digest;
  resource_digest.AddField(route->type->type_url()).AddField(route->name);
  for (const auto& variant : route->variants) resource_digest.AddField(variant->version);
  EXPECT_EQ(ResourceDigest(*route), resource_digest.Finish());
}

TEST(BuildSnapshotTest, RejectsOverlappingVariantsNamingBothAndAWitness) {
  std::vector<ResourceObject> objects = GreeterObjects();
  objects[1] = Object("greeter-route", "route", "greeter-route",
                      {{"{env: [prod, test]}", RouteTo("greeter-prod"), "a"},
                       {"{env: [qa, test]}", RouteTo("greeter-test"), "b"}});
  BuildResult result = Build(objects);
  const ObjectStatus& status = StatusOf(result, "greeter-route");
  EXPECT_FALSE(status.accepted);
  EXPECT_THAT(Errors(status), ElementsAre(AllOf(HasSubstr("OverlappingVariants spec.variants[1]"),
                                                HasSubstr("\"a\" and \"b\" overlap"),
                                                HasSubstr("{env=test}"))));
  // The listener now references a route that is rejected.
  EXPECT_FALSE(StatusOf(result, "greeter-listener").accepted);
  EXPECT_THAT(Errors(StatusOf(result, "greeter-listener")),
              ElementsAre(HasSubstr("references route \"greeter-route\", which is rejected "
                                    "(see demo/greeter-route)")));
  // Everything else still serves.
  EXPECT_NE(result.snapshot->Find(ClusterType(), "greeter-prod"), nullptr);
  EXPECT_EQ(result.snapshot->Find(ListenerType(), "greeter"), nullptr);
}

TEST(BuildSnapshotTest, RejectsKeySetMismatch) {
  std::vector<ResourceObject> objects = GreeterObjects();
  objects[1] = Object("greeter-route", "route", "greeter-route",
                      {{"{env: prod}", RouteTo("greeter-prod"), "a"},
                       {"{version: v1}", RouteTo("greeter-test"), "b"}});
  BuildResult result = Build(objects);
  EXPECT_THAT(Errors(StatusOf(result, "greeter-route")),
              Contains(HasSubstr("KeySetMismatch spec.variants[1]: variant \"b\" constrains keys {version}")));
}

TEST(BuildSnapshotTest, WarnsAboutGapsWithAnExample) {
  std::vector<ResourceObject> objects = GreeterObjects();
  objects[1] = Object("greeter-route", "route", "greeter-route",
                      {{"{env: prod}", RouteTo("greeter-prod"), "prod"},
                       {"{env: test}", RouteTo("greeter-test"), "test"}});
  // A gap in the route is fine for the listener only if the listener's
  // variant never needs it; the unconstrained listener does, so give it
  // matching variants.
  objects[0] = Object("greeter-listener", "listener", "greeter",
                      {{"{env: prod}", ListenerFor("greeter-route"), "prod"},
                       {"{env: test}", ListenerFor("greeter-route"), "test"}});
  BuildResult result = Build(objects);
  const ObjectStatus& route = StatusOf(result, "greeter-route");
  EXPECT_TRUE(route.accepted);
  EXPECT_THAT(Warnings(route), ElementsAre(HasSubstr("VariantGap spec.variants: gap: no variant matches")));
  EXPECT_TRUE(StatusOf(result, "greeter-listener").accepted);
}

TEST(BuildSnapshotTest, RejectsVariantWhoseReferenceIsNotCoveredForAllItsParameters) {
  std::vector<ResourceObject> objects = GreeterObjects();
  // The route's non-prod variant sends env=test clients to a cluster that only
  // has a variant for env=prod.
  objects[3] = Object("greeter-test", "cluster", "greeter-test", {{"{env: prod}", EdsCluster()}});
  BuildResult result = Build(objects);
  const ObjectStatus& route = StatusOf(result, "greeter-route");
  EXPECT_FALSE(route.accepted);
  EXPECT_THAT(Errors(route),
              ElementsAre(AllOf(HasSubstr("DanglingReference spec.variants[1].resource.virtual_hosts[0].routes[0].route.cluster"),
                                HasSubstr("select variant \"other\""),
                                HasSubstr("no variant of cluster \"greeter-test\""))));
  // The witness is a real parameter set for which the reference dangles.
  EXPECT_THAT(Errors(route), ElementsAre(Not(HasSubstr("env=prod}"))));
}

TEST(BuildSnapshotTest, RejectionCascadesToReferrersWithoutHidingTheCause) {
  std::vector<ResourceObject> objects = GreeterObjects();
  objects[2] = Object("greeter-prod", "cluster", "greeter-prod", {{"", "{type: EDS, bogus: 1}"}});
  BuildResult result = Build(objects);
  EXPECT_THAT(Errors(StatusOf(result, "greeter-prod")),
              ElementsAre(HasSubstr("InvalidResource spec.variants[0].resource.bogus: unknown field")));
  // Referrers point at the rejected object, not at a typo of their own.
  const ObjectStatus& route = StatusOf(result, "greeter-route");
  EXPECT_THAT(Errors(route),
              ElementsAre(HasSubstr("DanglingReference spec.variants[0].resource.virtual_hosts[0]."
                                    "routes[0].route.cluster: references cluster \"greeter-prod\", "
                                    "which is rejected (see demo/greeter-prod)")));
  EXPECT_EQ(route.findings[0].cause, (ObjectRef{kXdsResourceKind, "demo", "greeter-prod"}));
  EXPECT_THAT(Errors(StatusOf(result, "greeter-listener")),
              ElementsAre(HasSubstr("references route \"greeter-route\", which is rejected "
                                    "(see demo/greeter-route)")));
  EXPECT_NE(result.snapshot->Find(ClusterType(), "greeter-test"), nullptr);

  // Reports list the cause before what it affects.
  std::vector<std::string> order;
  for (const ObjectStatus* status : CausesFirst(result.statuses)) {
    if (!status->accepted) order.push_back(status->ref.name);
  }
  EXPECT_THAT(order, ElementsAre("greeter-prod", "greeter-route", "greeter-listener"));
}

TEST(BuildSnapshotTest, ReferenceToAnUndeclaredNameDangles) {
  std::vector<ResourceObject> objects = GreeterObjects();
  objects.erase(objects.begin() + 2);  // greeter-prod
  BuildResult result = Build(objects);
  const ObjectStatus& route = StatusOf(result, "greeter-route");
  EXPECT_THAT(Errors(route), ElementsAre(HasSubstr("cluster \"greeter-prod\" is not served")));
  EXPECT_EQ(route.findings[0].cause, std::nullopt);
}

TEST(BuildSnapshotTest, CausesFirstKeepsOrderOtherwiseAndSurvivesCycles) {
  std::vector<ObjectStatus> statuses(4);
  for (size_t i = 0; i < statuses.size(); ++i) {
    statuses[i].ref = {kXdsResourceKind, "demo", std::string(1, static_cast<char>('a' + i))};
  }
  auto caused_by = [](size_t i) {
    Finding finding{Severity::kError, "DanglingReference", "spec", "x"};
    finding.cause = ObjectRef{kXdsResourceKind, "demo", std::string(1, static_cast<char>('a' + i))};
    return finding;
  };
  statuses[0].findings = {caused_by(2)};  // a after c
  statuses[2].findings = {caused_by(3)};  // c after d
  statuses[3].findings = {caused_by(2)};  // d after c: a cycle
  std::vector<std::string> order;
  for (const ObjectStatus* status : CausesFirst(statuses)) order.push_back(status->ref.name);
  EXPECT_THAT(order, ElementsAre("d", "c", "a", "b"));
}

TEST(BuildSnapshotTest, CausesFirstOrdersStatusesHeldByPointerAlike) {
  std::vector<std::shared_ptr<const ObjectStatus>> statuses;
  for (char name : {'a', 'b', 'c'}) {
    ObjectStatus status;
    status.ref = {kXdsResourceKind, "demo", std::string(1, name)};
    if (name == 'a') {
      Finding finding{Severity::kError, "DanglingReference", "spec", "x"};
      finding.cause = ObjectRef{kXdsResourceKind, "demo", "c"};
      status.findings = {finding};
    }
    statuses.push_back(std::make_shared<const ObjectStatus>(std::move(status)));
  }
  std::vector<std::string> order;
  for (const ObjectStatus* status : CausesFirst(statuses)) order.push_back(status->ref.name);
  EXPECT_THAT(order, ElementsAre("c", "a", "b"));
}

TEST(ObjectRefTest, OrdersByKindThenNamespaceThenName) {
  const ObjectRef a{kXdsAuthorityKind, "", "z"};
  const ObjectRef b{kXdsResourceKind, "alpha", "z"};
  const ObjectRef c{kXdsResourceKind, "beta", "a"};
  const ObjectRef d{kXdsResourceKind, "beta", "b"};
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(b < c);
  EXPECT_TRUE(c < d);
  EXPECT_FALSE(d < c);
  EXPECT_FALSE(c < c);
  const ObjectRef prefix{kXdsResourceKind, "beta", "a-longer"};
  EXPECT_TRUE(c < prefix);
  EXPECT_FALSE(prefix < c);
}

TEST(BuildSnapshotTest, UnknownTypeSuggestsTheNearestOne) {
  BuildResult result = Build({Object("typo", "route_", "x", {{"", RouteTo("c")}}),
                              Object("far", "secret", "y", {{"", RouteTo("c")}})});
  EXPECT_THAT(Errors(StatusOf(result, "typo")),
              ElementsAre(HasSubstr("unknown type \"route_\"; did you mean \"route\"?")));
  EXPECT_THAT(Errors(StatusOf(result, "far")), ElementsAre(Not(HasSubstr("did you mean"))));
}

TEST(BuildSnapshotTest, KeepsServingThePreviousGoodRevision) {
  BuildResult first = Build(GreeterObjects());
  const std::string old_version =
      first.snapshot->Find(ClusterLoadAssignmentType(), "greeter-prod")->variants[0]->version;
  std::vector<ResourceObject> objects = GreeterObjects();
  objects[4] = Object("greeter-prod-endpoints", "endpoint", "greeter-prod",
                      {{"", "{endpoints: [{priority: high}]}"}});
  BuildResult second = Build(objects, first.snapshot.get());
  const ObjectStatus& status = StatusOf(second, "greeter-prod-endpoints");
  EXPECT_FALSE(status.accepted);
  EXPECT_TRUE(status.serving_previous);
  EXPECT_THAT(Errors(status), ElementsAre(HasSubstr("priority")));
  const ServedResource* served = second.snapshot->Find(ClusterLoadAssignmentType(), "greeter-prod");
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->variants[0]->version, old_version);
  ASSERT_EQ(status.variants.size(), 1u);  // The status reports what is served.
  EXPECT_EQ(status.variants[0]->version, old_version);
  // Nothing that depends on it is disturbed.
  for (const auto& s : second.statuses) {
    if (s.ref.name != "greeter-prod-endpoints") {
      EXPECT_TRUE(s.accepted) << s.ref.ToString();
    }
  }
}

TEST(BuildSnapshotTest, FallsBackToPreviousRevisionWhenNewOneDangles) {
  BuildResult first = Build(GreeterObjects());
  std::vector<ResourceObject> objects = GreeterObjects();
  objects[1] = Object("greeter-route", "route", "greeter-route",
                      {{"{env: prod}", RouteTo("greeter-missing"), "prod"},
                       {"{env: {not: prod}}", RouteTo("greeter-test"), "other"}});
  BuildResult second = Build(objects, first.snapshot.get());
  const ObjectStatus& status = StatusOf(second, "greeter-route");
  EXPECT_FALSE(status.accepted);
  EXPECT_TRUE(status.serving_previous);
  EXPECT_THAT(Errors(status), ElementsAre(HasSubstr("cluster \"greeter-missing\" is not served")));
  const ServedResource* route = second.snapshot->Find(RouteConfigurationType(), "greeter-route");
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->variants[0]->version,
            first.snapshot->Find(RouteConfigurationType(), "greeter-route")->variants[0]->version);
  EXPECT_TRUE(StatusOf(second, "greeter-listener").accepted);
}

TEST(BuildSnapshotTest, DeletedObjectIsGoneAndReferrersAreRejected) {
  BuildResult first = Build(GreeterObjects());
  std::vector<ResourceObject> objects = GreeterObjects();
  objects.erase(objects.begin() + 5);  // greeter-test endpoints deleted.
  BuildResult second = Build(objects, first.snapshot.get());
  EXPECT_EQ(second.snapshot->Find(ClusterLoadAssignmentType(), "greeter-test"), nullptr);
  // The cluster's previous revision referenced it too, so it cannot serve.
  const ObjectStatus& cluster = StatusOf(second, "greeter-test");
  EXPECT_FALSE(cluster.accepted);
  EXPECT_FALSE(cluster.serving_previous);
  EXPECT_EQ(second.snapshot->Find(ClusterType(), "greeter-test"), nullptr);
}

TEST(BuildSnapshotTest, DuplicateNameKeepsTheObjectThatServedItBefore) {
  std::vector<ResourceObject> objects = GreeterObjects();
  BuildResult first = Build(objects);
  objects.insert(objects.begin(),
                 Object("aaa-impostor", "cluster", "greeter-prod", {{"", EdsCluster()}}));
  BuildResult second = Build(objects, first.snapshot.get());
  EXPECT_THAT(Errors(StatusOf(second, "aaa-impostor")),
              ElementsAre(HasSubstr("duplicate: cluster \"greeter-prod\" is already declared by "
                                    "demo/greeter-prod")));
  // Without history, the first by namespace/name wins.
  BuildResult fresh = Build(objects);
  EXPECT_TRUE(StatusOf(fresh, "aaa-impostor").accepted);
  EXPECT_THAT(Errors(StatusOf(fresh, "greeter-prod")), ElementsAre(HasSubstr("duplicate")));
}

TEST(BuildSnapshotTest, GeneratedObjectYieldsTheNameItServedBefore) {
  ResourceObject generated =
      Object("cluster/greeter-prod", "cluster", "greeter-prod", {{"", EdsCluster()}});
  generated.ref.kind = kGeneratedKind;
  generated.generated_from = "Service demo/greeter port 50051";
  std::vector<ResourceObject> objects = GreeterObjects();
  objects.erase(objects.begin() + 2);  // demo/greeter-prod, the cluster.
  objects.push_back(generated);
  BuildResult first = Build(objects);
  ASSERT_NE(first.snapshot->Find(ClusterType(), "greeter-prod"), nullptr);
  ASSERT_EQ(first.snapshot->Find(ClusterType(), "greeter-prod")->owner, generated.ref);
  // The XdsResource appears: it wins though the generated object served.
  std::vector<ResourceObject> both = GreeterObjects();
  both.push_back(generated);
  BuildResult second = Build(both, first.snapshot.get());
  EXPECT_EQ(second.snapshot->Find(ClusterType(), "greeter-prod")->owner.name, "greeter-prod");
  EXPECT_THAT(Errors(StatusOf(second, "cluster/greeter-prod")),
              ElementsAre(HasSubstr("already declared by XdsResource demo/greeter-prod")));
  EXPECT_THAT(Warnings(StatusOf(second, "greeter-prod")),
              ElementsAre(HasSubstr("also generated for Service demo/greeter port 50051")));
}

TEST(BuildSnapshotTest, EnforcesAuthorityAdmission) {
  const std::string cla_name = "greeter";
  ResourceObject object = Object("e", "endpoint", cla_name, {{"", Endpoints(1)}}, "a.example");
  AuthorityObject authority;
  authority.ref = {kXdsAuthorityKind, "", "a-example"};
  authority.authority = "a.example";
  authority.allowed_namespaces = {"other"};
  BuildResult refused = Build({object}, nullptr, {authority}, BuildOptions::AuthorityPolicy::kEnforce);
  EXPECT_THAT(Errors(StatusOf(refused, "e")),
              ElementsAre(HasSubstr("AuthorityNotAllowed spec.authority: authority \"a.example\" does "
                                    "not admit namespace \"demo\"")));
  authority.allowed_namespaces = {"demo"};
  BuildResult admitted = Build({object}, nullptr, {authority}, BuildOptions::AuthorityPolicy::kEnforce);
  EXPECT_TRUE(StatusOf(admitted, "e").accepted);
  EXPECT_NE(admitted.snapshot->Find(ClusterLoadAssignmentType(),
                                    "xdstp://a.example/envoy.config.endpoint.v3.ClusterLoadAssignment/greeter"),
            nullptr);
  BuildResult undeclared = Build({object}, nullptr, {}, BuildOptions::AuthorityPolicy::kEnforce);
  EXPECT_THAT(Errors(StatusOf(undeclared, "e")),
              ElementsAre(HasSubstr("no XdsAuthority declares authority \"a.example\"")));
  BuildResult lint = Build({object}, nullptr, {}, BuildOptions::AuthorityPolicy::kWarnUndeclared);
  EXPECT_TRUE(StatusOf(lint, "e").accepted);
  EXPECT_THAT(Warnings(StatusOf(lint, "e")), ElementsAre(HasSubstr("AuthorityNotAllowed")));
}

TEST(BuildSnapshotTest, RejectsInvalidAuthorityObjects) {
  AuthorityObject bad;
  bad.ref = {kXdsAuthorityKind, "", "bad"};
  bad.authority = "a/b";
  bad.allowed_namespaces = {"Not_A_Namespace"};
  AuthorityObject dup1, dup2;
  dup1.ref = {kXdsAuthorityKind, "", "one"};
  dup2.ref = {kXdsAuthorityKind, "", "two"};
  dup1.authority = dup2.authority = "x.example";
  BuildResult result = Build({}, nullptr, {bad, dup1, dup2});
  EXPECT_THAT(Errors(StatusOf(result, "bad")),
              ElementsAre(HasSubstr("spec.authority"), HasSubstr("spec.allowedNamespaces[0]")));
  EXPECT_TRUE(StatusOf(result, "one").accepted);
  EXPECT_THAT(Errors(StatusOf(result, "two")), ElementsAre(HasSubstr("already declared by xdsauthority/one")));
}

TEST(BuildSnapshotTest, RejectedAuthorityDoesNotClaimItsName) {
  AuthorityObject bad, good;
  bad.ref = {kXdsAuthorityKind, "", "a-bad"};
  good.ref = {kXdsAuthorityKind, "", "b-good"};
  bad.authority = good.authority = "a.example";
  bad.allowed_namespaces = {"Not_Valid"};
  good.allowed_namespaces = {"demo"};
  ResourceObject object = Object("e", "endpoint", "n", {{"", Endpoints(1)}}, "a.example");
  BuildResult result = Build({object}, nullptr, {bad, good}, BuildOptions::AuthorityPolicy::kEnforce);
  EXPECT_FALSE(StatusOf(result, "a-bad").accepted);
  EXPECT_TRUE(StatusOf(result, "b-good").accepted);
  EXPECT_TRUE(StatusOf(result, "e").accepted);
}

TEST(BuildSnapshotTest, RejectsOldStyleNamesWhenDisallowed) {
  BuildOptions options;
  options.allow_old_style_names = false;
  BuildResult result = BuildSnapshot({Object("e", "endpoint", "plain", {{"", Endpoints(1)}})}, {},
                                     nullptr, options);
  EXPECT_THAT(Errors(StatusOf(result, "e")), ElementsAre(HasSubstr("old-style")));
}

TEST(BuildSnapshotTest, ReferenceCyclesAndSelfReferencesTerminate) {
  auto aggregate = [](const std::string& a, const std::string& b) {
    return "{cluster_type: {name: aggregate, typed_config: {\"@type\": "
           "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig, clusters: [" +
           a + ", " + b + "]}}}";
  };
  BuildResult result = Build({Object("a", "cluster", "a", {{"", aggregate("b", "a")}}),
                              Object("b", "cluster", "b", {{"", aggregate("a", "missing")}})});
  // Each names every reference that fails, the other's included.
  EXPECT_THAT(Errors(StatusOf(result, "b")),
              ElementsAre(HasSubstr("clusters[0]: references cluster \"a\", which is rejected"),
                          HasSubstr("clusters[1]: dangling reference: cluster \"missing\" is not "
                                    "served")));
  EXPECT_THAT(Errors(StatusOf(result, "a")),
              ElementsAre(HasSubstr("\"b\", which is rejected (see demo/b)")));
  EXPECT_EQ(result.snapshot->size(), 0u);
}

TEST(BuildSnapshotTest, ChecksSpecNameRules) {
  BuildResult result = Build({
      Object("typed", "endpoint", "xdstp://a.example/envoy.config.cluster.v3.Cluster/x",
             {{"", Endpoints(1)}}),
      Object("glob", "endpoint", "xdstp://a.example/envoy.config.endpoint.v3.ClusterLoadAssignment/*",
             {{"", Endpoints(1)}}),
      Object("named", "endpoint", "n", {{"", "{cluster_name: other}"}}),
      Object("unknown", "secret", "n", {{"", "{}"}}),
  });
  EXPECT_THAT(Errors(StatusOf(result, "typed")), ElementsAre(HasSubstr("the type in the name is")));
  EXPECT_THAT(Errors(StatusOf(result, "glob")), ElementsAre(HasSubstr("glob")));
  EXPECT_THAT(Errors(StatusOf(result, "named")),
              ElementsAre(HasSubstr("does not match the served name \"n\"")));
  EXPECT_THAT(Errors(StatusOf(result, "unknown")), ElementsAre(HasSubstr("unknown type \"secret\"")));
}

TEST(BuildSnapshotTest, RejectsDirectiveInIdWithAuthority) {
  BuildResult result =
      Build({Object("e", "endpoint", "greeter#alt=x", {{"", Endpoints(1)}}, "a.example")});
  EXPECT_THAT(Errors(StatusOf(result, "e")), ElementsAre(HasSubstr("processing directives")));
}

TEST(BuildSnapshotTest, RejectsContextParamsWithoutAuthority) {
  ResourceObject object = Object("e", "endpoint", "n", {{"", Endpoints(1)}});
  object.spec->context_params["k"] = "v";
  EXPECT_THAT(Errors(StatusOf(Build({object}), "e")), ElementsAre(HasSubstr("need spec.authority")));
}

TEST(BuildSnapshotTest, XdstpEdsClusterNeedsServiceName) {
  BuildResult result = Build({Object("c", "cluster", "c", {{"", EdsCluster()}}, "a.example")});
  EXPECT_THAT(Errors(StatusOf(result, "c")),
              ElementsAre(HasSubstr("InvalidResource spec.variants[0].resource.eds_cluster_config.service_name")));
}

TEST(BuildSnapshotTest, RejectsDuplicateVariantLabels) {
  BuildResult result = Build({Object("e", "endpoint", "n",
                                     {{"{env: a}", Endpoints(1), "x"}, {"{env: b}", Endpoints(2), "x"}})});
  EXPECT_THAT(Errors(StatusOf(result, "e")), ElementsAre(HasSubstr("duplicate variant name \"x\"")));
}

TEST(BuildSnapshotTest, ReportsObjectsTheSourceCouldNotParse) {
  ResourceObject broken;
  broken.ref = {kXdsResourceKind, "demo", "broken"};
  broken.findings.push_back({Severity::kError, "InvalidSpec", "spec.variants", "is required"});
  BuildResult result = Build({broken});
  EXPECT_FALSE(StatusOf(result, "broken").accepted);
  EXPECT_THAT(Errors(StatusOf(result, "broken")), ElementsAre(HasSubstr("is required")));
}

TEST(BuildSnapshotTest, EnforcesVariantLimit) {
  BuildOptions options;
  options.limits.max_variants_per_resource = 2;
  std::vector<V> variants = {{"{env: a}", Endpoints(1)}, {"{env: b}", Endpoints(2)}, {"{env: c}", Endpoints(3)}};
  BuildResult result = BuildSnapshot({Object("e", "endpoint", "n", variants)}, {}, nullptr, options);
  EXPECT_THAT(Errors(StatusOf(result, "e")), ElementsAre(HasSubstr("3 variants; the limit is 2")));
}

}  // namespace
}  // namespace facet::xds
