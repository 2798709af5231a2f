#include "controller/kubernetes/client/api_discovery.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller::kube {
namespace {

using ::facet::testing::FakeKubeClient;
using ::facet::testing::IsOkAndHolds;

TEST(ApiDiscoveryTest, GroupVersionPathsOfCoreAndNamedGroups) {
  EXPECT_EQ(GroupVersionPath("v1"), "/api/v1");
  EXPECT_EQ(GroupVersionPath("gateway.networking.k8s.io/v1beta1"),
            "/apis/gateway.networking.k8s.io/v1beta1");
}

TEST(ApiDiscoveryTest, ServedResourceIsListed) {
  FakeKubeClient client;
  EXPECT_THAT(IsResourceServed(client, "gateway.networking.k8s.io/v1", "grpcroutes"),
              IsOkAndHolds(true));
  EXPECT_THAT(IsResourceServed(client, "v1", "services"), IsOkAndHolds(true));
}

TEST(ApiDiscoveryTest, ResourceMissingFromAServedGroupIsAbsent) {
  FakeKubeClient client;
  client.SetServed("/apis/facet.dev/v1alpha1/xdsvariantpolicies", false);
  EXPECT_THAT(IsResourceServed(client, "facet.dev/v1alpha1", "xdsvariantpolicies"),
              IsOkAndHolds(false));
  EXPECT_THAT(IsResourceServed(client, "facet.dev/v1alpha1", "xdsresources"), IsOkAndHolds(true));
}

TEST(ApiDiscoveryTest, GroupVersionThatIsNotServedIsAbsent) {
  FakeKubeClient client;
  client.SetServed("/apis/gateway.networking.k8s.io/v1/grpcroutes", false);
  EXPECT_THAT(IsResourceServed(client, "gateway.networking.k8s.io/v1", "grpcroutes"),
              IsOkAndHolds(false));
  EXPECT_THAT(IsResourceServed(client, "example.com/v1", "widgets"), IsOkAndHolds(false));
}

// Forwards to a FakeKubeClient but fails every GET as an unreachable server.
class Unreachable final : public KubeClient {
 public:
  absl::StatusOr<ListResult> List(const std::string&, const ListOptions&) override {
    return absl::UnavailableError("connection refused");
  }
  absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(const std::string&, const WatchOptions&,
                                                     std::function<void(WatchEvent)>,
                                                     std::function<void(absl::Status)>) override {
    return absl::UnavailableError("connection refused");
  }
  absl::StatusOr<YAML::Node> Get(const std::string&) override {
    return absl::UnavailableError("connection refused");
  }
  absl::StatusOr<YAML::Node> Create(const std::string&, const std::string&) override {
    return absl::UnavailableError("connection refused");
  }
  absl::StatusOr<YAML::Node> Update(const std::string&, const std::string&) override {
    return absl::UnavailableError("connection refused");
  }
  absl::Status Delete(const std::string&) override {
    return absl::UnavailableError("connection refused");
  }
};

TEST(ApiDiscoveryTest, FailedDiscoveryIsAnErrorNotAnAbsence) {
  Unreachable client;
  EXPECT_FALSE(IsResourceServed(client, "gateway.networking.k8s.io/v1", "grpcroutes").ok());
}

}  // namespace
}  // namespace facet::controller::kube
