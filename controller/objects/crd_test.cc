#include "controller/objects/crd.h"

#include "controller/gateway/model/gateway_object.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

TEST(CrdPathsTest, NamespacedCollectionsAndObjects) {
  EXPECT_EQ(CollectionPath(kXdsResourcePlural), "/apis/facet.dev/v1alpha1/xdsresources");
  EXPECT_EQ(CollectionPath(kXdsResourcePlural, "demo"),
            "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources");
  EXPECT_EQ(ObjectPath({kXdsResourceKind, "demo", "greeter-routes"}),
            "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources/greeter-routes");
}

TEST(CrdPathsTest, GatewayKindsWhoseStatusFacetWrites) {
  EXPECT_EQ(ObjectPath({gateway::kGrpcRouteKind, "demo", "greeter"}),
            "/apis/gateway.networking.k8s.io/v1/namespaces/demo/grpcroutes/greeter");
  EXPECT_EQ(ObjectPath({gateway::kXdsVariantPolicyKind, "demo", "canary"}),
            "/apis/facet.dev/v1alpha1/namespaces/demo/xdsvariantpolicies/canary");
}

TEST(CrdPathsTest, AuthoritiesAreClusterScoped) {
  EXPECT_EQ(CollectionPath(kXdsAuthorityPlural), "/apis/facet.dev/v1alpha1/xdsauthorities");
  EXPECT_EQ(ObjectPath({kXdsAuthorityKind, "", "a-example"}),
            "/apis/facet.dev/v1alpha1/xdsauthorities/a-example");
}

}  // namespace
}  // namespace facet::controller
