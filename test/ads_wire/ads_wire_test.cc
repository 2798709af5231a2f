// Wire-level tests of the ADS server: a real gRPC server on loopback and the
// project's own ADS client, for the paths today's real gRPC clients do not
// exercise (resource locators, delta, several parameter sets per stream).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "controller/objects/object_parser.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/support/test_snapshot.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/snapshot/builder.h"

namespace facet::testing {
namespace {

using ::envoy::config::route::v3::RouteConfiguration;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr absl::Duration kWait = absl::Seconds(10);
const std::string kLds(kListenerTypeUrl);
const std::string kRds(kRouteConfigurationTypeUrl);
const std::string kCds(kClusterTypeUrl);
const std::string kEds(kClusterLoadAssignmentTypeUrl);

// A route "greeter" with variants selected by env, and everything it needs.
// ROUTE_VARIANTS is replaced per test.
constexpr char kManifests[] = R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: listener, namespace: demo}
spec:
  type: listener
  name: greeter
  variants:
  - resource:
      api_listener:
        api_listener:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          rds: {route_config_name: greeter, config_source: {ads: {}}}
          http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: route, namespace: demo}
spec:
  type: route
  name: greeter
  variants: ROUTE_VARIANTS
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: cluster-a, namespace: demo}
spec: {type: cluster, name: a, variants: [{resource: {type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}}]}
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: cluster-b, namespace: demo}
spec: {type: cluster, name: b, variants: [{resource: {type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}}]}
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: endpoints-a, namespace: demo}
spec: {type: endpoint, name: a, variants: [{resource: {endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}]}
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: endpoints-b, namespace: demo}
spec: {type: endpoint, name: b, variants: [{resource: {endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 2}}}}]}]}}]}
)";

std::string RouteVariant(const std::string& label, const std::string& match, const std::string& cluster) {
  return "{name: " + label + ", match: " + match +
         ", resource: {virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: \"\"}, "
         "route: {cluster: " + cluster + "}}]}]}}";
}

// prod -> a, everyone else -> b.
const std::string kTwoVariants = "[" + RouteVariant("prod", "{env: prod}", "a") + ", " +
                                 RouteVariant("other", "{env: {not: prod}}", "b") + "]";

envoy::service::discovery::v3::DynamicParameterConstraints Canonical(const std::string& match) {
  return *xds::CompileMatch(YAML::Load(match), "match");
}

std::string ClusterOf(const DecodedResource& resource) {
  auto route = resource.As<RouteConfiguration>();
  return route.ok() ? route->virtual_hosts(0).routes(0).route().cluster() : "?";
}

// Returns each route of `response` as "locator:" or "plain:" (how it is
// named) followed by its cluster; "?" for what does not decode.
std::vector<std::string> FormsAndClusters(const DiscoveryResponse& response) {
  auto resources = DecodeResources(response);
  if (!resources.ok()) return {"?"};
  std::vector<std::string> out;
  for (const auto& resource : *resources) {
    out.push_back((resource.has_constraints ? "locator:" : "plain:") + ClusterOf(resource));
  }
  return out;
}

bool SameConstraints(const envoy::service::discovery::v3::DynamicParameterConstraints& a,
                     const envoy::service::discovery::v3::DynamicParameterConstraints& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

class AdsWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Publish(kTwoVariants);
    StartServer(xds::AdsService::Options());
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  // (Re)starts the server with `options`, serving store_.
  void StartServer(xds::AdsService::Options options) {
    client_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    ads_ = std::make_unique<xds::AdsService>(store_, std::move(options));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(ads_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto client = AdsTestClient::Connect(address());
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Builds the snapshot following last_ from the manifests with these route
  // variants, leaving out the objects named in `without`, plus `extra`
  // manifests; makes it last_ without publishing it.
  std::shared_ptr<const xds::Snapshot> Build(const std::string& route_variants,
                                             const std::set<std::string>& without = {},
                                             const std::string& extra = "") {
    std::string text = absl::StrReplaceAll(kManifests, {{"ROUTE_VARIANTS", route_variants}});
    if (!extra.empty()) absl::StrAppend(&text, "\n---\n", extra);
    if (auto built = BuildTestSnapshot(text, last_.get(), without)) last_ = std::move(built);
    return last_;
  }

  // Builds and publishes (see Build).
  void Publish(const std::string& route_variants, const std::set<std::string>& without = {},
               const std::string& extra = "") {
    store_.Publish(Build(route_variants, without, extra));
  }

  // Waits until `done` holds for the service's stats; false after kWait.
  bool WaitForStats(const std::function<bool(const xds::AdsStats&)>& done) {
    const absl::Time deadline = absl::Now() + kWait;
    while (!done(ads_->stats())) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(1));
    }
    return true;
  }

  std::unique_ptr<SotwStream> Sotw() {
    auto stream = client_->OpenSotw();
    EXPECT_THAT(stream, IsOk());
    return stream.ok() ? *std::move(stream) : nullptr;
  }
  std::unique_ptr<DeltaStream> Delta() {
    auto stream = client_->OpenDelta();
    EXPECT_THAT(stream, IsOk());
    return stream.ok() ? *std::move(stream) : nullptr;
  }

  // Subscribes `stream` to the greeter route as a node with env=`env`, and
  // ACKs the first response.
  void SubscribeToRouteAndAck(SotwStream& stream, const std::string& env) {
    DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
    *request.mutable_node() = MakeNode(env, {{"env", env}});
    ASSERT_THAT(stream.Send(request), IsOk());
    auto response = stream.Next(kWait);
    ASSERT_THAT(response, IsOk());
    ASSERT_THAT(stream.Send(Ack(*response, MakeRequest(kRds, {"greeter"}))), IsOk());
  }

  xds::SnapshotStore store_;
  std::shared_ptr<const xds::Snapshot> last_;
  int port_ = 0;
  std::unique_ptr<xds::AdsService> ads_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AdsTestClient> client_;
};

TEST_F(AdsWireTest, LocatorSubscriptionGetsTheRightVariantWrappedWithItsExactConstraints) {
  auto stream = Sotw();
  DiscoveryRequest request = MakeRequest(kRds, {}, {MakeLocator("greeter", {{"env", "prod"}})});
  *request.mutable_node() = MakeNode("relay");
  ASSERT_THAT(stream->Send(request), IsOk());
  auto response = stream->Next(kWait);
  ASSERT_THAT(response, IsOk());
  auto resources = DecodeResources(*response);
  ASSERT_THAT(resources, IsOk());
  ASSERT_EQ(resources->size(), 1u);
  const DecodedResource& resource = (*resources)[0];
  EXPECT_TRUE(resource.wrapped);
  EXPECT_EQ(resource.resource_name, "greeter");
  EXPECT_EQ(resource.wrapper_name, "");
  ASSERT_TRUE(resource.has_constraints);
  EXPECT_TRUE(SameConstraints(resource.constraints, Canonical("{env: prod}")));
  EXPECT_FALSE(resource.version.empty());
  EXPECT_EQ(ClusterOf(resource), "a");
}

TEST_F(AdsWireTest, OneStreamWithTwoParameterSetsReceivesBothVariants) {
  auto stream = Sotw();
  DiscoveryRequest request = MakeRequest(
      kRds, {}, {MakeLocator("greeter", {{"env", "prod"}}), MakeLocator("greeter", {{"env", "test"}})});
  *request.mutable_node() = MakeNode("relay");
  ASSERT_THAT(stream->Send(request), IsOk());
  auto response = stream->Next(kWait);
  ASSERT_THAT(response, IsOk());
  auto resources = DecodeResources(*response);
  ASSERT_THAT(resources, IsOk());
  ASSERT_EQ(resources->size(), 2u);
  std::vector<std::string> got;
  for (const auto& resource : *resources) {
    EXPECT_EQ(resource.resource_name, "greeter");
    if (SameConstraints(resource.constraints, Canonical("{env: prod}"))) got.push_back("prod:" + ClusterOf(resource));
    if (SameConstraints(resource.constraints, Canonical("{env: {not: prod}}"))) got.push_back("other:" + ClusterOf(resource));
  }
  EXPECT_THAT(got, UnorderedElementsAre("prod:a", "other:b"));
}

TEST_F(AdsWireTest, PlainNameSubscriptionsSelectByNodeMetadata) {
  for (const auto& [env, cluster] : std::vector<std::pair<std::string, std::string>>{{"prod", "a"}, {"test", "b"}}) {
    auto stream = Sotw();
    DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
    *request.mutable_node() = MakeNode("c-" + env, {{"env", env}});
    ASSERT_THAT(stream->Send(request), IsOk());
    auto response = stream->Next(kWait);
    ASSERT_THAT(response, IsOk());
    auto resources = DecodeResources(*response);
    ASSERT_EQ(resources->size(), 1u);
    EXPECT_FALSE((*resources)[0].wrapped);  // No resource-in-sotw feature: plain.
    EXPECT_EQ(ClusterOf((*resources)[0]), cluster);
  }
}

TEST_F(AdsWireTest, WildcardListenerAndClusterSubscriptions) {
  auto stream = Sotw();
  DiscoveryRequest lds = MakeRequest(kLds, {});
  *lds.mutable_node() = MakeNode("c", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(lds), IsOk());
  ASSERT_THAT(stream->Send(MakeRequest(kCds, {})), IsOk());
  auto listeners = stream->NextOfType(kLds, kWait);
  ASSERT_THAT(listeners, IsOk());
  EXPECT_THAT(*ResourceNames(*listeners), ElementsAre("greeter"));
  auto clusters = stream->NextOfType(kCds, kWait);
  ASSERT_THAT(clusters, IsOk());
  EXPECT_THAT(*ResourceNames(*clusters), UnorderedElementsAre("a", "b"));
}

TEST_F(AdsWireTest, UnknownNamesAreAnsweredAsNonexistent) {
  auto sotw = Sotw();
  DiscoveryRequest request = MakeRequest(kLds, {"nope"});
  *request.mutable_node() = MakeNode("c");
  ASSERT_THAT(sotw->Send(request), IsOk());
  auto response = sotw->Next(kWait);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->resources_size(), 0);

  auto delta = Delta();
  DeltaDiscoveryRequest delta_request = MakeDeltaRequest(kRds, {"nope"});
  *delta_request.mutable_node() = MakeNode("c");
  ASSERT_THAT(delta->Send(delta_request), IsOk());
  auto delta_response = delta->Next(kWait);
  ASSERT_THAT(delta_response, IsOk());
  EXPECT_THAT(delta_response->removed_resources(), ElementsAre("nope"));
}

TEST_F(AdsWireTest, UnsubscribeThenResubscribeSendsTheResourceAgain) {
  auto stream = Sotw();
  DiscoveryRequest both = MakeRequest(kEds, {"a", "b"});
  *both.mutable_node() = MakeNode("c");
  ASSERT_THAT(stream->Send(both), IsOk());
  auto first = stream->Next(kWait);
  ASSERT_THAT(first, IsOk());
  DiscoveryRequest only_a = MakeRequest(kEds, {"a"});
  ASSERT_THAT(stream->Send(Ack(*first, only_a)), IsOk());
  auto second = stream->Next(kWait);  // Answers the subscription change.
  ASSERT_THAT(second, IsOk());
  ASSERT_THAT(stream->Send(Ack(*second, both)), IsOk());
  auto third = stream->Next(kWait);
  ASSERT_THAT(third, IsOk());
  EXPECT_THAT(*ResourceNames(*third), ElementsAre("b"));
}

TEST_F(AdsWireTest, NackIsRecordedPerVariantAndNotResentUntilTheSnapshotChanges) {
  auto stream = Sotw();
  DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
  *request.mutable_node() = MakeNode("nacker", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(request), IsOk());
  auto first = stream->Next(kWait);
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(stream->Send(Nack(*first, MakeRequest(kRds, {"greeter"}), "", "bad route")), IsOk());
  // Wait until the server has read the NACK: published after it, a new
  // response would make the NACK's nonce stale (and rightly ignored).
  const absl::Time deadline = absl::Now() + kWait;
  while (ads_->stats().nacks < 1 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_GE(ads_->stats().nacks, 1);
  // An unrelated change re-publishes; the NACKed variant must not come again,
  // so the next response is the one for the changed prod variant.
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " +
          RouteVariant("other", "{env: {not: prod}}", "b") + "]");
  auto second = stream->Next(kWait);
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ(ClusterOf((*DecodeResources(*second))[0]), "b");
  auto nacks = ads_->nacks();
  ASSERT_EQ(nacks.size(), 1u);
  EXPECT_EQ(nacks[0].name, "greeter");
  EXPECT_EQ(nacks[0].label, "prod");
  EXPECT_EQ(nacks[0].node_id, "nacker");
  EXPECT_EQ(nacks[0].error_detail, "bad route");
  EXPECT_GE(ads_->stats().nacks, 1);
  EXPECT_EQ(ads_->stats().nack_details_truncated, 0);
}

TEST_F(AdsWireTest, AChangePushesOnlyToStreamsWhoseVariantChanged) {
  auto prod = Sotw();
  auto test = Sotw();
  SubscribeToRouteAndAck(*prod, "prod");
  SubscribeToRouteAndAck(*test, "test");
  if (HasFatalFailure()) return;
  // 1: only the prod variant changes. 2: then only the other variant.
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " + RouteVariant("other", "{env: {not: prod}}", "b") + "]");
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " + RouteVariant("other", "{env: {not: prod}}", "a") + "]");
  auto prod_update = prod->Next(kWait);
  ASSERT_THAT(prod_update, IsOk());
  EXPECT_EQ(ClusterOf((*DecodeResources(*prod_update))[0]), "b");
  // The test stream's first update is change 2: change 1 never reached it.
  auto test_update = test->Next(kWait);
  ASSERT_THAT(test_update, IsOk());
  EXPECT_EQ(ClusterOf((*DecodeResources(*test_update))[0]), "a");
  EXPECT_EQ(prod->queued(), 0u);
}

TEST_F(AdsWireTest, AChangeWakesOnlyStreamsWhoseSelectedVariantChanged) {
  auto prod = Sotw();
  auto test = Sotw();
  SubscribeToRouteAndAck(*prod, "prod");
  SubscribeToRouteAndAck(*test, "test");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& s) { return s.acks == 2; }));
  const int64_t before = ads_->stats().stream_wakes;
  // Only the prod variant changes: the test stream is not even looked at.
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " +
          RouteVariant("other", "{env: {not: prod}}", "b") + "]");
  EXPECT_EQ(ads_->stats().stream_wakes, before + 1);
  ASSERT_THAT(prod->Next(kWait), IsOk());
  // A new object that nobody watches wakes nobody.
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " +
              RouteVariant("other", "{env: {not: prod}}", "b") + "]",
          {}, R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: endpoints-c, namespace: demo}
spec: {type: endpoint, name: c, variants: [{resource: {endpoints: []}}]}
)");
  EXPECT_EQ(ads_->stats().stream_wakes, before + 1);
  EXPECT_EQ(test->queued(), 0u);
}

// Who may read an authority changes while its resources stay the same: the
// streams watching them are woken although their selected variants did not
// change, and a client that may no longer read one is told it is gone.
TEST_F(AdsWireTest, AChangeOfWhoMayReadAnAuthorityReachesOpenStreams) {
  const std::string name = "xdstp://a.example/envoy.config.cluster.v3.Cluster/c";
  auto publish = [&](std::optional<std::vector<xds::AllowedClient>> allowed) {
    std::vector<xds::ResourceObject> objects;
    for (const YAML::Node& document : YAML::LoadAll(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: cluster-c, namespace: demo}
spec: {type: cluster, name: c, authority: a.example, variants: [{resource: {type: LOGICAL_DNS, load_assignment: {endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: c.example, port_value: 443}}}}]}]}}}]}
)")) {
      auto parsed = controller::ParseDocument(document, "test", "demo");
      ASSERT_TRUE(std::holds_alternative<xds::ResourceObject>(parsed));
      objects.push_back(std::get<xds::ResourceObject>(parsed));
    }
    xds::AuthorityObject authority;
    authority.ref = {xds::kXdsAuthorityKind, "", "a.example"};
    authority.authority = "a.example";
    authority.allowed_namespaces = {"demo"};
    authority.allowed_clients = std::move(allowed);
    xds::BuildResult result = xds::BuildSnapshot(objects, {authority}, last_.get(), {});
    for (const auto& status : result.statuses) {
      ASSERT_TRUE(status.accepted) << status.ref.ToString();
    }
    last_ = result.snapshot;
    store_.Publish(last_);
  };
  publish(std::nullopt);
  // A plaintext client: no identity.
  auto stream = Sotw();
  DiscoveryRequest request = MakeRequest(kCds, {name});
  *request.mutable_node() = MakeNode("plain", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(request), IsOk());
  auto served = stream->Next(kWait);
  ASSERT_THAT(served, IsOk());
  ASSERT_EQ(served->resources_size(), 1);
  ASSERT_THAT(stream->Send(Ack(*served, MakeRequest(kCds, {name}))), IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& s) { return s.acks == 1; }));

  publish(std::vector<xds::AllowedClient>{
      {xds::AllowedClient::Kind::kSpiffeId, "spiffe://facet.test/ns/demo/sa/allowed"}});
  auto withdrawn = stream->Next(kWait);
  ASSERT_THAT(withdrawn, IsOk());
  EXPECT_EQ(withdrawn->type_url(), kCds);
  EXPECT_EQ(withdrawn->resources_size(), 0);
}

TEST_F(AdsWireTest, StreamSelectingWithTwoParameterSetsIsWokenForEitherVariant) {
  // The node says prod; a locator asks for the test variant as well.
  auto stream = Sotw();
  DiscoveryRequest request =
      MakeRequest(kRds, {"greeter"}, {MakeLocator("greeter", {{"env", "test"}})});
  *request.mutable_node() = MakeNode("mixed", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(request), IsOk());
  auto response = stream->Next(kWait);
  ASSERT_THAT(response, IsOk());
  ASSERT_THAT(stream->Send(Ack(*response, request)), IsOk());
  // Only the variant the node's parameters do not select changes.
  Publish("[" + RouteVariant("prod", "{env: prod}", "a") + ", " +
          RouteVariant("other", "{env: {not: prod}}", "a") + "]");
  auto update = stream->Next(kWait);
  ASSERT_THAT(update, IsOk());
  const std::vector<std::string> got = FormsAndClusters(*update);
  EXPECT_THAT(got, UnorderedElementsAre("plain:a", "locator:a"));
}

// The server groups the watchers of a name by the parameters they select
// with; a stream that brings a second parameter set later leaves its group.
TEST_F(AdsWireTest, StreamThatAddsASecondParameterSetLaterIsWokenForEitherVariant) {
  auto stream = Sotw();
  DiscoveryRequest first = MakeRequest(kRds, {"greeter"});
  *first.mutable_node() = MakeNode("prod", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(first), IsOk());
  auto served = stream->Next(kWait);
  ASSERT_THAT(served, IsOk());
  // The ACK also asks for the test variant by locator (a subscription
  // change: only the next one counts as an ACK).
  const DiscoveryRequest second =
      MakeRequest(kRds, {"greeter"}, {MakeLocator("greeter", {{"env", "test"}})});
  ASSERT_THAT(stream->Send(Ack(*served, second)), IsOk());
  auto added = stream->Next(kWait);
  ASSERT_THAT(added, IsOk());
  ASSERT_THAT(stream->Send(Ack(*added, second)), IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& s) { return s.acks == 1; }));
  // Only the variant the node's parameters do not select changes.
  Publish("[" + RouteVariant("prod", "{env: prod}", "a") + ", " +
          RouteVariant("other", "{env: {not: prod}}", "a") + "]");
  auto update = stream->Next(kWait);
  ASSERT_THAT(update, IsOk());
  const std::vector<std::string> got = FormsAndClusters(*update);
  EXPECT_THAT(got, Contains("locator:a"));
}

TEST_F(AdsWireTest, DeltaVariantSwapArrivesInOneResponse) {
  auto stream = Delta();
  DeltaDiscoveryRequest request =
      MakeDeltaRequest(kRds, {}, {}, {MakeLocator("greeter", {{"env", "prod"}, {"version", "v1"}})});
  *request.mutable_node() = MakeNode("relay");
  ASSERT_THAT(stream->Send(request), IsOk());
  auto first = stream->Next(kWait);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->resources_size(), 1);
  EXPECT_TRUE(SameConstraints(first->resources(0).resource_name().dynamic_parameter_constraints(),
                              Canonical("{env: prod}")));
  ASSERT_THAT(stream->Send(DeltaAck(*first)), IsOk());

  // TP2 transition: the env=prod variant is replaced by version variants.
  Publish("[" + RouteVariant("prod-v1", "{env: prod, version: v1}", "a") + ", " +
          RouteVariant("prod-other", "{env: prod, version: {not: v1}}", "b") + ", " +
          RouteVariant("other", "{env: {not: prod}, version: {or: [v1, {not: v1}]}}", "b") + "]");
  auto swap = stream->Next(kWait);
  ASSERT_THAT(swap, IsOk());
  ASSERT_EQ(swap->resources_size(), 1);
  EXPECT_TRUE(SameConstraints(swap->resources(0).resource_name().dynamic_parameter_constraints(),
                              Canonical("{env: prod, version: v1}")));
  ASSERT_EQ(swap->removed_resource_names_size(), 1);
  EXPECT_EQ(swap->removed_resource_names(0).name(), "greeter");
  EXPECT_TRUE(SameConstraints(swap->removed_resource_names(0).dynamic_parameter_constraints(),
                              Canonical("{env: prod}")));
  ASSERT_THAT(stream->Send(DeltaAck(*swap)), IsOk());

}

TEST_F(AdsWireTest, DeltaRemovalOfAVariantUsesRemovedResourceNames) {
  auto stream = Delta();
  DeltaDiscoveryRequest request = MakeDeltaRequest(kEds, {}, {}, {MakeLocator("a", {{"env", "prod"}})});
  *request.mutable_node() = MakeNode("relay");
  ASSERT_THAT(stream->Send(request), IsOk());
  auto first = stream->Next(kWait);
  ASSERT_THAT(first, IsOk());
  ASSERT_EQ(first->resources_size(), 1);
  EXPECT_EQ(first->resources(0).resource_name().name(), "a");
  ASSERT_THAT(stream->Send(DeltaAck(*first)), IsOk());
  // Nothing references cluster a any more, and it goes with its endpoints.
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " +
              RouteVariant("other", "{env: {not: prod}}", "b") + "]",
          {"cluster-a", "endpoints-a"});
  auto removal = stream->Next(kWait);
  ASSERT_THAT(removal, IsOk());
  EXPECT_EQ(removal->resources_size(), 0);
  ASSERT_EQ(removal->removed_resource_names_size(), 1);
  EXPECT_EQ(removal->removed_resource_names(0).name(), "a");
}

TEST_F(AdsWireTest, MalformedRequestEndsTheStreamWithInvalidArgument) {
  auto stream = Sotw();
  ASSERT_THAT(stream->Send(DiscoveryRequest()), IsOk());
  EXPECT_THAT(stream->Next(kWait), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(AdsWireTest, DrainEndsStreamsWithUnavailable) {
  auto stream = Sotw();
  DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
  *request.mutable_node() = MakeNode("c");
  ASSERT_THAT(stream->Send(request), IsOk());
  ASSERT_THAT(stream->Next(kWait), IsOk());
  ads_->Drain();
  EXPECT_THAT(stream->Next(kWait), StatusIs(absl::StatusCode::kUnavailable));
}

// Returns the route's variants with the prod variant matching `prefix` (so
// each value is a distinct route version), everyone else going to b.
std::string VariantsWithProdPrefix(const std::string& prefix) {
  return "[{name: prod, match: {env: prod}, resource: {virtual_hosts: [{name: v, domains: "
         "[greeter], routes: [{match: {prefix: \"" +
         prefix + "\"}, route: {cluster: a}}]}]}}, " +
         RouteVariant("other", "{env: {not: prod}}", "b") + "]";
}

std::string PrefixOf(const DecodedResource& resource) {
  auto route = resource.As<RouteConfiguration>();
  return route.ok() ? route->virtual_hosts(0).routes(0).match().prefix() : "?";
}

// Returns `count` manifests of STATIC clusters big-0, big-1, ... each padded
// with `bytes` bytes of metadata.
std::string BigClusters(int count, size_t bytes) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    const std::string name = "big-" + std::to_string(i);
    absl::StrAppend(&out, i == 0 ? "" : "---\n",
                    "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: ", name,
                    ", namespace: demo}\nspec: {type: cluster, name: ", name,
                    ", variants: [{resource: {type: STATIC, load_assignment: {cluster_name: ",
                    name, "}, metadata: {filter_metadata: {pad: {p: ", std::string(bytes, 'x'),
                    "}}}}}]}\n");
  }
  return out;
}

// The race a stream's first subscription must not lose: the stream is open
// (registered) before a snapshot is published, and subscribes after it. The
// subscription registers its watches and reads the current snapshot in one
// step, so it is answered from the new snapshot, not the one the stream
// opened with (which no later change would ever correct).
TEST_F(AdsWireTest, SubscriptionAfterAPublishIsAnsweredFromItEvenIfTheStreamOpenedBefore) {
  auto fresh = Sotw();  // Opened, nothing subscribed yet.
  auto watching = Sotw();  // Subscribed to the listener only.
  DiscoveryRequest lds = MakeRequest(kLds, {"greeter"});
  *lds.mutable_node() = MakeNode("watching", {{"env", "prod"}});
  ASSERT_THAT(watching->Send(lds), IsOk());
  auto listener = watching->Next(kWait);
  ASSERT_THAT(listener, IsOk());
  ASSERT_THAT(watching->Send(Ack(*listener, MakeRequest(kLds, {"greeter"}))), IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) {
    return stats.streams_open == 2 && stats.acks >= 1;
  }));

  // Only the route changes: neither stream watches it yet, so neither wakes.
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " +
          RouteVariant("other", "{env: {not: prod}}", "b") + "]");
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.snapshots >= 1; }));

  DiscoveryRequest rds = MakeRequest(kRds, {"greeter"});
  ASSERT_THAT(watching->Send(rds), IsOk());
  *rds.mutable_node() = MakeNode("fresh", {{"env", "prod"}});
  ASSERT_THAT(fresh->Send(rds), IsOk());
  for (SotwStream* stream : {fresh.get(), watching.get()}) {
    auto route = stream->NextOfType(kRds, kWait);
    ASSERT_THAT(route, IsOk());
    EXPECT_EQ(ClusterOf((*DecodeResources(*route))[0]), "b");
  }
}

// Streams subscribe while snapshots are being published: each ends with the
// last snapshot's route, whatever the interleaving.
TEST_F(AdsWireTest, StreamsSubscribingWhileSnapshotsArePublishedEndWithTheLastOne) {
  constexpr int kRounds = 25;
  constexpr int kStreamsPerRound = 8;
  // Built up front, so a publication is quick enough to land among the
  // subscriptions.
  std::vector<std::shared_ptr<const xds::Snapshot>> snapshots;
  for (int round = 0; round < kRounds; ++round) {
    snapshots.push_back(Build(VariantsWithProdPrefix("/r" + std::to_string(round))));
  }
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::unique_ptr<SotwStream>> streams;
    for (int i = 0; i < kStreamsPerRound; ++i) streams.push_back(Sotw());
    const int64_t open = kStreamsPerRound;
    ASSERT_TRUE(WaitForStats(
        [open](const xds::AdsStats& stats) { return stats.streams_open == open; }));
    DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
    *request.mutable_node() = MakeNode("racer", {{"env", "prod"}});
    std::thread publisher([&] { store_.Publish(snapshots[round]); });
    for (auto& stream : streams) ASSERT_THAT(stream->Send(request), IsOk());
    publisher.join();
    const std::string want = "/r" + std::to_string(round);
    for (auto& stream : streams) {
      std::string got;
      while (got != want) {
        auto response = stream->Next(kWait);
        ASSERT_THAT(response, IsOk()) << "round " << round << ": last route " << got;
        got = PrefixOf((*DecodeResources(*response))[0]);
      }
    }
    streams.clear();
    ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.streams_open == 0; }));
  }
}

TEST_F(AdsWireTest, NackErrorDetailIsCutToTheConfiguredSizeAndCounted) {
  xds::AdsService::Options options;
  options.max_error_detail_bytes = 4096;
  StartServer(std::move(options));
  auto stream = Sotw();
  DiscoveryRequest request = MakeRequest(kRds, {"greeter"});
  *request.mutable_node() = MakeNode("nacker", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(request), IsOk());
  auto response = stream->Next(kWait);
  ASSERT_THAT(response, IsOk());
  const std::string detail = "bad route: " + std::string(1 << 20, 'x');
  ASSERT_THAT(stream->Send(Nack(*response, MakeRequest(kRds, {"greeter"}), "", detail)), IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.nacks >= 1; }));
  auto nacks = ads_->nacks();
  ASSERT_EQ(nacks.size(), 1u);
  EXPECT_EQ(nacks[0].error_detail, detail.substr(0, 4096));
  EXPECT_EQ(ads_->stats().nack_details_truncated, 1);
}

TEST_F(AdsWireTest, NackRecordsStayBoundedAndTheRestAreCountedAsDropped) {
  xds::AdsService::Options options;
  options.max_nack_records = 2;
  StartServer(std::move(options));
  auto stream = Sotw();
  // One response with two endpoint variants: two records, the bound.
  DiscoveryRequest eds = MakeRequest(kEds, {"a", "b"});
  *eds.mutable_node() = MakeNode("nacker", {{"env", "prod"}});
  ASSERT_THAT(stream->Send(eds), IsOk());
  auto endpoints = stream->NextOfType(kEds, kWait);
  ASSERT_THAT(endpoints, IsOk());
  ASSERT_EQ(endpoints->resources_size(), 2);
  ASSERT_THAT(stream->Send(Nack(*endpoints, MakeRequest(kEds, {"a", "b"}), "", "bad endpoints")),
              IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.nacks >= 1; }));
  EXPECT_EQ(ads_->nacks().size(), 2u);
  EXPECT_EQ(ads_->stats().nack_records_dropped, 0);

  // A third variant NACKed: not kept, counted.
  ASSERT_THAT(stream->Send(MakeRequest(kRds, {"greeter"})), IsOk());
  auto route = stream->NextOfType(kRds, kWait);
  ASSERT_THAT(route, IsOk());
  ASSERT_THAT(stream->Send(Nack(*route, MakeRequest(kRds, {"greeter"}), "", "bad route")), IsOk());
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.nacks >= 2; }));
  auto nacks = ads_->nacks();
  ASSERT_EQ(nacks.size(), 2u);
  for (const auto& record : nacks) EXPECT_EQ(record.type_url, kEds);
  EXPECT_EQ(ads_->stats().nack_records_dropped, 1);
}

// A client that subscribes and never reads: with a small HTTP/2 window and
// responses far larger than it, the server's write never completes. The
// stream is cancelled after the write-stall timeout and counted, and the
// server keeps serving everyone else.
TEST_F(AdsWireTest, StreamWhoseWriteStallsIsCancelledAndCounted) {
  Publish(kTwoVariants, {}, BigClusters(8, 512 << 10));
  xds::AdsService::Options options;
  options.write_stall_timeout = absl::Milliseconds(500);
  StartServer(std::move(options));

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 10);
  args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args);
  auto stub = envoy::service::discovery::v3::AggregatedDiscoveryService::NewStub(channel);
  grpc::ClientContext context;
  auto stalled = stub->StreamAggregatedResources(&context);
  DiscoveryRequest request = MakeRequest(kCds, {});
  *request.mutable_node() = MakeNode("never-reads");
  ASSERT_TRUE(stalled->Write(request));

  ASSERT_TRUE(WaitForStats(
      [](const xds::AdsStats& stats) { return stats.streams_closed_write_stall == 1; }));
  // The stream is gone on the server (its reactor is done).
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& stats) { return stats.streams_open == 0; }));

  auto healthy = Sotw();
  DiscoveryRequest rds = MakeRequest(kRds, {"greeter"});
  *rds.mutable_node() = MakeNode("healthy", {{"env", "prod"}});
  ASSERT_THAT(healthy->Send(rds), IsOk());
  auto route = healthy->Next(kWait);
  ASSERT_THAT(route, IsOk());
  EXPECT_EQ(ClusterOf((*DecodeResources(*route))[0]), "a");
  EXPECT_EQ(ads_->stats().streams_closed_write_stall, 1);

  context.TryCancel();
  stalled->Finish();
}

// Records what an observer hears of pushes and authorities.
class PushRecorder final : public xds::AdsObserver {
 public:
  void OnPushCompleted(absl::Duration since_publish) override {
    absl::MutexLock lock(&mu_);
    completed_.push_back(since_publish);
  }
  void OnStreamsByAuthorityChange(const std::string& authority, int64_t streams) override {
    absl::MutexLock lock(&mu_);
    by_authority_[authority] += streams;
  }
  // Waits until `count` pushes completed; returns them (fewer after kWait).
  std::vector<absl::Duration> WaitForPushes(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return completed_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
    return completed_;
  }
  int64_t by_authority(const std::string& authority) {
    absl::MutexLock lock(&mu_);
    return by_authority_[authority];
  }

 private:
  absl::Mutex mu_;
  std::vector<absl::Duration> completed_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> by_authority_ ABSL_GUARDED_BY(mu_);
};

// The observer hears when a published change reached a client (not the
// answers to its requests), and which authorities open streams hold.
TEST_F(AdsWireTest, ObserverHearsHowLongAPublishedChangeTookToBeWritten) {
  PushRecorder recorder;
  xds::AdsService::Options options;
  options.observer = &recorder;
  StartServer(std::move(options));
  auto stream = Sotw();
  SubscribeToRouteAndAck(*stream, "prod");
  if (HasFatalFailure()) return;
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& s) { return s.acks == 1; }));
  EXPECT_EQ(recorder.by_authority(""), 1);
  const absl::Time before = absl::Now();
  Publish("[" + RouteVariant("prod", "{env: prod}", "b") + ", " +
          RouteVariant("other", "{env: {not: prod}}", "b") + "]");
  auto update = stream->Next(kWait);
  ASSERT_THAT(update, IsOk());
  const std::vector<absl::Duration> pushes = recorder.WaitForPushes(1);
  const absl::Duration most = absl::Now() - before;
  ASSERT_EQ(pushes.size(), 1u) << "the first answer is not a published change";
  EXPECT_GE(pushes[0], absl::ZeroDuration());
  EXPECT_LE(pushes[0], most);
  stream.reset();
  ASSERT_TRUE(WaitForStats([](const xds::AdsStats& s) { return s.streams_open == 0; }));
  EXPECT_EQ(recorder.by_authority(""), 0);
  EXPECT_THAT(ads_->StreamsPerAuthority(), IsEmpty());
}

// A change that wakes many streams is pushed by several walkers at once:
// every stream that selects the changed variant gets it exactly once, and
// the others nothing, over changes one after another.
TEST_F(AdsWireTest, AChangeSplitAmongWalkersReachesEachSelectingStreamOnce) {
  xds::AdsService::Options options;
  options.push_walkers = 3;
  options.min_streams_per_walker = 1;
  StartServer(std::move(options));
  constexpr int kStreams = 24;
  std::vector<std::unique_ptr<SotwStream>> prod;
  std::vector<std::unique_ptr<SotwStream>> test;
  for (int i = 0; i < kStreams; ++i) {
    prod.push_back(Sotw());
    test.push_back(Sotw());
    SubscribeToRouteAndAck(*prod.back(), "prod");
    SubscribeToRouteAndAck(*test.back(), "test");
    if (HasFatalFailure()) return;
  }
  int64_t acks = 2 * kStreams;
  ASSERT_TRUE(WaitForStats([&](const xds::AdsStats& s) { return s.acks == acks; }));
  for (const std::string cluster : {"b", "a", "b"}) {
    Publish("[" + RouteVariant("prod", "{env: prod}", cluster) + ", " +
            RouteVariant("other", "{env: {not: prod}}", "b") + "]");
    for (auto& stream : prod) {
      auto update = stream->Next(kWait);
      ASSERT_THAT(update, IsOk());
      EXPECT_EQ(ClusterOf((*DecodeResources(*update))[0]), cluster);
      ASSERT_THAT(stream->Send(Ack(*update, MakeRequest(kRds, {"greeter"}))), IsOk());
    }
    // Every ACK in before the next change (one after it would be stale).
    acks += kStreams;
    ASSERT_TRUE(WaitForStats([&](const xds::AdsStats& s) { return s.acks == acks; }));
  }
  for (auto& stream : prod) EXPECT_EQ(stream->queued(), 0u);
  for (auto& stream : test) EXPECT_EQ(stream->queued(), 0u);
  EXPECT_EQ(ads_->stats().pushes, 5 * kStreams);  // 4 to each prod stream, 1 to each test one.
}

}  // namespace
}  // namespace facet::testing
