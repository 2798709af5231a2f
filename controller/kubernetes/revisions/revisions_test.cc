#include "controller/kubernetes/revisions/revisions.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/digest.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {
namespace {

using ::facet::testing::FakeKubeClient;
using ::facet::testing::IsOk;
using kube::StringAt;

constexpr char kResources[] = "/apis/facet.dev/v1alpha1/xdsresources";
constexpr char kRevisions[] = "/apis/apps/v1/controllerrevisions";
constexpr char kRoutes[] = "/apis/gateway.networking.k8s.io/v1/grpcroutes";

// Objects demo/web of two kinds, "$PORT" standing for the port they send
// to: an XdsResource and a GRPCRoute (the XdsResource's name).
constexpr char kResourceWeb[] =
    "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: web, namespace: demo},"
    " spec: {type: endpoint, name: web, variants: [{resource: {endpoints: [{lb_endpoints: "
    "[{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: $PORT}}}}]}]}}]}}";
constexpr char kGrpcRouteWeb[] =
    "{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, metadata: {name: web, "
    "namespace: demo}, spec: {parentRefs: [{group: '', kind: Service, name: web, port: 80}], "
    "rules: [{backendRefs: [{name: web, port: $PORT}]}]}}";

// Loads `yaml` with "$PORT" replaced by `port`, at generation `generation`.
YAML::Node Owner(absl::string_view yaml, int port, int generation) {
  YAML::Node owner = YAML::Load(absl::StrReplaceAll(yaml, {{"$PORT", absl::StrCat(port)}}));
  owner["metadata"]["generation"] = generation;
  return owner;
}

YAML::Node Route(int port, int generation) { return Owner(kResourceWeb, port, generation); }
YAML::Node GrpcRoute(int port, int generation) { return Owner(kGrpcRouteWeb, port, generation); }

std::vector<YAML::Node> RevisionsOf(FakeKubeClient& client) {
  std::vector<YAML::Node> out;
  for (const auto& [key, revision] : client.Objects(kRevisions)) out.push_back(revision);
  return out;
}

// Expects `revision` to be XdsResource demo/web's and to hold its spec at
// generation 3.
void ExpectHoldsWebAtGeneration3(const YAML::Node& revision) {
  EXPECT_EQ(OwnerKeyOf(revision), "XdsResource/demo/web");
  std::optional<xds::ResourceObject> last_good = LastGoodOf(revision);
  ASSERT_TRUE(last_good.has_value());
  EXPECT_EQ(last_good->ref.ToString(), "demo/web");
  EXPECT_EQ(last_good->generation, 3);
  EXPECT_TRUE(last_good->findings.empty());
  ASSERT_TRUE(last_good->spec.has_value());
  EXPECT_EQ(last_good->spec->name, "web");
  EXPECT_EQ(last_good->spec->variants.size(), 1u);
}

TEST(RevisionsTest, NameFollowsTheSpecOnly) {
  auto a = RevisionName(Route(80, 1));
  auto b = RevisionName(Route(80, 7));
  auto c = RevisionName(Route(81, 1));
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_EQ(a->rfind("web-", 0), 0u);
}

// Stores demo/web (port 80, generation 3) and records its first revision;
// returns the stored object.
YAML::Node PutAndRecord(FakeKubeClient& client, RevisionWriter& writer) {
  client.Put(kResources, Route(80, 3));
  YAML::Node owner = client.Objects(kResources)["demo/web"];
  EXPECT_THAT(writer.Record(owner, {}), IsOk());
  return owner;
}

TEST(RevisionsTest, RecordsOwnedRevisionThatParsesBackToTheSpec) {
  FakeKubeClient client;
  RevisionWriter writer(client);
  const YAML::Node owner = PutAndRecord(client, writer);
  std::vector<YAML::Node> revisions = RevisionsOf(client);
  ASSERT_EQ(revisions.size(), 1u);
  const YAML::Node& revision = revisions[0];
  EXPECT_EQ(StringAt(revision, {"revision"}), "3");
  EXPECT_EQ(StringAt(revision, {"metadata", "labels", kRevisionOfLabel}), "XdsResource");
  EXPECT_EQ(StringAt(kube::FieldAt(revision, {"metadata", "ownerReferences"})[0], {"uid"}),
            StringAt(owner, {"metadata", "uid"}));
  ExpectHoldsWebAtGeneration3(revision);

  // Already recorded: nothing to write.
  absl::StatusOr<bool> again = writer.Record(owner, revisions);
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(*again);
}

TEST(RevisionsTest, NameIsTheOwnerAndTenHexDigitsOfTheSpecsDigest) {
  const YAML::Node owner = Route(80, 1);
  absl::StatusOr<std::string> spec = json::YamlToJson(owner["spec"], "spec");
  ASSERT_THAT(spec, IsOk());
  auto name = RevisionName(owner);
  ASSERT_THAT(name, IsOk());
  EXPECT_EQ(*name, "web-" + xds::DigestHex(*spec).substr(0, 10));
}

TEST(RevisionsTest, ARevisionOfTheSameSpecUnderAnEarlierNameIsNotWrittenAgain) {
  // Written before the digest scheme changed: another name, the same spec.
  FakeKubeClient client;
  RevisionWriter writer(client);
  const YAML::Node owner = PutAndRecord(client, writer);
  std::vector<YAML::Node> revisions = RevisionsOf(client);
  ASSERT_EQ(revisions.size(), 1u);
  revisions[0]["metadata"]["name"] = "web-3f2a9c01de";  // SHA-256's first ten digits.
  absl::StatusOr<bool> again = writer.Record(owner, revisions);
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(*again);
  // Its last good revision still reads back.
  std::optional<xds::ResourceObject> last_good = LastGoodOf(revisions[0]);
  ASSERT_TRUE(last_good.has_value());
  EXPECT_EQ(last_good->generation, 3);
  // A changed spec is written.
  client.Put(kResources, Route(81, 4));
  absl::StatusOr<bool> changed = writer.Record(client.Objects(kResources)["demo/web"], revisions);
  ASSERT_THAT(changed, IsOk());
  EXPECT_TRUE(*changed);
}

TEST(RevisionsTest, PrunesAllButTheNewestAndGoesWithItsOwner) {
  FakeKubeClient client;
  RevisionWriter writer(client, /*keep=*/2);
  for (int generation = 1; generation <= 4; ++generation) {
    client.Put(kResources, Route(8000 + generation, generation));
    ASSERT_THAT(writer.Record(client.Objects(kResources)["demo/web"], RevisionsOf(client)), IsOk());
  }
  std::vector<std::string> kept;
  for (const YAML::Node& revision : RevisionsOf(client)) kept.push_back(StringAt(revision, {"revision"}));
  EXPECT_THAT(kept, ::testing::UnorderedElementsAre("3", "4"));
  ASSERT_TRUE(client.Delete(kResources, "demo", "web"));
  EXPECT_TRUE(RevisionsOf(client).empty());
}

// The revisions of the owner with RevisionOwnerKey `key`.
std::vector<YAML::Node> RevisionsOf(FakeKubeClient& client, const std::string& key) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& revision : RevisionsOf(client)) {
    if (OwnerKeyOf(revision) == key) out.push_back(revision);
  }
  return out;
}

TEST(RevisionsTest, SameNamedObjectsOfTwoKindsKeepTwoHistories) {
  FakeKubeClient client;
  RevisionWriter writer(client, /*keep=*/2);
  PutAndRecord(client, writer);
  for (int generation = 1; generation <= 3; ++generation) {
    client.Put(kRoutes, GrpcRoute(8000 + generation, generation));
    const YAML::Node route = client.Objects(kRoutes)["demo/web"];
    ASSERT_THAT(writer.Record(route, RevisionsOf(client, "GRPCRoute/demo/web")), IsOk());
  }
  // The route's pruning left the resource's revision alone.
  std::vector<YAML::Node> resource_revisions = RevisionsOf(client, "XdsResource/demo/web");
  std::vector<YAML::Node> route_revisions = RevisionsOf(client, "GRPCRoute/demo/web");
  ASSERT_EQ(resource_revisions.size(), 1u);
  ASSERT_EQ(route_revisions.size(), 2u);
  EXPECT_EQ(RevisionsOf(client).size(), 3u);
  EXPECT_EQ(RevisionOwnerKey({"GRPCRoute", "demo", "web"}), "GRPCRoute/demo/web");

  const YAML::Node& route_revision =
      StringAt(route_revisions[0], {"revision"}) == "3" ? route_revisions[0] : route_revisions[1];
  EXPECT_EQ(StringAt(route_revision, {"metadata", "labels", kRevisionOfLabel}), "GRPCRoute");
  EXPECT_EQ(StringAt(route_revision, {"metadata", "labels", kRevisionOwnerLabel}), "web");
  const YAML::Node reference = kube::FieldAt(route_revision, {"metadata", "ownerReferences"})[0];
  EXPECT_EQ(StringAt(reference, {"apiVersion"}), "gateway.networking.k8s.io/v1");
  EXPECT_EQ(StringAt(reference, {"kind"}), "GRPCRoute");
  EXPECT_EQ(StringAt(reference, {"uid"}),
            StringAt(client.Objects(kRoutes)["demo/web"], {"metadata", "uid"}));

  // Each reads back as its own kind only.
  EXPECT_FALSE(LastGoodOf(route_revision).has_value());
  std::optional<gateway::GatewayObject> route = LastGoodGatewayObjectOf(route_revision);
  ASSERT_TRUE(route.has_value());
  EXPECT_EQ(route->ref.kind, "GRPCRoute");
  EXPECT_EQ(route->ref.ToString(), "demo/web");
  EXPECT_EQ(route->generation, 3);
  EXPECT_FALSE(route->has_errors());
  const auto* spec = std::get_if<gateway::GrpcRoute>(&route->spec);
  ASSERT_NE(spec, nullptr);
  ASSERT_EQ(spec->rules.size(), 1u);
  EXPECT_EQ(spec->rules[0].backend_refs[0].ref.port, 8003);
  EXPECT_FALSE(LastGoodGatewayObjectOf(resource_revisions[0]).has_value());
  std::optional<xds::ResourceObject> last_good = LastGoodOf(resource_revisions[0]);
  ASSERT_TRUE(last_good.has_value());
  EXPECT_EQ(last_good->generation, 3);

  // Deleting the route takes only its own revisions.
  ASSERT_TRUE(client.Delete(kRoutes, "demo", "web"));
  EXPECT_TRUE(RevisionsOf(client, "GRPCRoute/demo/web").empty());
  EXPECT_EQ(RevisionsOf(client, "XdsResource/demo/web").size(), 1u);
}

TEST(RevisionsTest, TheSameSpecUnderTwoKindsGetsTwoNames) {
  YAML::Node resource = Route(80, 1);
  YAML::Node route = Route(80, 1);
  route["apiVersion"] = "gateway.networking.k8s.io/v1";
  route["kind"] = "GRPCRoute";
  YAML::Node policy = Route(80, 1);
  policy["kind"] = "XdsVariantPolicy";
  auto a = RevisionName(resource);
  auto b = RevisionName(route);
  auto c = RevisionName(policy);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(c, IsOk());
  EXPECT_NE(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_NE(*b, *c);
  EXPECT_EQ(b->rfind("web-", 0), 0u);
  EXPECT_EQ(b->size(), a->size());
}

TEST(RevisionsTest, KeepsNoRevisionsOfOtherKinds) {
  YAML::Node service = Route(80, 1);
  service["apiVersion"] = "v1";
  service["kind"] = "Service";
  EXPECT_FALSE(KeepsRevisionsOf("Service"));
  EXPECT_TRUE(KeepsRevisionsOf("XdsVariantPolicy"));
  EXPECT_EQ(RevisionJson(service).status().code(), absl::StatusCode::kInvalidArgument);
  FakeKubeClient client;
  RevisionWriter writer(client);
  EXPECT_EQ(writer.Record(service, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(RevisionsOf(client).empty());
}

// A revision exactly as releases before kinds wrote it: label
// facet.dev/revision-of=XdsResource, name "<owner>-<ten hex digits of the
// spec's digest>".
YAML::Node RevisionWrittenBeforeKinds(const YAML::Node& owner) {
  const std::string spec = *json::YamlToJson(owner["spec"], "spec");
  return YAML::Load(
      R"({"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"web-)" +
      xds::DigestHex(spec).substr(0, 10) +
      R"(","namespace":"demo","labels":{"facet.dev/revision-of":"XdsResource","facet.dev/owner":"web"},)"
      R"("ownerReferences":[{"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","name":"web",)"
      R"("uid":"uid-old","controller":true,"blockOwnerDeletion":false}]},"data":{"spec":)" +
      spec + R"(},"revision":3})");
}

TEST(RevisionsTest, RevisionsWrittenBeforeKindsAreFoundReadAndNotWrittenAgain) {
  FakeKubeClient client;
  client.Put(kRevisions, RevisionWrittenBeforeKinds(Route(80, 3)));
  // Another controller's revision, which the selector leaves out.
  client.Put(kRevisions,
             YAML::Load("{apiVersion: apps/v1, kind: ControllerRevision, metadata: {name: db-1, "
                        "namespace: demo, labels: {app: db}}, data: {}, revision: 1}"));
  kube::ListOptions options;
  options.label_selector = kRevisionSelector;
  absl::StatusOr<kube::ListResult> listed = client.List(kRevisions, options);
  ASSERT_THAT(listed, IsOk());
  ASSERT_EQ(listed->items.size(), 1u);
  const YAML::Node revision = listed->items[0];
  ExpectHoldsWebAtGeneration3(revision);
  // The same spec keeps its name: an upgrade writes nothing.
  client.Put(kResources, Route(80, 3));
  RevisionWriter writer(client);
  absl::StatusOr<bool> again = writer.Record(client.Objects(kResources)["demo/web"], {revision});
  ASSERT_THAT(again, IsOk());
  EXPECT_FALSE(*again);
  EXPECT_EQ(RevisionsOf(client, "XdsResource/demo/web").size(), 1u);
}

TEST(RevisionsTest, IgnoresRevisionsOfOtherControllers) {
  YAML::Node statefulset_revision = YAML::Load(
      "{metadata: {name: db-1, namespace: demo, ownerReferences: [{apiVersion: apps/v1, kind: "
      "StatefulSet, name: db, uid: u}]}, data: {}, revision: 1}");
  EXPECT_FALSE(LastGoodOf(statefulset_revision).has_value());
  EXPECT_FALSE(RecordedObject(statefulset_revision).has_value());
  EXPECT_EQ(OwnerKeyOf(statefulset_revision), "");
  // Labelled as Facet's but owned by something else: not Facet's either.
  statefulset_revision["metadata"]["labels"][kRevisionOfLabel] = "XdsResource";
  EXPECT_EQ(OwnerKeyOf(statefulset_revision), "");
}

}  // namespace
}  // namespace facet::controller
