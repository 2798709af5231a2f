#include "controller/kubernetes/revisions/revisions.h"

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

YAML::Node Route(int port, int generation) {
  YAML::Node owner = YAML::Load(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: web, namespace: demo},"
      " spec: {type: endpoint, name: web, variants: [{resource: {endpoints: [{lb_endpoints: "
      "[{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: " +
      std::to_string(port) + "}}}}]}]}}]}}");
  owner["metadata"]["generation"] = generation;
  return owner;
}

std::vector<YAML::Node> RevisionsOf(FakeKubeClient& client) {
  std::vector<YAML::Node> out;
  for (const auto& [key, revision] : client.Objects(kRevisions)) out.push_back(revision);
  return out;
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
  EXPECT_EQ(OwnerKeyOf(revision), "demo/web");
  std::optional<xds::ResourceObject> last_good = LastGoodOf(revision);
  ASSERT_TRUE(last_good.has_value());
  EXPECT_EQ(last_good->ref.ToString(), "demo/web");
  EXPECT_EQ(last_good->generation, 3);
  ASSERT_TRUE(last_good->spec.has_value());
  EXPECT_EQ(last_good->spec->name, "web");
  ASSERT_EQ(last_good->spec->variants.size(), 1u);

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

TEST(RevisionsTest, IgnoresRevisionsOfOtherControllers) {
  YAML::Node statefulset_revision = YAML::Load(
      "{metadata: {name: db-1, namespace: demo, ownerReferences: [{apiVersion: apps/v1, kind: "
      "StatefulSet, name: db, uid: u}]}, data: {}, revision: 1}");
  EXPECT_FALSE(LastGoodOf(statefulset_revision).has_value());
}

}  // namespace
}  // namespace facet::controller
