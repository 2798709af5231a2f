// Tests for KubeTestServer over real HTTP on loopback: every apiserver
// behaviour it claims to reproduce (docs/testing-kubernetes.md) has a test.
#include "test/kube_api_server/kube_test_server.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/kube_api_server/http_server.h"
#include "test/kube_api_server/json.h"
#include "test/kube_api_server/kube_test_server_fixture.h"
#include "test/kube_api_server/test_http_client.h"
#include "test/kube_api_server/tls.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::SizeIs;

constexpr char kXr[] = "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources";
constexpr char kAllXr[] = "/apis/facet.dev/v1alpha1/xdsresources";
constexpr char kXa[] = "/apis/facet.dev/v1alpha1/xdsauthorities";
constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/demo/leases";

// ---- Discovery ----

TEST_F(KubeTestServerTest, VersionAndHealthNeedNoToken) {
  Reply version = Call("GET", "/version", "", "", {}, /*token=*/"");
  EXPECT_EQ(version.code, 200);
  EXPECT_EQ(GetString(version.body, {"major"}), "1");
  EXPECT_FALSE(GetString(version.body, {"gitVersion"}).empty());
  EXPECT_EQ(Call("GET", "/healthz", "", "", {}, /*token=*/"").code, 200);
}

TEST_F(KubeTestServerTest, ServesApiVersionsAndGroupList) {
  Reply api = Call("GET", "/api");
  EXPECT_EQ(GetString(api.body, {"kind"}), "APIVersions");
  EXPECT_EQ(Dump(*Find(api.body, "versions")), R"(["v1"])");
  Reply apis = Call("GET", "/apis");
  EXPECT_EQ(GetString(apis.body, {"kind"}), "APIGroupList");
  std::vector<std::string> groups;
  for (const Json& group : *Find(apis.body, "groups")) {
    groups.push_back(GetString(group, {"name"}));
    EXPECT_FALSE(GetString(group, {"preferredVersion", "groupVersion"}).empty());
  }
  EXPECT_THAT(groups, ElementsAre("admissionregistration.k8s.io", "apps", "coordination.k8s.io",
                                  "discovery.k8s.io", "facet.dev", "gateway.networking.k8s.io"));
  Reply group = Call("GET", "/apis/facet.dev");
  EXPECT_EQ(GetString(group.body, {"kind"}), "APIGroup");
  EXPECT_EQ(GetString(group.body, {"preferredVersion", "groupVersion"}), "facet.dev/v1alpha1");
}

TEST_F(KubeTestServerTest, ResourceListsNameKindsVerbsShortNamesAndStatus) {
  Reply list = Call("GET", "/apis/facet.dev/v1alpha1");
  ASSERT_EQ(list.code, 200);
  EXPECT_EQ(GetString(list.body, {"kind"}), "APIResourceList");
  EXPECT_EQ(GetString(list.body, {"groupVersion"}), "facet.dev/v1alpha1");
  std::map<std::string, Json> resources;
  for (const Json& resource : *Find(list.body, "resources")) {
    resources[GetString(resource, {"name"})] = resource;
  }
  ASSERT_EQ(resources.size(), 6u);
  EXPECT_EQ(GetString(resources["xdsresources"], {"kind"}), "XdsResource");
  EXPECT_TRUE(Find(resources["xdsresources"], "namespaced")->get<bool>());
  EXPECT_EQ(Dump(*Find(resources["xdsresources"], "shortNames")), R"(["xr","xdsr"])");
  EXPECT_THAT(Dump(*Find(resources["xdsresources"], "verbs")), HasSubstr("\"watch\""));
  EXPECT_EQ(Dump(*Find(resources["xdsauthorities"], "shortNames")), R"(["xa"])");
  EXPECT_FALSE(Find(resources["xdsauthorities"], "namespaced")->get<bool>());
  EXPECT_EQ(Dump(*Find(resources["xdsresources/status"], "verbs")), R"(["get","patch","update"])");
  EXPECT_EQ(resources.count("xdsauthorities/status"), 1u);
  EXPECT_EQ(Dump(*Find(resources["xdsvariantpolicies"], "shortNames")), R"(["xvp"])");
  EXPECT_EQ(resources.count("xdsvariantpolicies/status"), 1u);

  Reply leases = Call("GET", "/apis/coordination.k8s.io/v1");
  EXPECT_THAT(leases.raw, HasSubstr(R"("kind":"Lease")"));
  Reply core = Call("GET", "/api/v1");
  EXPECT_THAT(core.raw, HasSubstr(R"("name":"namespaces")"));
}

TEST_F(KubeTestServerTest, ServesAggregatedDiscoveryWhenAskedFor) {
  Reply apis = Call("GET", "/apis", "", "",
                    {{"Accept",
                      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                      "application/json"}});
  EXPECT_EQ(apis.code, 200);
  EXPECT_THAT(apis.Header("content-type"), HasSubstr("as=APIGroupDiscoveryList"));
  EXPECT_EQ(GetString(apis.body, {"kind"}), "APIGroupDiscoveryList");
  EXPECT_THAT(apis.raw, HasSubstr(R"("resource":"xdsresources")"));
  EXPECT_THAT(apis.raw, HasSubstr(R"("subresource":"status")"));
}

TEST_F(KubeTestServerTest, OpenApiV3DeclaresFieldValidationForKubectl) {
  Reply root = Call("GET", "/openapi/v3");
  std::string url = GetString(root.body, {"paths", "apis/facet.dev/v1alpha1", "serverRelativeURL"});
  ASSERT_FALSE(url.empty()) << root.raw;
  Reply doc = Call("GET", url);
  EXPECT_EQ(doc.code, 200);
  EXPECT_THAT(doc.raw, HasSubstr(R"("name":"fieldValidation")"));
  EXPECT_THAT(doc.raw, HasSubstr(R"("x-kubernetes-group-version-kind")"));
}

// kubectl before 1.27 (Debian bookworm's is 1.20) reads /openapi/v2 as
// protobuf before every apply, and stops when it is missing.
TEST_F(KubeTestServerTest, OpenApiV2IsServedAsProtobufOrJson) {
  Reply json = Call("GET", "/openapi/v2");
  EXPECT_EQ(json.code, 200);
  EXPECT_EQ(GetString(json.body, {"swagger"}), "2.0") << json.raw;
  Reply protobuf = Call("GET", "/openapi/v2", "", "",
                        {{"Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}});
  EXPECT_EQ(protobuf.code, 200);
  EXPECT_EQ(protobuf.Header("content-type"), "application/octet-stream");
  // swagger = 1 ("2.0") first.
  EXPECT_EQ(protobuf.raw.substr(0, 5), std::string("\x0a\x03" "2.0", 5));
}

TEST_F(KubeTestServerTest, UnknownPathsAre404Status) {
  ExpectStatus(Call("GET", "/apis/facet.dev/v1alpha1/namespaces/demo/widgets"), 404, "NotFound");
  ExpectStatus(Call("GET", "/nope"), 404, "NotFound");
  // The cluster-scoped type has no namespaced path.
  ExpectStatus(Call("GET", "/apis/facet.dev/v1alpha1/namespaces/demo/xdsauthorities"), 404,
               "NotFound");
}

// ---- Authentication ----

TEST_F(KubeTestServerTest, MissingOrWrongTokenIs401Status) {
  ExpectStatus(Call("GET", kXr, "", "", {}, /*token=*/""), 401, "Unauthorized");
  ExpectStatus(Call("GET", kXr, "", "", {}, /*token=*/"wrong"), 401, "Unauthorized");
  ExpectStatus(Call("GET", "/apis", "", "", {}, /*token=*/""), 401, "Unauthorized");
  EXPECT_EQ(Call("GET", kXr).code, 200);
}

TEST_F(KubeTestServerTest, SetTokenRotatesTheToken) {
  server_->SetToken("rotated");
  ExpectStatus(Call("GET", kXr, "", "", {}, /*token=*/"test-token"), 401, "Unauthorized");
  EXPECT_EQ(Call("GET", kXr, "", "", {}, /*token=*/"rotated").code, 200);
}

TEST_F(KubeTestServerTest, EmptyTokenOptionTurnsAuthenticationOff) {
  KubeTestServer::Options options;
  options.bearer_token = "";
  Start(options);
  EXPECT_EQ(Call("GET", kXr, "", "", {}, /*token=*/"").code, 200);
}

// ---- Create, get, resourceVersion ----

TEST_F(KubeTestServerTest, CreateSetsSystemMetadataAndStripsStatus) {
  Reply created = CreateXr("a");
  EXPECT_EQ(GetString(created.body, {"metadata", "namespace"}), "demo");
  EXPECT_THAT(GetString(created.body, {"metadata", "uid"}), SizeIs(36));
  EXPECT_THAT(GetString(created.body, {"metadata", "creationTimestamp"}), HasSubstr("T"));
  EXPECT_EQ(created.generation(), 1);
  EXPECT_EQ(created.rv(), absl::StrCat(server_->resource_version()));
  EXPECT_EQ(Find(created.body, "status"), nullptr);
  Reply got = Call("GET", absl::StrCat(kXr, "/a"));
  EXPECT_EQ(got.code, 200);
  EXPECT_EQ(got.body, created.body);
  EXPECT_EQ(*server_->GetObject(absl::StrCat(kXr, "/a")), created.raw);
}

TEST_F(KubeTestServerTest, ResourceVersionIsOneGlobalCounterAcrossTypes) {
  int64_t rv1 = std::stoll(CreateXr("a").rv());
  Reply authority = Call(
      "POST", kXa,
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsAuthority","metadata":{"name":"x"},"spec":{}})");
  ASSERT_EQ(authority.code, 201) << authority.raw;
  int64_t rv2 = std::stoll(authority.rv());
  Reply lease = Call(
      "POST", kLeases,
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"me"}})");
  ASSERT_EQ(lease.code, 201) << lease.raw;
  int64_t rv3 = std::stoll(lease.rv());
  EXPECT_EQ(rv2, rv1 + 1);
  EXPECT_EQ(rv3, rv2 + 1);
  EXPECT_EQ(server_->resource_version(), rv3);
  EXPECT_TRUE(FindPath(authority.body, {"metadata", "namespace"}) == nullptr);
  EXPECT_EQ(FindPath(lease.body, {"metadata", "generation"}), nullptr);  // Built-ins keep none.
}

TEST_F(KubeTestServerTest, CreateDuplicateIs409AlreadyExists) {
  CreateXr("a");
  Reply again = Call("POST", kXr, XrBody("a"));
  ExpectStatus(again, 409, "AlreadyExists");
  EXPECT_EQ(GetString(again.body, {"message"}), "xdsresources.facet.dev \"a\" already exists");
  EXPECT_EQ(GetString(again.body, {"details", "kind"}), "xdsresources");
}

TEST_F(KubeTestServerTest, DeletingAnOwnerCollectsItsDependents) {
  Reply owner = CreateXr("a");
  const std::string uid = GetString(owner.body, {"metadata", "uid"});
  ASSERT_FALSE(uid.empty());
  constexpr char kRevisions[] = "/apis/apps/v1/namespaces/demo/controllerrevisions";
  auto revision = [&](const std::string& name, const std::string& owner_uid) {
    return absl::StrCat(
        R"({"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":")", name,
        R"(","ownerReferences":[{"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","name":"a","uid":")",
        owner_uid, R"("}]},"data":{"spec":{}},"revision":1})");
  };
  ASSERT_EQ(Call("POST", kRevisions, revision("a-1", uid)).code, 201);
  ASSERT_EQ(Call("POST", kRevisions, revision("other-1", "some-other-uid")).code, 201);
  ASSERT_EQ(Call("DELETE", absl::StrCat(kXr, "/a")).code, 200);
  EXPECT_EQ(Call("GET", absl::StrCat(kRevisions, "/a-1")).code, 404);
  EXPECT_EQ(Call("GET", absl::StrCat(kRevisions, "/other-1")).code, 200);
}

TEST_F(KubeTestServerTest, CreateNeedsAnExistingNamespaceAndAValidName) {
  Reply missing =
      Call("POST", "/apis/facet.dev/v1alpha1/namespaces/ghost/xdsresources", XrBody("a"));
  ExpectStatus(missing, 404, "NotFound");
  EXPECT_EQ(GetString(missing.body, {"message"}), "namespaces \"ghost\" not found");
  ExpectStatus(Call("POST", kXr, XrBody("Bad_Name")), 422, "Invalid");
  Reply mismatch = Call(
      "POST", kXr,
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","metadata":{"name":"a","namespace":"other"}})");
  ExpectStatus(mismatch, 400, "BadRequest");
  ExpectStatus(
      Call("POST", kXr,
           R"({"apiVersion":"facet.dev/v1alpha1","kind":"Lease","metadata":{"name":"a"}})"),
      400, "BadRequest");
}

TEST_F(KubeTestServerTest, CreateAcceptsGenerateNameAndYaml) {
  Reply generated = Call(
      "POST", kXr,
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","metadata":{"generateName":"gen-"}})");
  ASSERT_EQ(generated.code, 201) << generated.raw;
  EXPECT_THAT(GetString(generated.body, {"metadata", "name"}), SizeIs(9));
  Reply yaml =
      Call("POST", kXr, "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n  name: y\n",
           "application/yaml");
  EXPECT_EQ(yaml.code, 201) << yaml.raw;
}

TEST_F(KubeTestServerTest, GetMissingIs404WithDetails) {
  Reply reply = Call("GET", absl::StrCat(kXr, "/ghost"));
  ExpectStatus(reply, 404, "NotFound");
  EXPECT_EQ(GetString(reply.body, {"message"}), "xdsresources.facet.dev \"ghost\" not found");
  EXPECT_EQ(GetString(reply.body, {"details", "name"}), "ghost");
  EXPECT_EQ(GetString(reply.body, {"details", "group"}), "facet.dev");
}

TEST_F(KubeTestServerTest, DryRunCreatesNothing) {
  int64_t before = server_->resource_version();
  EXPECT_EQ(Call("POST", absl::StrCat(kXr, "?dryRun=All"), XrBody("a")).code, 201);
  EXPECT_EQ(server_->resource_version(), before);
  EXPECT_EQ(server_->GetObject(absl::StrCat(kXr, "/a")), std::nullopt);
}

// ---- Update ----

TEST_F(KubeTestServerTest, PutWithoutResourceVersionIs422) {
  CreateXr("a");
  Reply reply = Call("PUT", absl::StrCat(kXr, "/a"), XrBody("a"));
  ExpectStatus(reply, 422, "Invalid");
  EXPECT_THAT(GetString(reply.body, {"message"}), HasSubstr("metadata.resourceVersion"));
  EXPECT_EQ(GetString(FindPath(reply.body, {"details", "causes"})->at(0), {"field"}),
            "metadata.resourceVersion");
  ExpectStatus(Call("PUT", absl::StrCat(kXr, "/a/status"), XrBody("a")), 422, "Invalid");
}

TEST_F(KubeTestServerTest, PutWithStaleResourceVersionIs409Conflict) {
  Reply created = CreateXr("a");
  std::string rv = created.rv();
  Json object = created.body;
  object["metadata"]["labels"]["x"] = "1";
  ASSERT_EQ(Call("PUT", absl::StrCat(kXr, "/a"), Dump(object)).code, 200);
  object["metadata"]["labels"]["x"] = "2";  // Still carries the old resourceVersion.
  Reply conflict = Call("PUT", absl::StrCat(kXr, "/a"), Dump(object));
  ExpectStatus(conflict, 409, "Conflict");
  EXPECT_EQ(GetString(conflict.body, {"message"}),
            "Operation cannot be fulfilled on xdsresources.facet.dev \"a\": the object has been "
            "modified; please apply your changes to the latest version and try again");
}

TEST_F(KubeTestServerTest, PutBumpsGenerationOnSpecChangeOnlyAndIgnoresStatus) {
  Json object = CreateXr("a").body;
  object["metadata"]["labels"]["team"] = "x";
  object["status"]["servedName"] = "ignored";
  Reply labeled = Call("PUT", absl::StrCat(kXr, "/a"), Dump(object));
  ASSERT_EQ(labeled.code, 200) << labeled.raw;
  EXPECT_EQ(labeled.generation(), 1);
  EXPECT_EQ(Find(labeled.body, "status"), nullptr);
  object = labeled.body;
  object["spec"]["type"] = "route";
  Reply changed = Call("PUT", absl::StrCat(kXr, "/a"), Dump(object));
  ASSERT_EQ(changed.code, 200) << changed.raw;
  EXPECT_EQ(changed.generation(), 2);
  EXPECT_GT(std::stoll(changed.rv()), std::stoll(labeled.rv()));
  // System fields cannot be overwritten.
  object = changed.body;
  object["metadata"]["uid"] = "";
  object["metadata"]["generation"] = 99;
  object["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z";
  Reply same = Call("PUT", absl::StrCat(kXr, "/a"), Dump(object));
  EXPECT_EQ(same.generation(), 2);
  EXPECT_EQ(GetString(same.body, {"metadata", "creationTimestamp"}),
            GetString(changed.body, {"metadata", "creationTimestamp"}));
}

TEST_F(KubeTestServerTest, NoOpUpdateKeepsResourceVersionAndSendsNoEvent) {
  Reply created = CreateXr("a");
  Reply same = Call("PUT", absl::StrCat(kXr, "/a"), created.raw);
  EXPECT_EQ(same.code, 200);
  EXPECT_EQ(same.rv(), created.rv());
  EXPECT_EQ(server_->resource_version(), std::stoll(created.rv()));
}

TEST_F(KubeTestServerTest, PutStatusChangesOnlyStatusAndNeverGeneration) {
  Json object = CreateXr("a").body;
  object["status"]["observedGeneration"] = 1;
  object["spec"]["type"] = "cluster";             // Ignored by /status.
  object["metadata"]["labels"]["x"] = "ignored";  // Ignored by /status.
  Reply status = Call("PUT", absl::StrCat(kXr, "/a/status"), Dump(object));
  ASSERT_EQ(status.code, 200) << status.raw;
  EXPECT_EQ(GetString(status.body, {"spec", "type"}), "listener");
  EXPECT_EQ(FindPath(status.body, {"metadata", "labels"}), nullptr);
  EXPECT_EQ(FindPath(status.body, {"status", "observedGeneration"})->get<int64_t>(), 1);
  EXPECT_EQ(status.generation(), 1);
  EXPECT_EQ(Call("GET", absl::StrCat(kXr, "/a/status")).body, status.body);
  // The main resource keeps status as is.
  Json main = status.body;
  main["status"] = Json::object();
  Reply put = Call("PUT", absl::StrCat(kXr, "/a"), Dump(main));
  EXPECT_EQ(FindPath(put.body, {"status", "observedGeneration"})->get<int64_t>(), 1);
}

TEST_F(KubeTestServerTest, LogsStatusWritesWithTheirAnswers) {
  Json object = CreateXr("a").body;
  object["status"]["observedGeneration"] = 1;
  ASSERT_EQ(Call("PUT", absl::StrCat(kXr, "/a/status"), Dump(object)).code, 200);
  // Stale resourceVersion: logged with its 409.
  EXPECT_EQ(Call("PUT", absl::StrCat(kXr, "/a/status"), Dump(object)).code, 409);
  EXPECT_EQ(Call("PATCH", absl::StrCat(kXr, "/a/status"), R"({"status":{"x":1}})", kMerge).code,
            200);
  // Neither reads nor writes of the main resource are status writes.
  EXPECT_EQ(Call("GET", absl::StrCat(kXr, "/a/status")).code, 200);
  EXPECT_EQ(Call("PATCH", absl::StrCat(kXr, "/a"), R"({"metadata":{"labels":{"x":"1"}}})", kMerge)
                .code,
            200);
  std::vector<StatusWrite> writes = server_->status_writes();
  ASSERT_EQ(writes.size(), 3u);
  EXPECT_EQ(writes[0].path, absl::StrCat(kXr, "/a"));
  EXPECT_EQ(writes[1].path, absl::StrCat(kXr, "/a"));
  EXPECT_EQ(writes[0].code, 200);
  EXPECT_EQ(writes[1].code, 409);
  EXPECT_EQ(writes[2].code, 200);
  EXPECT_LE(writes[0].time, writes[2].time);
}

TEST_F(KubeTestServerTest, PutOfMissingObjectIs404ButCreatesALease) {
  ExpectStatus(Call("PUT", absl::StrCat(kXr, "/ghost"), XrBody("ghost")), 404, "NotFound");
  Reply lease =
      Call("PUT", absl::StrCat(kLeases, "/l"),
           R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"}})");
  EXPECT_EQ(lease.code, 201) << lease.raw;
}

TEST_F(KubeTestServerTest, PutNameMustMatchUrl) {
  Json object = CreateXr("a").body;
  ExpectStatus(Call("PUT", absl::StrCat(kXr, "/b"), Dump(object)), 400, "BadRequest");
}

TEST_F(KubeTestServerTest, LeasesFollowTheSameConcurrencyRules) {
  Reply lease = Call(
      "POST", kLeases,
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15}})");
  ASSERT_EQ(lease.code, 201);
  ExpectStatus(Call("POST", kLeases, lease.raw), 409, "AlreadyExists");
  Json object = lease.body;
  object["spec"]["holderIdentity"] = "b";
  Json unconditional = object;
  unconditional["metadata"].erase("resourceVersion");
  ExpectStatus(Call("PUT", absl::StrCat(kLeases, "/l"), Dump(unconditional)), 422, "Invalid");
  Reply taken = Call("PUT", absl::StrCat(kLeases, "/l"), Dump(object));
  EXPECT_EQ(taken.code, 200);
  object["spec"]["holderIdentity"] = "c";  // Lost the race: stale resourceVersion.
  ExpectStatus(Call("PUT", absl::StrCat(kLeases, "/l"), Dump(object)), 409, "Conflict");
  // Leases accept strategic merge patch (a built-in type).
  Reply patched = Call("PATCH", absl::StrCat(kLeases, "/l"), R"({"spec":{"leaseTransitions":1}})",
                       "application/strategic-merge-patch+json");
  EXPECT_EQ(patched.code, 200) << patched.raw;
}

// ---- Patch ----

TEST_F(KubeTestServerTest, MergePatchUpdatesAndRemovesFields) {
  CreateXr("a");
  Reply patched =
      Call("PATCH", absl::StrCat(kXr, "/a"),
           R"({"metadata":{"labels":{"a":"b"}},"spec":{"name":null,"type":"route"}})", kMerge);
  ASSERT_EQ(patched.code, 200) << patched.raw;
  EXPECT_EQ(GetString(patched.body, {"metadata", "labels", "a"}), "b");
  EXPECT_EQ(FindPath(patched.body, {"spec", "name"}), nullptr);
  EXPECT_EQ(patched.generation(), 2);
  // A resourceVersion in the patch is a precondition.
  ExpectStatus(
      Call("PATCH", absl::StrCat(kXr, "/a"), R"({"metadata":{"resourceVersion":"1"}})", kMerge),
      409, "Conflict");
  ExpectStatus(Call("PATCH", absl::StrCat(kXr, "/ghost"), "{}", kMerge), 404, "NotFound");
}

TEST_F(KubeTestServerTest, JsonPatchAppliesOperationsAndFailsTests) {
  CreateXr("a");
  Reply patched = Call(
      "PATCH", absl::StrCat(kXr, "/a"),
      R"([{"op":"replace","path":"/spec/type","value":"cluster"},{"op":"add","path":"/spec/variants/-","value":{"resource":{"x":1}}}])",
      "application/json-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.raw;
  EXPECT_EQ(GetString(patched.body, {"spec", "type"}), "cluster");
  EXPECT_EQ(FindPath(patched.body, {"spec", "variants"})->size(), 2u);
  // An operation that does not apply gets the apiserver's generic 422, which
  // does not say which one.
  for (const char* patch : {R"([{"op":"test","path":"/spec/type","value":"listener"}])",
                            R"([{"op":"remove","path":"/spec/missing"}])"}) {
    Reply failed = Call("PATCH", absl::StrCat(kXr, "/a"), patch, "application/json-patch+json");
    ExpectStatus(failed, 422, "Invalid");
    EXPECT_EQ(GetString(failed.body, {"message"}),
              "the server rejected our request due to an error in our request");
    EXPECT_EQ(Dump(*Find(failed.body, "details")), "{}");
  }
  Reply malformed =
      Call("PATCH", absl::StrCat(kXr, "/a"), R"({"op":"add"})", "application/json-patch+json");
  ExpectStatus(malformed, 400, "BadRequest");
  EXPECT_EQ(GetString(malformed.body, {"message"}),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch");
}

// A patch whose result has no metadata object is refused, and the server
// keeps serving.
TEST_F(KubeTestServerTest, PatchesThatBreakMetadataAreRefused) {
  CreateXr("a");
  for (const auto& [patch, media] : std::vector<std::pair<std::string, std::string>>{
           {R"({"metadata":"x"})", kMerge},
           {R"([{"op":"replace","path":"/metadata","value":[]}])",
            "application/json-patch+json"}}) {
    Reply refused = Call("PATCH", absl::StrCat(kXr, "/a"), patch, media);
    EXPECT_GE(refused.code, 400) << refused.raw;
    EXPECT_LT(refused.code, 500) << refused.raw;
    EXPECT_EQ(GetString(refused.body, {"kind"}), "Status") << refused.raw;
  }
  EXPECT_EQ(Call("GET", absl::StrCat(kXr, "/a")).code, 200);
}

TEST_F(KubeTestServerTest, ApplyPatchCreatesThenMerges) {
  const std::string path = absl::StrCat(kXr, "/applied?fieldManager=facet&force=true");
  Reply created =
      Call("PATCH", path,
           "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n  name: applied\n"
           "spec:\n  type: listener\n  name: \"007\"\n",
           "application/apply-patch+yaml");
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(GetString(created.body, {"spec", "name"}), "007");  // Quoted YAML stays a string.
  EXPECT_EQ(created.generation(), 1);
  Reply applied =
      Call("PATCH", path,
           "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n  name: applied\n"
           "spec:\n  type: route\n",
           "application/apply-patch+yaml");
  ASSERT_EQ(applied.code, 200) << applied.raw;
  EXPECT_EQ(GetString(applied.body, {"spec", "type"}), "route");
  EXPECT_EQ(applied.generation(), 2);
  // Apply to /status changes status only.
  Reply status = Call(
      "PATCH", absl::StrCat(kXr, "/applied/status?fieldManager=facet&force=true"),
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","metadata":{"name":"applied"},"status":{"variantCount":3}})",
      "application/apply-patch+yaml");
  ASSERT_EQ(status.code, 200) << status.raw;
  EXPECT_EQ(FindPath(status.body, {"status", "variantCount"})->get<int64_t>(), 3);
  EXPECT_EQ(status.generation(), 2);
  ExpectStatus(Call("PATCH", absl::StrCat(kXr, "/applied"), "{}", "application/apply-patch+yaml"),
               422, "Invalid");
}

TEST_F(KubeTestServerTest, StrategicMergePatchIs415ForCustomResources) {
  CreateXr("a");
  Reply reply =
      Call("PATCH", absl::StrCat(kXr, "/a"), "{}", "application/strategic-merge-patch+json");
  ExpectStatus(reply, 415, "UnsupportedMediaType");
  EXPECT_THAT(GetString(reply.body, {"message"}), HasSubstr("application/merge-patch+json"));
  ExpectStatus(Call("PATCH", absl::StrCat(kXr, "/a?force=true"), "{}", kMerge), 422, "Invalid");
}

TEST_F(KubeTestServerTest, MergePatchOnStatusSubresource) {
  CreateXr("a");
  Reply reply =
      Call("PATCH", absl::StrCat(kXr, "/a/status"),
           R"({"status":{"conditions":[{"type":"Accepted","status":"True"}]},"spec":{"type":"x"}})",
           kMerge);
  ASSERT_EQ(reply.code, 200) << reply.raw;
  EXPECT_EQ(GetString(reply.body, {"spec", "type"}), "listener");
  EXPECT_NE(FindPath(reply.body, {"status", "conditions"}), nullptr);
  EXPECT_EQ(reply.generation(), 1);
}

// ---- Delete ----

TEST_F(KubeTestServerTest, DeleteReturnsSuccessStatusAndEmitsDeletedWithLastState) {
  Json object = CreateXr("a").body;
  auto watch = Watch(absl::StrCat(
      kXr, "?watch=true&resourceVersion=", GetString(object, {"metadata", "resourceVersion"})));
  Reply deleted = Call("DELETE", absl::StrCat(kXr, "/a"));
  EXPECT_EQ(deleted.code, 200);
  EXPECT_EQ(GetString(deleted.body, {"kind"}), "Status");
  EXPECT_EQ(GetString(deleted.body, {"status"}), "Success");
  EXPECT_EQ(GetString(deleted.body, {"details", "uid"}), GetString(object, {"metadata", "uid"}));
  Json event = NextEvent(*watch);
  EXPECT_EQ(Type(event), "DELETED");
  EXPECT_EQ(GetString(event, {"object", "spec", "type"}), "listener");
  EXPECT_EQ(GetString(event, {"object", "metadata", "resourceVersion"}),
            absl::StrCat(server_->resource_version()));
  ExpectStatus(Call("DELETE", absl::StrCat(kXr, "/a")), 404, "NotFound");
}

TEST_F(KubeTestServerTest, DeletePreconditionsAreChecked) {
  CreateXr("a");
  ExpectStatus(
      Call("DELETE", absl::StrCat(kXr, "/a"), R"({"preconditions":{"resourceVersion":"1"}})"), 409,
      "Conflict");
  ExpectStatus(Call("DELETE", absl::StrCat(kXr, "/a"), R"({"preconditions":{"uid":"nope"}})"), 409,
               "Conflict");
}

TEST_F(KubeTestServerTest, DeleteWithFinalizersWaitsForTheirRemoval) {
  Reply created =
      Call("POST", kXr, XrBody("a", "listener", R"(,"finalizers":["facet.dev/cleanup"])"));
  ASSERT_EQ(created.code, 201);
  Reply marked = Call("DELETE", absl::StrCat(kXr, "/a"));
  EXPECT_EQ(marked.code, 202);
  EXPECT_FALSE(GetString(marked.body, {"metadata", "deletionTimestamp"}).empty());
  EXPECT_EQ(marked.generation(), 2);
  ASSERT_TRUE(server_->GetObject(absl::StrCat(kXr, "/a")).has_value());
  Reply released =
      Call("PATCH", absl::StrCat(kXr, "/a"), R"({"metadata":{"finalizers":null}})", kMerge);
  EXPECT_EQ(released.code, 200) << released.raw;
  EXPECT_EQ(server_->GetObject(absl::StrCat(kXr, "/a")), std::nullopt);
}

TEST_F(KubeTestServerTest, DeletingANamespaceDeletesItsObjects) {
  CreateXr("a");
  EXPECT_EQ(Call("DELETE", "/api/v1/namespaces/demo").code, 200);
  EXPECT_EQ(server_->GetObject(absl::StrCat(kXr, "/a")), std::nullopt);
  EXPECT_EQ(server_->GetObject("/api/v1/namespaces/demo"), std::nullopt);
}

TEST_F(KubeTestServerTest, ClusterScopedAuthoritiesUseNoNamespace) {
  Reply created = Call(
      "POST", kXa,
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsAuthority","metadata":{"name":"a-example","namespace":"ignored"},"spec":{"authority":"a.example"}})");
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(FindPath(created.body, {"metadata", "namespace"}), nullptr);
  EXPECT_EQ(Call("GET", absl::StrCat(kXa, "/a-example")).code, 200);
  Json object = created.body;
  object["status"]["resources"] = 3;
  EXPECT_EQ(Call("PUT", absl::StrCat(kXa, "/a-example/status"), Dump(object)).code, 200);
  EXPECT_EQ(Call("DELETE", absl::StrCat(kXa, "/a-example")).code, 200);
}

// ---- List ----

TEST_F(KubeTestServerTest, ListCarriesKindAndResourceVersion) {
  CreateXr("a");
  CreateXr("b");
  CreateXr("c", "other");
  Reply list = Call("GET", kXr);
  ASSERT_EQ(list.code, 200);
  EXPECT_EQ(GetString(list.body, {"kind"}), "XdsResourceList");
  EXPECT_EQ(GetString(list.body, {"apiVersion"}), "facet.dev/v1alpha1");
  EXPECT_EQ(list.rv(), absl::StrCat(server_->resource_version()));
  EXPECT_EQ(Find(list.body, "items")->size(), 2u);
  EXPECT_EQ(Find(Call("GET", kAllXr).body, "items")->size(), 3u);
  Reply empty = Call("GET", kXa);
  EXPECT_EQ(Dump(*Find(empty.body, "items")), "[]");
  EXPECT_EQ(server_->list_count(), 3);
}

TEST_F(KubeTestServerTest, PaginatedListIsConsistentAcrossPages) {
  for (const char* name : {"a", "b", "c", "d", "e"}) CreateXr(name);
  Reply first = Call("GET", absl::StrCat(kXr, "?limit=2"));
  ASSERT_EQ(first.code, 200);
  EXPECT_EQ(Find(first.body, "items")->size(), 2u);
  EXPECT_EQ(FindPath(first.body, {"metadata", "remainingItemCount"})->get<int64_t>(), 3);
  std::string token = GetString(first.body, {"metadata", "continue"});
  ASSERT_FALSE(token.empty());
  // Writes between pages are not visible in later pages.
  Call("DELETE", absl::StrCat(kXr, "/d"));
  CreateXr("f");
  std::vector<std::string> names;
  for (const Json& item : *Find(first.body, "items"))
    names.push_back(GetString(item, {"metadata", "name"}));
  while (!token.empty()) {
    Reply page = Call("GET", absl::StrCat(kXr, "?limit=2&continue=", token));
    ASSERT_EQ(page.code, 200) << page.raw;
    EXPECT_EQ(page.rv(), first.rv());
    for (const Json& item : *Find(page.body, "items"))
      names.push_back(GetString(item, {"metadata", "name"}));
    token = GetString(page.body, {"metadata", "continue"});
  }
  EXPECT_THAT(names, ElementsAre("a", "b", "c", "d", "e"));
}

TEST_F(KubeTestServerTest, ContinueTokenAfterCompactionIs410Expired) {
  for (const char* name : {"a", "b", "c"}) CreateXr(name);
  Reply first = Call("GET", absl::StrCat(kXr, "?limit=1"));
  std::string token = GetString(first.body, {"metadata", "continue"});
  CreateXr("d");
  server_->CompactHistory();
  Reply expired = Call("GET", absl::StrCat(kXr, "?limit=1&continue=", token));
  ExpectStatus(expired, 410, "Expired");
  EXPECT_THAT(GetString(expired.body, {"message"}), HasSubstr("continue parameter is too old"));
  ExpectStatus(Call("GET", absl::StrCat(kXr, "?continue=garbage")), 400, "BadRequest");
}

TEST_F(KubeTestServerTest, ResourceVersionZeroListIgnoresLimit) {
  for (const char* name : {"a", "b", "c"}) CreateXr(name);
  Reply list = Call("GET", absl::StrCat(kXr, "?resourceVersion=0&limit=1"));
  EXPECT_EQ(Find(list.body, "items")->size(), 3u);
  EXPECT_EQ(GetString(list.body, {"metadata", "continue"}), "");
  Reply quorum = Call("GET", absl::StrCat(kXr, "?resourceVersion=&limit=1"));
  EXPECT_EQ(Find(quorum.body, "items")->size(), 1u);
}

TEST_F(KubeTestServerTest, TooLargeResourceVersionIs504ResourceVersionTooLarge) {
  int64_t too_large = server_->resource_version() + 10;
  Reply reply = Call("GET", absl::StrCat(kXr, "?resourceVersion=", too_large));
  ExpectStatus(reply, 504, "Timeout");
  EXPECT_EQ(GetString(FindPath(reply.body, {"details", "causes"})->at(0), {"reason"}),
            "ResourceVersionTooLarge");
  EXPECT_THAT(GetString(reply.body, {"message"}), HasSubstr("Too large resource version"));
}

TEST_F(KubeTestServerTest, ListAtAnOlderResourceVersion) {
  std::string rv = CreateXr("a").rv();
  CreateXr("b");
  Reply not_older = Call("GET", absl::StrCat(kXr, "?resourceVersion=", rv));
  EXPECT_EQ(Find(not_older.body, "items")->size(), 2u);
  Reply exact =
      Call("GET", absl::StrCat(kXr, "?resourceVersion=", rv, "&resourceVersionMatch=Exact"));
  EXPECT_EQ(Find(exact.body, "items")->size(), 1u);
  EXPECT_EQ(exact.rv(), rv);
  server_->CompactHistory();
  ExpectStatus(
      Call("GET", absl::StrCat(kXr, "?resourceVersion=", rv, "&resourceVersionMatch=Exact")), 410,
      "Expired");
}

TEST_F(KubeTestServerTest, LabelAndFieldSelectorsFilterLists) {
  Call("POST", kXr, XrBody("a", "listener", R"(,"labels":{"tier":"front"})"));
  Call("POST", kXr, XrBody("b", "listener", R"(,"labels":{"tier":"back"})"));
  CreateXr("c");
  auto names = [&](const std::string& query) {
    std::vector<std::string> result;
    Reply reply = Call("GET", absl::StrCat(kXr, "?", query));
    EXPECT_EQ(reply.code, 200) << reply.raw;
    for (const Json& item : *Find(reply.body, "items"))
      result.push_back(GetString(item, {"metadata", "name"}));
    return result;
  };
  EXPECT_THAT(names("labelSelector=tier%3Dfront"), ElementsAre("a"));
  EXPECT_THAT(names("labelSelector=tier%21%3Dfront"), ElementsAre("b", "c"));
  EXPECT_THAT(names("labelSelector=tier"), ElementsAre("a", "b"));
  EXPECT_THAT(names("labelSelector=%21tier"), ElementsAre("c"));
  EXPECT_THAT(names("labelSelector=tier+in+(front,back)"), ElementsAre("a", "b"));
  EXPECT_THAT(names("fieldSelector=metadata.name%3Db"), ElementsAre("b"));
  ExpectStatus(Call("GET", absl::StrCat(kXr, "?fieldSelector=spec.type%3Dx")), 400, "BadRequest");
}

TEST_F(KubeTestServerTest, AnswersTablesForKubectlGet) {
  Json object = CreateXr("a").body;
  object["status"]["conditions"] =
      Json::array({ParseOrDie(R"({"type":"Accepted","status":"True"})")});
  object["status"]["variantCount"] = 1;
  ASSERT_EQ(Call("PUT", absl::StrCat(kXr, "/a/status"), Dump(object)).code, 200);
  Reply table = Call("GET", kXr, "", "",
                     {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_EQ(table.code, 200);
  EXPECT_EQ(GetString(table.body, {"kind"}), "Table");
  std::vector<std::string> columns;
  for (const Json& column : *Find(table.body, "columnDefinitions"))
    columns.push_back(GetString(column, {"name"}));
  EXPECT_THAT(columns, ElementsAre("Name", "Type", "xDS Name", "Variants", "Accepted", "Programmed",
                                   "Authority", "Age"));
  const Json& row = Find(table.body, "rows")->at(0);
  // The age is 0s or 1s: a second may turn between the create and the read.
  EXPECT_THAT(Dump(*Find(row, "cells")),
              MatchesRegex(R"(\["a","listener",null,1,"True",null,null,"[01]s"\])"));
  EXPECT_EQ(GetString(row, {"object", "kind"}), "PartialObjectMetadata");
}

// ---- Watch ----

TEST_F(KubeTestServerTest, WatchFromZeroSendsSyntheticAddedThenChanges) {
  CreateXr("a");
  CreateXr("b");
  auto watch = Watch(absl::StrCat(kXr, "?watch=1&resourceVersion=0"));
  Json first = NextEvent(*watch);
  Json second = NextEvent(*watch);
  EXPECT_EQ(Type(first), "ADDED");
  EXPECT_EQ(Type(second), "ADDED");
  EXPECT_EQ(Name(first) + Name(second), "ab");
  CreateXr("c");
  Json added = NextEvent(*watch);
  EXPECT_EQ(Type(added), "ADDED");
  EXPECT_EQ(Name(added), "c");
  Call("PATCH", absl::StrCat(kXr, "/c"), R"({"metadata":{"labels":{"x":"y"}}})", kMerge);
  Json modified = NextEvent(*watch);
  EXPECT_EQ(Type(modified), "MODIFIED");
  EXPECT_EQ(GetString(modified, {"object", "metadata", "labels", "x"}), "y");
  EXPECT_EQ(server_->watch_count(), 1);
  EXPECT_EQ(server_->list_count(), 0);
}

TEST_F(KubeTestServerTest, WatchFromEmptyResourceVersionAlsoStartsWithState) {
  CreateXr("a");
  auto watch = Watch(absl::StrCat(kXr, "?watch=true"));
  EXPECT_EQ(Type(NextEvent(*watch)), "ADDED");
}

TEST_F(KubeTestServerTest, WatchFromResourceVersionReplaysLaterHistory) {
  std::string rv = CreateXr("a").rv();
  CreateXr("b");
  Call("DELETE", absl::StrCat(kXr, "/a"));
  auto watch = Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", rv));
  Json added = NextEvent(*watch);
  EXPECT_EQ(Type(added), "ADDED");
  EXPECT_EQ(Name(added), "b");
  Json deleted = NextEvent(*watch);
  EXPECT_EQ(Type(deleted), "DELETED");
  EXPECT_EQ(Name(deleted), "a");
}

TEST_F(KubeTestServerTest, WatchFromCompactedResourceVersionIs200ThenError410) {
  KubeTestServer::Options options;
  options.watch_history = 2;
  Start(options);
  std::string rv = CreateXr("a").rv();
  for (const char* name : {"b", "c", "d"}) CreateXr(name);
  auto watch = Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", rv));
  Json error = NextEvent(*watch);
  EXPECT_EQ(Type(error), "ERROR");
  EXPECT_EQ(GetString(error, {"object", "kind"}), "Status");
  EXPECT_EQ(GetString(error, {"object", "reason"}), "Expired");
  EXPECT_EQ(FindPath(error, {"object", "code"})->get<int64_t>(), 410);
  EXPECT_THAT(GetString(error, {"object", "message"}),
              HasSubstr(absl::StrCat("too old resource version: ", rv)));
  EXPECT_THAT(watch->NextLine(), StatusIs(absl::StatusCode::kOutOfRange));  // Clean close.
}

TEST_F(KubeTestServerTest, WatchTimeoutEndsCleanlyAfterABookmark) {
  KubeTestServer::Options options;
  options.bookmark_interval = absl::Hours(1);
  Start(options);
  std::string rv = CreateXr("a").rv();
  auto watch = Watch(absl::StrCat(
      kXr, "?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=", rv));
  Json bookmark = NextEvent(*watch);
  EXPECT_EQ(Type(bookmark), "BOOKMARK");
  EXPECT_THAT(watch->NextLine(), StatusIs(absl::StatusCode::kOutOfRange));
  // Without bookmarks the stream just ends.
  auto plain = Watch(absl::StrCat(kXr, "?watch=true&timeoutSeconds=1&resourceVersion=", rv));
  EXPECT_THAT(plain->NextLine(), StatusIs(absl::StatusCode::kOutOfRange));
}

TEST_F(KubeTestServerTest, BookmarksCarryOnlyKindApiVersionAndResourceVersion) {
  KubeTestServer::Options options;
  options.bookmark_interval = absl::Milliseconds(50);
  Start(options);
  std::string rv = CreateXr("a").rv();
  auto watch =
      Watch(absl::StrCat(kXr, "?watch=true&allowWatchBookmarks=true&resourceVersion=", rv));
  Json bookmark = NextEvent(*watch);
  ASSERT_EQ(Type(bookmark), "BOOKMARK");
  EXPECT_EQ(
      Dump(*Find(bookmark, "object")),
      absl::StrCat(
          R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","metadata":{"resourceVersion":")",
          rv, R"("}})"));
}

TEST_F(KubeTestServerTest, NamespaceWatchSeesOnlyItsNamespace) {
  auto demo = Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", server_->resource_version()));
  auto all =
      Watch(absl::StrCat(kAllXr, "?watch=true&resourceVersion=", server_->resource_version()));
  CreateXr("x", "other");
  CreateXr("y", "demo");
  EXPECT_EQ(Name(NextEvent(*demo)), "y");
  EXPECT_EQ(Name(NextEvent(*all)), "x");
  EXPECT_EQ(Name(NextEvent(*all)), "y");
}

TEST_F(KubeTestServerTest, WatchWithSelectorTurnsLeavingObjectsIntoDeleted) {
  std::string rv = absl::StrCat(server_->resource_version());
  auto watch =
      Watch(absl::StrCat(kXr, "?watch=true&labelSelector=tier%3Dfront&resourceVersion=", rv));
  CreateXr("a");
  Call("PATCH", absl::StrCat(kXr, "/a"), R"({"metadata":{"labels":{"tier":"front"}}})", kMerge);
  Call("PATCH", absl::StrCat(kXr, "/a"), R"({"metadata":{"labels":{"tier":"back"}}})", kMerge);
  EXPECT_EQ(Type(NextEvent(*watch)), "ADDED");
  EXPECT_EQ(Type(NextEvent(*watch)), "DELETED");
}

TEST_F(KubeTestServerTest, SendInitialEventsEndsWithAnnotatedBookmark) {
  CreateXr("a");
  auto watch = Watch(absl::StrCat(kXr,
                                  "?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
                                  "&resourceVersionMatch=NotOlderThan"));
  EXPECT_EQ(Type(NextEvent(*watch)), "ADDED");
  Json bookmark = NextEvent(*watch);
  EXPECT_EQ(Type(bookmark), "BOOKMARK");
  EXPECT_EQ(GetString(bookmark, {"object", "metadata", "annotations", "k8s.io/initial-events-end"}),
            "true");
}

TEST_F(KubeTestServerTest, DeprecatedWatchPathWatchesOneObject) {
  CreateXr("a");
  CreateXr("b");
  auto watch = Watch("/apis/facet.dev/v1alpha1/watch/namespaces/demo/xdsresources/b");
  EXPECT_EQ(Name(NextEvent(*watch)), "b");
}

// ---- Fault injection ----

TEST_F(KubeTestServerTest, DropWatchesCutsStreamsWithoutTerminatingChunk) {
  auto watch =
      Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForOpenWatches(1, kTimeout));
  server_->DropWatches();
  EXPECT_THAT(watch->NextLine(), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(KubeTestServerTest, DropWatchesMidEventLeavesATruncatedLine) {
  auto watch =
      Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForOpenWatches(1, kTimeout));
  server_->DropWatches(/*mid_event=*/true);
  EXPECT_THAT(watch->NextLine(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(watch->partial(), HasSubstr(R"({"type":"MODIFIED")"));
}

TEST_F(KubeTestServerTest, ExpireWatchesSendsError410AndCompacts) {
  std::string rv = CreateXr("a").rv();
  CreateXr("b");
  auto watch =
      Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForOpenWatches(1, kTimeout));
  server_->ExpireWatches();
  Json error = NextEvent(*watch);
  EXPECT_EQ(Type(error), "ERROR");
  EXPECT_EQ(FindPath(error, {"object", "code"})->get<int64_t>(), 410);
  EXPECT_THAT(watch->NextLine(), StatusIs(absl::StatusCode::kOutOfRange));
  // Older resourceVersions are now too old for new watches.
  auto again = Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", rv));
  EXPECT_EQ(Type(NextEvent(*again)), "ERROR");
}

TEST_F(KubeTestServerTest, ChunkingCanSplitAndCoalesceEvents) {
  server_->SetChunking(/*split_events=*/true, /*coalesce_events=*/false);
  CreateXr("a");
  auto split = Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=0"));
  EXPECT_EQ(Name(NextEvent(*split)), "a");
  ASSERT_THAT(split->chunks(), SizeIs(2));
  EXPECT_THAT(split->chunks()[0], Not(HasSubstr("\n")));

  server_->SetChunking(/*split_events=*/false, /*coalesce_events=*/true);
  CreateXr("b");
  auto coalesced = Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=0"));
  EXPECT_EQ(Name(NextEvent(*coalesced)), "a");
  EXPECT_EQ(Name(NextEvent(*coalesced)), "b");
  EXPECT_THAT(coalesced->chunks(), SizeIs(1));
}

TEST_F(KubeTestServerTest, FailNextRequestsAnswersWithStatusAndRetryAfter) {
  server_->FailNextRequests(2, 429, /*retry_after_seconds=*/3);
  Reply first = Call("GET", kXr);
  ExpectStatus(first, 429, "TooManyRequests");
  EXPECT_EQ(first.Header("retry-after"), "3");
  EXPECT_EQ(FindPath(first.body, {"details", "retryAfterSeconds"})->get<int64_t>(), 3);
  ExpectStatus(Call("GET", absl::StrCat(kXr, "?watch=true")), 429, "TooManyRequests");
  EXPECT_EQ(Call("GET", kXr).code, 200);
  server_->FailNextRequests(1, 500);
  ExpectStatus(Call("GET", kXr), 500, "InternalError");
  EXPECT_EQ(Call("GET", kXr).code, 200);
}

TEST_F(KubeTestServerTest, LatencyDelaysResponses) {
  server_->SetLatency(absl::Milliseconds(200));
  absl::Time start = absl::Now();
  EXPECT_EQ(Call("GET", kXr).code, 200);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(200));
}

TEST_F(KubeTestServerTest, HangHoldsRequestsUntilReleased) {
  server_->SetHang(true);
  auto connection = HttpConnection::Connect(server_->port());
  ASSERT_THAT(connection, IsOk());
  ASSERT_THAT((*connection)->Send("GET", kXr, {{"Authorization", "Bearer test-token"}}, ""),
              IsOk());
  EXPECT_THAT((*connection)->ReadHead(absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  server_->SetHang(false);
  auto head = (*connection)->ReadHead(kTimeout);
  ASSERT_THAT(head, IsOk());
  EXPECT_EQ(head->code, 200);
}

TEST_F(KubeTestServerTest, RestartKeepsStateAndCutsConnections) {
  CreateXr("a");
  auto watch =
      Watch(absl::StrCat(kXr, "?watch=true&resourceVersion=", server_->resource_version()));
  ASSERT_TRUE(server_->WaitForOpenWatches(1, kTimeout));
  int port = server_->port();
  ASSERT_THAT(server_->Restart(), IsOk());
  EXPECT_THAT(watch->NextLine(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(server_->port(), port);
  EXPECT_EQ(Call("GET", absl::StrCat(kXr, "/a")).code, 200);
}

TEST_F(KubeTestServerTest, StopListeningRefusesConnectionsUntilResumed) {
  server_->StopListening();
  EXPECT_THAT(HttpConnection::Connect(server_->port()), StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_THAT(server_->ResumeListening(), IsOk());
  EXPECT_EQ(Call("GET", kXr).code, 200);
}

// ---- HTTP and test access ----

TEST_F(KubeTestServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto connection = HttpConnection::Connect(server_->port());
  ASSERT_THAT(connection, IsOk());
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT((*connection)->Send("GET", kXr, {{"Authorization", "Bearer test-token"}}, ""),
                IsOk());
    auto head = (*connection)->ReadHead(kTimeout);
    ASSERT_THAT(head, IsOk());
    EXPECT_EQ(head->code, 200);
    ASSERT_THAT((*connection)->ReadBody(*head, kTimeout), IsOk());
  }
}

TEST_F(KubeTestServerTest, GetObjectReturnsObjectsAndLists) {
  CreateXr("a");
  EXPECT_THAT(*server_->GetObject(kXr), HasSubstr(R"("kind":"XdsResourceList")"));
  EXPECT_EQ(server_->GetObject(absl::StrCat(kXr, "/missing")), std::nullopt);
  EXPECT_EQ(server_->GetObject("/not/a/path"), std::nullopt);
}

TEST_F(KubeTestServerTest, KubeconfigPointsAtTheServerWithItsToken) {
  std::string kubeconfig = KubeconfigFor(*server_, "demo");
  EXPECT_THAT(kubeconfig, HasSubstr(absl::StrCat("server: ", server_->url())));
  EXPECT_THAT(kubeconfig, HasSubstr("token: \"test-token\""));
  EXPECT_THAT(kubeconfig, HasSubstr("namespace: demo"));
  EXPECT_THAT(kubeconfig, HasSubstr("current-context: facet-test"));
}

TEST(KubeTestServerTlsTest, ServesHttpsWithATestCaAndPutsItInTheKubeconfig) {
  KubeTestServer::Options options;
  options.tls = true;
  auto server = KubeTestServer::Start(options);
  ASSERT_THAT(server, IsOk());
  EXPECT_TRUE(absl::StartsWith((*server)->url(), "https://127.0.0.1:"));
  EXPECT_THAT((*server)->ca_pem(), HasSubstr("BEGIN CERTIFICATE"));
  auto connection = HttpConnection::Connect((*server)->port(), (*server)->ca_pem());
  ASSERT_THAT(connection, IsOk());
  ASSERT_THAT((*connection)
                  ->Send("GET", "/apis/facet.dev/v1alpha1/xdsresources",
                         {{"Authorization", "Bearer test-token"}}, ""),
              IsOk());
  auto head = (*connection)->ReadHead(kTimeout);
  ASSERT_THAT(head, IsOk());
  EXPECT_EQ(head->code, 200);
  auto body = (*connection)->ReadBody(*head, kTimeout);
  ASSERT_THAT(body, IsOk());
  EXPECT_THAT(*body, HasSubstr("XdsResourceList"));
  EXPECT_THAT(KubeconfigFor(**server), HasSubstr("certificate-authority-data: "));
  // A client that does not trust the test CA fails the handshake.
  auto other = KubeTestServer::Start(options);
  ASSERT_THAT(other, IsOk());
  EXPECT_THAT(HttpConnection::Connect((*server)->port(), (*other)->ca_pem()), Not(IsOk()));
}

TEST_F(KubeTestServerTest, AcceptsAProtobufNamespaceAsKubectlCreateSendsIt) {
  // "k8s\0" + Unknown{typeMeta{apiVersion "v1", kind "Namespace"}, raw Namespace{
  //   metadata{name "pb", generateName ""}}}, as `kubectl create namespace pb` sends it.
  const std::string meta = std::string("\x0a\x02pb\x12\x00", 6);
  const std::string ns = std::string("\x0a") + static_cast<char>(meta.size()) + meta;
  const std::string type_meta = std::string("\x0a\x02v1\x12\x09Namespace", 15);
  const std::string body = std::string("k8s\0", 4) + "\x0a" + static_cast<char>(type_meta.size()) +
                           type_meta + "\x12" + static_cast<char>(ns.size()) + ns;
  Reply created = Call("POST", "/api/v1/namespaces", body, "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(GetString(created.body, {"metadata", "name"}), "pb");
  EXPECT_EQ(FindPath(created.body, {"metadata", "generateName"}), nullptr);
  EXPECT_EQ(GetString(created.body, {"status", "phase"}), "Active");
  ExpectStatus(
      Call("POST", kXr, std::string("k8s\0\x0a\x00", 6), "application/vnd.kubernetes.protobuf"),
      415, "UnsupportedMediaType");
}

// ---- Validating admission webhooks ----

// An HTTPS admission webhook on loopback with a certificate for
// "hook.webhooks.svc" (and localhost) from its own CA: records every
// AdmissionReview it receives and answers with `decide(request)` (the
// response's allowed and status), after `delay` if one is set.
class FakeWebhook {
 public:
  static std::unique_ptr<FakeWebhook> Start() {
    auto webhook = std::unique_ptr<FakeWebhook>(new FakeWebhook());
    auto credentials = GenerateTestCredentials({"hook.webhooks.svc"});
    EXPECT_THAT(credentials, IsOk());
    if (!credentials.ok()) return nullptr;
    webhook->ca_pem_ = credentials->ca_pem;
    FakeWebhook* self = webhook.get();
    auto server = HttpServer::Start(
        0,
        [self](const HttpRequest& request, HttpResponder& responder) {
          self->Serve(request, responder);
        },
        *credentials);
    EXPECT_THAT(server, IsOk());
    if (!server.ok()) return nullptr;
    webhook->server_ = *std::move(server);
    return webhook;
  }
  ~FakeWebhook() {
    release_.Notify();
    server_.reset();
  }

  int port() const { return server_->port(); }
  std::string ca_bundle() const { return absl::Base64Escape(ca_pem_); }
  // Answers with allowed=false and `status` (a metav1.Status object, JSON).
  void Deny(const std::string& status) {
    absl::MutexLock lock(&mu_);
    deny_status_ = status;
  }
  // Holds every answer until the webhook is destroyed.
  void Hang() {
    absl::MutexLock lock(&mu_);
    hang_ = true;
  }
  std::vector<Json> reviews() const {
    absl::MutexLock lock(&mu_);
    return reviews_;
  }
  std::vector<std::string> targets() const {
    absl::MutexLock lock(&mu_);
    return targets_;
  }

 private:
  FakeWebhook() = default;

  void Serve(const HttpRequest& request, HttpResponder& responder) {
    Json review = ParseOrDie(request.body);
    std::string deny_status;
    bool hang;
    {
      absl::MutexLock lock(&mu_);
      reviews_.push_back(review);
      targets_.push_back(request.target);
      deny_status = deny_status_;
      hang = hang_;
    }
    if (hang) release_.WaitForNotificationWithTimeout(absl::Seconds(30));
    Json answer = Json::object();
    answer["apiVersion"] = "admission.k8s.io/v1";
    answer["kind"] = "AdmissionReview";
    answer["response"]["uid"] = GetString(review, {"request", "uid"});
    answer["response"]["allowed"] = deny_status.empty();
    if (!deny_status.empty()) answer["response"]["status"] = ParseOrDie(deny_status);
    responder.Send(200, {{"Content-Type", "application/json"}}, Dump(answer));
  }

  std::string ca_pem_;
  std::unique_ptr<HttpServer> server_;
  absl::Notification release_;
  mutable absl::Mutex mu_;
  std::string deny_status_ ABSL_GUARDED_BY(mu_);
  bool hang_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Json> reviews_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> targets_ ABSL_GUARDED_BY(mu_);
};

constexpr char kWebhookConfigurations[] =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

class AdmissionWebhookTest : public KubeTestServerTest {
 protected:
  void SetUp() override {
    KubeTestServerTest::SetUp();
    webhook_ = FakeWebhook::Start();
    ASSERT_NE(webhook_, nullptr);
    server_->SetServiceAddress("webhooks", "hook", 443,
                               absl::StrCat("127.0.0.1:", webhook_->port()));
  }

  // Registers configuration `name` with one webhook "validate.facet.dev"
  // calling Service webhooks/hook at /validate; `overrides` (JSON members)
  // replace the webhook's defaults. The caBundle is `ca_bundle`, by default
  // the fake webhook's CA.
  void Register(const std::string& name, const std::string& overrides = "{}",
                const std::string& ca_bundle = "") {
    Json hook = ParseOrDie(absl::StrCat(
        R"({"name":"validate.facet.dev","admissionReviewVersions":["v1"],"sideEffects":"None",)",
        R"("failurePolicy":"Fail","timeoutSeconds":5,)",
        R"("clientConfig":{"service":{"namespace":"webhooks","name":"hook","path":"/validate"}},)",
        R"("rules":[{"operations":["CREATE","UPDATE"],"apiGroups":["facet.dev"],)",
        R"("apiVersions":["v1alpha1"],"resources":["xdsresources","xdsauthorities"]}]})"));
    const Json replacements = ParseOrDie(overrides);
    for (const auto& [key, value] : replacements.items()) hook[key] = value;
    hook["clientConfig"]["caBundle"] = ca_bundle.empty() ? webhook_->ca_bundle() : ca_bundle;
    Json configuration = Json::object();
    configuration["apiVersion"] = "admissionregistration.k8s.io/v1";
    configuration["kind"] = "ValidatingWebhookConfiguration";
    configuration["metadata"]["name"] = name;
    configuration["webhooks"] = Json::array({hook});
    Reply created = Call("POST", kWebhookConfigurations, Dump(configuration));
    ASSERT_EQ(created.code, 201) << created.raw;
  }

  std::unique_ptr<FakeWebhook> webhook_;
};

TEST_F(AdmissionWebhookTest, DenialIsAnsweredWithTheWebhooksMessageAndReason) {
  Register("facet");
  webhook_->Deny(R"({"code":422,"reason":"Invalid","message":"spec.variants: overlap"})");
  Reply denied = Call("POST", kXr, XrBody("a"));
  ExpectStatus(denied, 422, "Invalid");
  EXPECT_EQ(GetString(denied.body, {"message"}),
            "admission webhook \"validate.facet.dev\" denied the request: spec.variants: overlap");
  EXPECT_FALSE(server_->GetObject(absl::StrCat(kXr, "/a")).has_value()) << "not stored";

  // Without a code the answer is 400; without a message the reason explains.
  webhook_->Deny(R"({"reason":"Forbidden"})");
  Reply reason_only = Call("POST", kXr, XrBody("a"));
  EXPECT_EQ(reason_only.code, 400);
  EXPECT_EQ(GetString(reason_only.body, {"message"}),
            "admission webhook \"validate.facet.dev\" denied the request: Forbidden");

  // What the webhook saw: an AdmissionReview v1 for the object as it would be stored.
  std::vector<Json> reviews = webhook_->reviews();
  ASSERT_EQ(reviews.size(), 2u);
  const Json& review = reviews[0];
  EXPECT_EQ(GetString(review, {"apiVersion"}), "admission.k8s.io/v1");
  EXPECT_EQ(GetString(review, {"kind"}), "AdmissionReview");
  EXPECT_FALSE(GetString(review, {"request", "uid"}).empty());
  EXPECT_NE(GetString(review, {"request", "uid"}), GetString(reviews[1], {"request", "uid"}));
  EXPECT_EQ(Dump(*FindPath(review, {"request", "kind"})),
            R"({"group":"facet.dev","kind":"XdsResource","version":"v1alpha1"})");
  EXPECT_EQ(Dump(*FindPath(review, {"request", "resource"})),
            R"({"group":"facet.dev","resource":"xdsresources","version":"v1alpha1"})");
  EXPECT_EQ(GetString(review, {"request", "name"}), "a");
  EXPECT_EQ(GetString(review, {"request", "namespace"}), "demo");
  EXPECT_EQ(GetString(review, {"request", "operation"}), "CREATE");
  EXPECT_EQ(GetString(review, {"request", "object", "metadata", "namespace"}), "demo");
  EXPECT_FALSE(GetString(review, {"request", "object", "metadata", "uid"}).empty());
  EXPECT_EQ(GetString(review, {"request", "object", "spec", "type"}), "listener");
  EXPECT_TRUE(FindPath(review, {"request", "oldObject"})->is_null());
  EXPECT_EQ(Dump(*FindPath(review, {"request", "dryRun"})), "false");
  EXPECT_EQ(GetString(review, {"request", "userInfo", "username"}), "facet-test");
  EXPECT_EQ(GetString(review, {"request", "options", "kind"}), "CreateOptions");
  EXPECT_THAT(webhook_->targets(), ElementsAre("/validate?timeout=5s", "/validate?timeout=5s"));
}

TEST_F(AdmissionWebhookTest, AdmittedWritesAreStoredAndUpdatesCarryTheOldObject) {
  Register("facet");
  Reply created = Call("POST", kXr, XrBody("a"));
  ASSERT_EQ(created.code, 201) << created.raw;
  // The webhook saw the very object stored.
  ASSERT_EQ(webhook_->reviews().size(), 1u);
  EXPECT_EQ(GetString(webhook_->reviews()[0], {"request", "object", "metadata", "uid"}),
            GetString(created.body, {"metadata", "uid"}));
  Reply patched = Call("PATCH", absl::StrCat(kXr, "/a"), R"({"spec":{"name":"edited"}})", kMerge);
  ASSERT_EQ(patched.code, 200) << patched.raw;
  EXPECT_EQ(patched.generation(), 2);
  std::vector<Json> reviews = webhook_->reviews();
  ASSERT_EQ(reviews.size(), 2u);
  EXPECT_EQ(GetString(reviews[1], {"request", "operation"}), "UPDATE");
  EXPECT_EQ(GetString(reviews[1], {"request", "object", "spec", "name"}), "edited");
  EXPECT_EQ(GetString(reviews[1], {"request", "oldObject", "spec", "name"}), "greeter");
  EXPECT_EQ(GetString(reviews[1], {"request", "options", "kind"}), "UpdateOptions");

  // A denied update leaves the stored object as it was.
  webhook_->Deny(R"({"message":"no"})");
  ExpectStatus(Call("PATCH", absl::StrCat(kXr, "/a"), R"({"spec":{"name":"x"}})", kMerge), 400, "");
  std::optional<std::string> stored = server_->GetObject(absl::StrCat(kXr, "/a"));
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(GetString(ParseOrDie(*stored), {"spec", "name"}), "edited");
  // DELETE is not in the rules: not called.
  EXPECT_EQ(Call("DELETE", absl::StrCat(kXr, "/a")).code, 200);
  EXPECT_THAT(webhook_->reviews(), SizeIs(3));
}

TEST_F(AdmissionWebhookTest, OnlyWritesMatchingRulesAndSelectorsAreSentToTheWebhook) {
  Register("facet",
           R"({"rules":[{"operations":["CREATE"],"apiGroups":["facet.dev"],)"
           R"("apiVersions":["*"],"resources":["xdsresources"],"scope":"Namespaced"}],)"
           R"("objectSelector":{"matchLabels":{"checked":"yes"}},)"
           R"("namespaceSelector":{"matchExpressions":[)"
           R"({"key":"kubernetes.io/metadata.name","operator":"In","values":["demo"]}]}})");
  webhook_->Deny(R"({"message":"no"})");
  // Another resource, another namespace, an unlabelled object, the status
  // subresource: none is sent.
  EXPECT_EQ(Call("POST", kXa,
                 R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsAuthority",)"
                 R"("metadata":{"name":"a","labels":{"checked":"yes"}}})")
                .code,
            201);
  EXPECT_EQ(Call("POST", "/apis/facet.dev/v1alpha1/namespaces/other/xdsresources",
                 XrBody("a", "listener", R"(,"labels":{"checked":"yes"})"))
                .code,
            201);
  Reply unlabelled = Call("POST", kXr, XrBody("a"));
  EXPECT_EQ(unlabelled.code, 201);
  Json status = unlabelled.body;
  status["status"]["observedGeneration"] = 1;
  EXPECT_EQ(Call("PUT", absl::StrCat(kXr, "/a/status"), Dump(status)).code, 200);
  EXPECT_THAT(webhook_->reviews(), IsEmpty());
  // A labelled object in demo is.
  Reply denied = Call("POST", kXr, XrBody("b", "listener", R"(,"labels":{"checked":"yes"})"));
  EXPECT_EQ(denied.code, 400) << denied.raw;
  EXPECT_THAT(webhook_->reviews(), SizeIs(1));
}

TEST_F(AdmissionWebhookTest, FailurePolicyDecidesWhenTheWebhookCannotBeCalled) {
  Register("facet", R"({"clientConfig":{"service":{"namespace":"webhooks","name":"nowhere"}}})");
  Reply failed = Call("POST", kXr, XrBody("a"));
  ExpectStatus(failed, 500, "InternalError");
  EXPECT_EQ(GetString(failed.body, {"message"}),
            "Internal error occurred: failed calling webhook \"validate.facet.dev\": failed to "
            "call webhook: Post \"https://nowhere.webhooks.svc:443?timeout=5s\": service "
            "\"nowhere\" not found");
  EXPECT_FALSE(server_->GetObject(absl::StrCat(kXr, "/a")).has_value());

  Register("ignored", R"({"name":"ignored.facet.dev","failurePolicy":"Ignore",)"
                      R"("clientConfig":{"service":{"namespace":"webhooks","name":"nowhere"}}})");
  ASSERT_EQ(Call("DELETE", absl::StrCat(kWebhookConfigurations, "/facet")).code, 200);
  EXPECT_EQ(Call("POST", kXr, XrBody("a")).code, 201);
}

TEST_F(AdmissionWebhookTest, TheCaBundleMustVerifyTheWebhooksCertificate) {
  auto other = GenerateTestCredentials({"hook.webhooks.svc"});
  ASSERT_THAT(other, IsOk());
  Register("facet", "{}", absl::Base64Escape(other->ca_pem));
  Reply failed = Call("POST", kXr, XrBody("a"));
  ExpectStatus(failed, 500, "InternalError");
  EXPECT_THAT(GetString(failed.body, {"message"}), HasSubstr("x509"));
  EXPECT_THAT(webhook_->reviews(), IsEmpty()) << "no review over an unverified connection";
}

TEST_F(AdmissionWebhookTest, TimeoutSecondsBoundsTheCall) {
  webhook_->Hang();
  Register("facet", R"({"timeoutSeconds":1})");
  const absl::Time start = absl::Now();
  Reply failed = Call("POST", kXr, XrBody("a"));
  ExpectStatus(failed, 500, "InternalError");
  EXPECT_THAT(GetString(failed.body, {"message"}), HasSubstr("context deadline exceeded"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_EQ(Call("DELETE", absl::StrCat(kWebhookConfigurations, "/facet")).code, 200);
  Register("facet", R"({"timeoutSeconds":1,"failurePolicy":"Ignore"})");
  EXPECT_EQ(Call("POST", kXr, XrBody("a")).code, 201);
}

TEST_F(AdmissionWebhookTest, CallsUrlsAndSendsDryRun) {
  Register("facet", absl::StrCat(R"({"clientConfig":{"url":"https://localhost:)", webhook_->port(),
                                 R"(/check"}})"));
  EXPECT_EQ(Call("POST", absl::StrCat(kXr, "?dryRun=All"), XrBody("a")).code, 201);
  EXPECT_FALSE(server_->GetObject(absl::StrCat(kXr, "/a")).has_value());
  std::vector<Json> reviews = webhook_->reviews();
  ASSERT_EQ(reviews.size(), 1u);
  EXPECT_EQ(Dump(*FindPath(reviews[0], {"request", "dryRun"})), "true");
  EXPECT_THAT(webhook_->targets(), ElementsAre("/check?timeout=5s"));
  // A webhook with side effects refuses dry runs without being called.
  Register("effects", R"({"name":"effects.facet.dev","sideEffects":"Some"})");
  Reply refused = Call("POST", absl::StrCat(kXr, "?dryRun=All"), XrBody("a"));
  ExpectStatus(refused, 400, "BadRequest");
  EXPECT_THAT(GetString(refused.body, {"message"}),
              HasSubstr("admission webhook \"effects.facet.dev\" does not support dry run"));
}

TEST_F(AdmissionWebhookTest, ConfigurationsAreServedLikeOtherTypes) {
  Register("facet");
  Reply list = Call("GET", "/apis/admissionregistration.k8s.io/v1");
  EXPECT_THAT(list.raw, HasSubstr(R"("kind":"ValidatingWebhookConfiguration")"));
  EXPECT_THAT(list.raw, HasSubstr(R"("name":"validatingwebhookconfigurations")"));
  Reply got = Call("GET", absl::StrCat(kWebhookConfigurations, "/facet"));
  EXPECT_EQ(got.code, 200);
  EXPECT_EQ(GetString(got.body, {"metadata", "name"}), "facet");
  // kubectl get shows how many webhooks a configuration has.
  Reply table =
      Call("GET", kWebhookConfigurations, "", "",
           {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_EQ(table.code, 200);
  // The age is 0s or 1s: a second may turn between the create and the read.
  EXPECT_THAT(Dump(*Find(Find(table.body, "rows")->at(0), "cells")),
              MatchesRegex(R"(\["facet",1,"[01]s"\])"));
  // Writing a configuration never goes through a webhook.
  webhook_->Deny(R"({"message":"no"})");
  EXPECT_EQ(Call("DELETE", absl::StrCat(kWebhookConfigurations, "/facet")).code, 200);
  EXPECT_THAT(webhook_->reviews(), IsEmpty());
}

}  // namespace
}  // namespace facet::testing
