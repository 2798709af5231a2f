#include "controller/sources/manifest/manifest_build.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/resources/resource_type.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;

constexpr char kGreeter[] = R"(apiVersion: v1
kind: Service
metadata: {name: greeter, namespace: demo}
spec: {ports: [{name: grpc, port: 50051}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: greeter-1, namespace: demo, labels: {kubernetes.io/service-name: greeter}}
addressType: IPv4
ports: [{name: grpc, port: 9000}]
endpoints: [{addresses: [10.0.0.1]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: greeter, namespace: demo}
spec:
  parentRefs: [{group: "", kind: Service, name: greeter, port: 50051}]
  rules: [{matches: [{method: METHOD}], backendRefs: [{name: greeter, port: 50051}]}]
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: other, namespace: demo}
spec: {type: cluster, name: other, variants: [{resource: {type: EDS, eds_cluster_config: {eds_config: {ads: {}}, service_name: "greeter.demo.svc.cluster.local:50051"}}}]}
)";

class ManifestBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Builds kGreeter with the route's method match `method` (flow YAML).
  ManifestBuild Build(const std::string& method) {
    std::string text = kGreeter;
    text.replace(text.find("METHOD"), 6, method);
    std::ofstream(dir_ / "greeter.yaml") << text;
    const ManifestSet manifests = LoadManifests({dir_.string()});
    EXPECT_TRUE(manifests.problems.empty());
    return BuildManifests(manifests, xds::BuildOptions{});
  }

  fs::path dir_;
};

TEST_F(ManifestBuildTest, ServesGeneratedObjectsBesideXdsResources) {
  const ManifestBuild build = Build("{service: Greeter}");
  const xds::Snapshot& snapshot = *build.builder->snapshot();
  const std::string name = "greeter.demo.svc.cluster.local:50051";
  for (const xds::ResourceType* type : xds::AllResourceTypes()) {
    EXPECT_NE(snapshot.Find(*type, name), nullptr) << type->alias();
  }
  // The XdsResource refers to a generated assignment.
  EXPECT_NE(snapshot.Find(xds::ClusterType(), "other"), nullptr);
  EXPECT_EQ(build.builder->rejected_count(), 0);
  const auto status = build.front_end->StatusOf({"GRPCRoute", "demo", "greeter"});
  ASSERT_NE(status, nullptr);
  ASSERT_EQ(status->parents.size(), 1u);
  EXPECT_EQ(status->parents[0].conditions[0].status, gateway::kStatusTrue);
}

TEST_F(ManifestBuildTest, RouteThatIsNotAcceptedServesNothingOffline) {
  const ManifestBuild build = Build("{type: RegularExpression, service: '('}");
  const auto status = build.front_end->StatusOf({"GRPCRoute", "demo", "greeter"});
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->parents[0].conditions[0].status, gateway::kStatusFalse);
  // The port keeps its default route.
  EXPECT_NE(build.builder->snapshot()->Find(xds::RouteConfigurationType(),
                                            "greeter.demo.svc.cluster.local:50051"),
            nullptr);
  EXPECT_EQ(build.builder->rejected_count(), 0);
}

}  // namespace
}  // namespace facet::controller
