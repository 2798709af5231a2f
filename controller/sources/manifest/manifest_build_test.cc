#include "controller/sources/manifest/manifest_build.h"

#include <string>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "controller/sources/manifest/gateway_test_manifests.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/resources/resource_type.h"

namespace facet::controller {
namespace {

using ::facet::controller::testing::GreeterManifests;
using ::facet::controller::testing::kGreeterPolicy;
using ::facet::controller::testing::kGreeterName;

// An XdsResource Cluster whose endpoints are the generated assignment.
constexpr char kOtherCluster[] = R"(---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: other, namespace: demo}
spec: {type: cluster, name: other, variants: [{resource: {type: EDS, eds_cluster_config: {eds_config: {ads: {}}, service_name: "greeter.demo.svc.cluster.local:7070"}}}]}
)";

// Builds the objects of `text`, one manifest file.
ManifestBuild Build(const std::string& text) {
  ManifestFile file = ParseManifestText(text, "greeter.yaml", /*fingerprints=*/false);
  EXPECT_TRUE(file.problems.empty());
  ManifestSet manifests;
  for (FileObject& object : file.objects) {
    if (auto* resource = std::get_if<xds::ResourceObject>(&object.object)) {
      manifests.resources.push_back(std::move(*resource));
    } else if (auto* gateway_object = std::get_if<gateway::GatewayObject>(&object.object)) {
      manifests.gateway_objects.push_back(std::move(*gateway_object));
    }
  }
  return BuildManifests(manifests, xds::BuildOptions{});
}

TEST(ManifestBuildTest, ServesGeneratedObjectsBesideXdsResources) {
  const ManifestBuild build = Build(absl::StrCat(GreeterManifests(), kOtherCluster));
  const xds::Snapshot& snapshot = *build.builder->snapshot();
  for (const xds::ResourceType* type : xds::AllResourceTypes()) {
    EXPECT_NE(snapshot.Find(*type, kGreeterName), nullptr) << type->alias();
  }
  // The XdsResource refers to a generated assignment.
  EXPECT_NE(snapshot.Find(xds::ClusterType(), "other"), nullptr);
  EXPECT_EQ(build.builder->rejected_count(), 0);
  const auto status = build.front_end->StatusOf({"GRPCRoute", "demo", "greeter"});
  ASSERT_NE(status, nullptr);
  ASSERT_EQ(status->parents.size(), 1u);
  EXPECT_EQ(status->parents[0].conditions[0].status, gateway::kStatusTrue);
}

TEST(ManifestBuildTest, RouteThatIsNotAcceptedServesNothingOffline) {
  const ManifestBuild build = Build(GreeterManifests("{type: RegularExpression, service: '('}"));
  const auto status = build.front_end->StatusOf({"GRPCRoute", "demo", "greeter"});
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->parents[0].conditions[0].status, gateway::kStatusFalse);
  // The port keeps its default route.
  EXPECT_NE(build.builder->snapshot()->Find(xds::RouteConfigurationType(), kGreeterName), nullptr);
  EXPECT_EQ(build.builder->rejected_count(), 0);
}

TEST(ManifestBuildTest, PolicyCompilesTheRouteConfigurationIntoVariants) {
  const ManifestBuild build = Build(absl::StrCat(GreeterManifests(), kGreeterPolicy));
  EXPECT_EQ(build.builder->rejected_count(), 0);
  const xds::ServedResource* served =
      build.builder->snapshot()->Find(xds::RouteConfigurationType(), kGreeterName);
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->variants.size(), 2u);  // env=prod: the route; the others: the default.
  const auto status = build.front_end->StatusOf({"XdsVariantPolicy", "demo", "prod-only"});
  ASSERT_NE(status, nullptr);
  ASSERT_EQ(status->ancestors.size(), 1u);
  EXPECT_EQ(status->ancestors[0].ancestor_ref.name, "greeter");
  EXPECT_EQ(status->ancestors[0].conditions[0].status, gateway::kStatusTrue);
  EXPECT_EQ(status->ancestors[0].conditions[0].message,
            "applies to GRPCRoute demo/greeter: RouteConfiguration "
            "greeter.demo.svc.cluster.local:7070 compiles to 2 variants");
}

}  // namespace
}  // namespace facet::controller
