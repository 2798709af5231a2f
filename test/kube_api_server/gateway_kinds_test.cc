// The kinds Facet's Gateway API front end reads, over real HTTP: GRPCRoute,
// ReferenceGrant, XdsVariantPolicy and Service, their discovery, and servers
// that leave the custom ones out (a cluster without their CRDs).
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/kube_api_server/kube_test_server.h"
#include "test/kube_api_server/kube_test_server_fixture.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kGateway[] = "/apis/gateway.networking.k8s.io";
constexpr char kRoutes[] = "/apis/gateway.networking.k8s.io/v1/namespaces/demo/grpcroutes";
constexpr char kAllRoutes[] = "/apis/gateway.networking.k8s.io/v1/grpcroutes";
constexpr char kGrants[] =
    "/apis/gateway.networking.k8s.io/v1beta1/namespaces/demo/referencegrants";
constexpr char kPolicies[] = "/apis/facet.dev/v1alpha1/namespaces/demo/xdsvariantpolicies";
constexpr char kServices[] = "/api/v1/namespaces/demo/services";
constexpr char kTableAccept[] = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

std::string RouteBody(const std::string& name, const std::string& hostname = "greeter.example") {
  return absl::StrCat(
      R"({"apiVersion":"gateway.networking.k8s.io/v1","kind":"GRPCRoute","metadata":{"name":")",
      name, R"("},"spec":{"hostnames":[")", hostname,
      R"("],"parentRefs":[{"group":"","kind":"Service","name":"greeter","port":50051}],)",
      R"("rules":[{"name":"canary","backendRefs":[{"name":"greeter-v2","port":50051}]}]},)",
      R"("status":{"parents":[]}})");
}

std::string PolicyBody(const std::string& name) {
  return absl::StrCat(
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsVariantPolicy","metadata":{"name":")", name,
      R"("},"spec":{"targetRefs":[{"group":"gateway.networking.k8s.io","kind":"GRPCRoute",)",
      R"("name":"greeter","sectionName":"canary"}],"when":{"env":"prod"}}})");
}

std::string Cells(const Reply& table, size_t row = 0) {
  const Json* rows = Find(table.body, "rows");
  if (rows == nullptr || rows->size() <= row) return "";
  return Dump(*Find(rows->at(row), "cells"));
}

std::vector<std::string> ColumnNames(const Reply& table) {
  std::vector<std::string> names;
  for (const Json& column : *Find(table.body, "columnDefinitions")) {
    names.push_back(GetString(column, {"name"}));
  }
  return names;
}

using GatewayKindsTest = KubeTestServerTest;

TEST_F(GatewayKindsTest, GrpcRouteIsACustomResourceWithAStatusSubresource) {
  Reply created = Call("POST", kRoutes, RouteBody("greeter"));
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(created.generation(), 1);
  EXPECT_FALSE(GetString(created.body, {"metadata", "creationTimestamp"}).empty());
  EXPECT_EQ(Find(created.body, "status"), nullptr);

  // Status writes never bump the generation...
  Json object = created.body;
  object["status"]["parents"] = ParseOrDie(
      R"([{"controllerName":"facet.dev/gateway-controller","parentRef":{"group":"","kind":"Service","name":"greeter"},)"
      R"("conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"",)"
      R"("observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}])");
  Reply status = Call("PUT", absl::StrCat(kRoutes, "/greeter/status"), Dump(object));
  ASSERT_EQ(status.code, 200) << status.raw;
  EXPECT_EQ(status.generation(), 1);
  EXPECT_EQ(GetString(status.body, {"status", "parents"}), "");
  EXPECT_EQ(FindPath(status.body, {"status", "parents"})->size(), 1u);

  // ...nor do metadata changes; spec changes do, and keep the status.
  Reply labeled = Call("PATCH", absl::StrCat(kRoutes, "/greeter"),
                       R"({"metadata":{"labels":{"team":"a"}}})", kMerge);
  EXPECT_EQ(labeled.generation(), 1);
  Reply edited = Call("PATCH", absl::StrCat(kRoutes, "/greeter"),
                      R"({"spec":{"hostnames":["other.example"]}})", kMerge);
  ASSERT_EQ(edited.code, 200) << edited.raw;
  EXPECT_EQ(edited.generation(), 2);
  EXPECT_EQ(FindPath(edited.body, {"status", "parents"})->size(), 1u);
  ExpectStatus(Call("PATCH", absl::StrCat(kRoutes, "/greeter"), "{}",
                    "application/strategic-merge-patch+json"),
               415, "UnsupportedMediaType");
}

TEST_F(GatewayKindsTest, GrpcRouteWatchesAndListsFollowNamespaces) {
  ASSERT_EQ(Call("POST", kRoutes, RouteBody("a")).code, 201);
  ASSERT_EQ(
      Call("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/other/grpcroutes", RouteBody("b"))
          .code,
      201);
  Reply demo = Call("GET", kRoutes);
  EXPECT_EQ(GetString(demo.body, {"kind"}), "GRPCRouteList");
  EXPECT_EQ(GetString(demo.body, {"apiVersion"}), "gateway.networking.k8s.io/v1");
  ASSERT_EQ(Find(demo.body, "items")->size(), 1u);
  EXPECT_EQ(Find(Call("GET", kAllRoutes).body, "items")->size(), 2u);

  auto watch = Watch(absl::StrCat(kRoutes, "?watch=1&resourceVersion=", demo.rv()));
  ASSERT_NE(watch, nullptr);
  ASSERT_EQ(
      Call("PATCH", absl::StrCat(kRoutes, "/a"), R"({"spec":{"hostnames":["x.example"]}})", kMerge)
          .code,
      200);
  ASSERT_EQ(
      Call("POST", "/apis/gateway.networking.k8s.io/v1/namespaces/other/grpcroutes", RouteBody("c"))
          .code,
      201);
  ASSERT_EQ(Call("DELETE", absl::StrCat(kRoutes, "/a")).code, 200);
  Json modified = NextEvent(*watch);
  EXPECT_EQ(Type(modified), "MODIFIED");
  EXPECT_EQ(GetString(modified, {"object", "spec", "hostnames"}), "");
  EXPECT_EQ(Dump(*FindPath(modified, {"object", "spec", "hostnames"})), R"(["x.example"])");
  Json deleted = NextEvent(*watch);  // The route in "other" is not seen.
  EXPECT_EQ(Type(deleted), "DELETED");
  EXPECT_EQ(Name(deleted), "a");
}

TEST_F(GatewayKindsTest, GrpcRouteTableShowsHostnames) {
  ASSERT_EQ(Call("POST", kRoutes, RouteBody("greeter")).code, 201);
  Reply table = Call("GET", kRoutes, "", "", {{"Accept", kTableAccept}});
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Hostnames", "Age"));
  EXPECT_THAT(Cells(table), HasSubstr(R"(["greeter","[\"greeter.example\"]",)"));
}

TEST_F(GatewayKindsTest, ReferenceGrantIsServedAtV1beta1WithoutStatusSubresource) {
  const std::string grant =
      R"({"apiVersion":"gateway.networking.k8s.io/v1beta1","kind":"ReferenceGrant",)"
      R"("metadata":{"name":"from-clients"},"spec":{"from":[{"group":"gateway.networking.k8s.io",)"
      R"("kind":"GRPCRoute","namespace":"clients"}],"to":[{"group":"","kind":"Service"}]}})";
  Reply created = Call("POST", kGrants, grant);
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(created.generation(), 1);
  ExpectStatus(Call("GET", absl::StrCat(kGrants, "/from-clients/status")), 404, "NotFound");
  ExpectStatus(Call("GET", "/apis/gateway.networking.k8s.io/v1/namespaces/demo/referencegrants"),
               404, "NotFound");
  // Without a status subresource, status is content like spec.
  Reply with_status =
      Call("PATCH", absl::StrCat(kGrants, "/from-clients"), R"({"status":{"note":"x"}})", kMerge);
  EXPECT_EQ(with_status.generation(), 2);
}

TEST_F(GatewayKindsTest, XdsVariantPolicyHasStatusAndPrinterColumns) {
  Reply created = Call("POST", kPolicies, PolicyBody("prod-canary"));
  ASSERT_EQ(created.code, 201) << created.raw;
  Json object = created.body;
  object["status"]["ancestors"] = ParseOrDie(
      R"([{"ancestorRef":{"group":"","kind":"Service","name":"greeter"},)"
      R"("controllerName":"facet.dev/gateway-controller","conditions":[{"type":"Accepted",)"
      R"("status":"True","reason":"Accepted","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}])");
  Reply status = Call("PUT", absl::StrCat(kPolicies, "/prod-canary/status"), Dump(object));
  ASSERT_EQ(status.code, 200) << status.raw;
  EXPECT_EQ(status.generation(), 1);
  Reply table = Call("GET", kPolicies, "", "", {{"Accept", kTableAccept}});
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Target", "Section", "Accepted", "Age"));
  EXPECT_THAT(Cells(table), HasSubstr(R"(["prod-canary","greeter","canary","True",)"));
  Reply by_short_name = Call("GET", "/apis/facet.dev/v1alpha1");
  EXPECT_THAT(by_short_name.raw, HasSubstr(R"("shortNames":["xvp"])"));
}

// ---- Discovery ----

TEST_F(GatewayKindsTest, GatewayGroupPrefersV1AndListsV1beta1) {
  Reply group = Call("GET", kGateway);
  ASSERT_EQ(group.code, 200);
  EXPECT_EQ(GetString(group.body, {"preferredVersion", "groupVersion"}),
            "gateway.networking.k8s.io/v1");
  EXPECT_EQ(Dump(*Find(group.body, "versions")),
            R"([{"groupVersion":"gateway.networking.k8s.io/v1","version":"v1"},)"
            R"({"groupVersion":"gateway.networking.k8s.io/v1beta1","version":"v1beta1"}])");
  Reply v1 = Call("GET", absl::StrCat(kGateway, "/v1"));
  EXPECT_THAT(v1.raw, HasSubstr(R"("name":"grpcroutes/status")"));
  EXPECT_THAT(v1.raw, Not(HasSubstr("referencegrants")));
  Reply v1beta1 = Call("GET", absl::StrCat(kGateway, "/v1beta1"));
  EXPECT_THAT(v1beta1.raw, HasSubstr(R"("shortNames":["refgrant"])"));
  EXPECT_THAT(v1beta1.raw, Not(HasSubstr("referencegrants/status")));

  Reply aggregated = Call("GET", "/apis", "", "",
                          {{"Accept",
                            "application/json;g=apidiscovery.k8s.io;v=v2;"
                            "as=APIGroupDiscoveryList"}});
  for (const Json& item : *Find(aggregated.body, "items")) {
    if (GetString(item, {"metadata", "name"}) != "gateway.networking.k8s.io") continue;
    std::vector<std::string> versions;
    for (const Json& version : *Find(item, "versions")) {
      versions.push_back(GetString(version, {"version"}));
    }
    EXPECT_THAT(versions, ElementsAre("v1", "v1beta1"));
  }
  EXPECT_THAT(aggregated.raw, HasSubstr(R"("resource":"grpcroutes")"));
  EXPECT_THAT(Call("GET", "/api/v1").raw, HasSubstr(R"("shortNames":["svc"])"));
}

TEST_F(GatewayKindsTest, OmittedGroupIsNotServedAsWithoutItsCrds) {
  KubeTestServer::Options options;
  options.omitted_resources = {"gateway.networking.k8s.io", "xdsvariantpolicies.facet.dev"};
  Start(options);
  ExpectStatus(Call("GET", absl::StrCat(kGateway, "/v1")), 404, "NotFound");
  ExpectStatus(Call("GET", kGateway), 404, "NotFound");
  ExpectStatus(Call("GET", kRoutes), 404, "NotFound");
  ExpectStatus(Call("GET", kPolicies), 404, "NotFound");
  EXPECT_THAT(Call("GET", "/apis").raw, Not(HasSubstr("gateway.networking.k8s.io")));
  Reply facet = Call("GET", "/apis/facet.dev/v1alpha1");
  EXPECT_THAT(facet.raw, HasSubstr(R"("name":"xdsresources")"));
  EXPECT_THAT(facet.raw, Not(HasSubstr("xdsvariantpolicies")));
  EXPECT_EQ(Call("GET", kServices).code, 200);  // Built in: always there.
}

TEST_F(GatewayKindsTest, OmittingOneVersionsKindsLeavesTheOtherVersion) {
  KubeTestServer::Options options;
  options.omitted_resources = {"grpcroutes.gateway.networking.k8s.io"};
  Start(options);
  ExpectStatus(Call("GET", absl::StrCat(kGateway, "/v1")), 404, "NotFound");
  Reply group = Call("GET", kGateway);
  EXPECT_EQ(GetString(group.body, {"preferredVersion", "version"}), "v1beta1");
  EXPECT_EQ(Call("GET", kGrants).code, 200);
}

TEST(KubeTestServerOptionsTest, OnlyCustomResourcesCanBeOmitted) {
  for (const char* name : {"services", "namespaces", "widgets.example.com", "grpcroutes"}) {
    KubeTestServer::Options options;
    options.omitted_resources = {name};
    EXPECT_THAT(KubeTestServer::Start(options), StatusIs(absl::StatusCode::kInvalidArgument))
        << name;
  }
}

// ---- Services ----

TEST_F(GatewayKindsTest, ServiceGetsDefaultsAClusterIpAndNoGeneration) {
  Reply created =
      Call("POST", kServices,
           R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"greeter"},)"
           R"("spec":{"selector":{"app":"greeter"},"ports":[{"name":"grpc","port":50051,)"
           R"("targetPort":"grpc"}]}})");
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(GetString(created.body, {"spec", "type"}), "ClusterIP");
  EXPECT_EQ(GetString(created.body, {"spec", "ports", "0", "protocol"}), "");
  EXPECT_EQ(Dump(*FindPath(created.body, {"spec", "ports"})),
            R"([{"name":"grpc","port":50051,"protocol":"TCP","targetPort":"grpc"}])");
  EXPECT_THAT(GetString(created.body, {"spec", "clusterIP"}), HasSubstr("10.96."));
  EXPECT_EQ(FindPath(created.body, {"metadata", "generation"}), nullptr);
  EXPECT_EQ(Dump(*Find(created.body, "status")), R"({"loadBalancer":{}})");

  Reply invalid = Call("POST", kServices,
                       R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"bad"},)"
                       R"("spec":{"ports":[{"name":"a","port":1},{"port":2}]}})");
  ExpectStatus(invalid, 422, "Invalid");
  EXPECT_EQ(GetString(invalid.body, {"message"}),
            "Service \"bad\" is invalid: spec.ports[1].name: Required value");
}

TEST_F(GatewayKindsTest, KubernetesServiceExistsInDefault) {
  Reply service = Call("GET", "/api/v1/namespaces/default/services/kubernetes");
  ASSERT_EQ(service.code, 200) << service.raw;
  EXPECT_EQ(GetString(service.body, {"spec", "clusterIP"}), "10.96.0.1");
}

// What `kubectl apply` sends for a Service edit: a strategic merge patch.
TEST_F(GatewayKindsTest, ServiceStrategicMergePatchMergesPortsByNumberAndKeepsTheClusterIp) {
  Reply created = Call("POST", kServices,
                       R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"echo"},)"
                       R"("spec":{"ports":[{"name":"a","port":7070},{"name":"b","port":7071}]}})");
  ASSERT_EQ(created.code, 201) << created.raw;
  Reply patched = Call("PATCH", absl::StrCat(kServices, "/echo"),
                       R"({"spec":{"$setElementOrder/ports":[{"port":7070},{"port":7072}],)"
                       R"("ports":[{"name":"c","port":7072},{"$patch":"delete","port":7071},)"
                       R"({"port":7070,"targetPort":8080}]}})",
                       "application/strategic-merge-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.raw;
  EXPECT_EQ(Dump(*FindPath(patched.body, {"spec", "ports"})),
            R"([{"name":"a","port":7070,"protocol":"TCP","targetPort":8080},)"
            R"({"name":"c","port":7072,"protocol":"TCP","targetPort":7072}])");
  EXPECT_EQ(GetString(patched.body, {"spec", "clusterIP"}),
            GetString(created.body, {"spec", "clusterIP"}));
  Reply changed =
      Call("PATCH", absl::StrCat(kServices, "/echo"), R"({"spec":{"clusterIP":"None"}})", kMerge);
  ExpectStatus(changed, 422, "Invalid");
  EXPECT_THAT(GetString(changed.body, {"message"}), HasSubstr("may not change once set"));
}

TEST_F(GatewayKindsTest, ServiceTableShowsTypeClusterIpAndPorts) {
  ASSERT_EQ(Call("POST", kServices,
                 R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"greeter"},)"
                 R"("spec":{"clusterIP":"10.96.0.50","ports":[{"port":50051}]}})")
                .code,
            201);
  Reply table = Call("GET", kServices, "", "", {{"Accept", kTableAccept}});
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Type", "Cluster-IP", "External-IP",
                                              "Port(s)", "Age", "Selector"));
  EXPECT_THAT(Cells(table),
              HasSubstr(R"(["greeter","ClusterIP","10.96.0.50","<none>","50051/TCP",)"));
}

}  // namespace
}  // namespace facet::testing
