#include "xds_server/relay/relay.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/fakes/fake_ads_service.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/resources/wire_check.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::xds {
namespace {

using ::envoy::config::route::v3::RouteConfiguration;
using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;
using ::facet::testing::AdsTestClient;
using ::facet::testing::DecodedResource;
using ::facet::testing::DecodeResources;
using ::facet::testing::DeltaAck;
using ::facet::testing::DeltaStream;
using ::facet::testing::FakeAdsService;
using ::facet::testing::MakeDeltaRequest;
using ::facet::testing::MakeNode;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(20);
const std::string kRds(::facet::testing::kRouteConfigurationTypeUrl);

// The relay between a scripted upstream and a downstream ADS server on
// 127.0.0.1:0, as `facet relay` wires them.
class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder upstream_builder;
    upstream_builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                                      &upstream_port_);
    upstream_builder.RegisterService(&upstream_);
    upstream_server_ = upstream_builder.BuildAndStart();
    ASSERT_NE(upstream_server_, nullptr);

    Relay::Options options;
    UpstreamServer server;
    server.server_uri = absl::StrCat("127.0.0.1:", upstream_port_);
    server.channel_creds = "insecure";
    options.config.xds_servers.push_back(server);
    options.config.node.set_id("relay-1");
    options.upstream.initial_backoff = absl::Milliseconds(20);
    options.upstream.max_backoff = absl::Milliseconds(200);
    options.on_published = [this](absl::Duration since_change) {
      absl::MutexLock lock(&published_mu_);
      published_.push_back(since_change);
    };
    relay_ = std::make_unique<Relay>(store_, options);

    AdsService::Options ads_options;
    ads_options.demand_observer = relay_.get();
    ads_ = std::make_unique<AdsService>(store_, ads_options);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(ads_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    relay_->Start();
  }

  void TearDown() override {
    if (server_ != nullptr) {
      ads_->Drain();
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
    }
    // The relay stops publishing while the service still watches the store;
    // the service's streams (its demand) have ended.
    relay_->Stop();
    ads_.reset();
    relay_.reset();
    if (upstream_server_ != nullptr) upstream_server_->Shutdown(std::chrono::system_clock::now());
  }

  // Opens a downstream delta stream subscribed to route "r".
  std::unique_ptr<DeltaStream> Subscribe(const std::string& node_id) {
    absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
        AdsTestClient::Connect(absl::StrCat("127.0.0.1:", port_));
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<DeltaStream>> stream = (*client)->OpenDelta();
    EXPECT_TRUE(stream.ok()) << stream.status();
    if (!stream.ok()) return nullptr;
    clients_.push_back(*std::move(client));
    DeltaDiscoveryRequest request = MakeDeltaRequest(kRds, {"r"});
    *request.mutable_node() = MakeNode(node_id);
    EXPECT_TRUE((*stream)->Send(request).ok());
    return *std::move(stream);
  }

  // Returns the next upstream request the relay sent that satisfies `pred`
  // (skipping others), or nullopt if none comes within kWait.
  std::optional<DeltaDiscoveryRequest> NextUpstream(
      const std::function<bool(const DeltaDiscoveryRequest&)>& pred) {
    while (true) {
      std::optional<DeltaDiscoveryRequest> request = upstream_.DeltaRequest(next_upstream_);
      if (!request.has_value()) return std::nullopt;
      ++next_upstream_;
      if (pred(*request)) return request;
    }
  }
  std::optional<DeltaDiscoveryRequest> AnswerTo(const std::string& nonce) {
    return NextUpstream(
        [&](const DeltaDiscoveryRequest& request) { return request.response_nonce() == nonce; });
  }
  std::optional<DeltaDiscoveryRequest> SubscribeTo(const std::string& name) {
    return NextUpstream([&](const DeltaDiscoveryRequest& request) {
      for (const auto& locator : request.resource_locators_subscribe()) {
        if (locator.name() == name) return true;
      }
      return false;
    });
  }

  // Sends route `name` with a virtual host named `host` at `version`, as
  // one resource of a delta response with `nonce`.
  bool SendRoute(const std::string& nonce, const std::string& name, const std::string& version,
                 const std::string& host) {
    DeltaDiscoveryResponse response;
    response.set_type_url(kRds);
    response.set_nonce(nonce);
    Resource* resource = response.add_resources();
    resource->mutable_resource_name()->set_name(name);
    resource->set_version(version);
    RouteConfiguration route;
    route.set_name(name);
    route.add_virtual_hosts()->set_name(host);
    resource->mutable_resource()->PackFrom(route);
    return upstream_.Send(response);  // protobuf logs bad UTF-8, and sends it.
  }

  // Returns the virtual host name of route "r" in the next response of
  // `stream`, ACKing it; "" (and a test failure) when none comes.
  static std::string NextHost(DeltaStream& stream) {
    absl::StatusOr<DeltaDiscoveryResponse> response = stream.Next(kWait);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return "";
    EXPECT_TRUE(stream.Send(DeltaAck(*response)).ok());
    absl::StatusOr<std::vector<DecodedResource>> resources = DecodeResources(*response);
    EXPECT_TRUE(resources.ok()) << resources.status();
    if (!resources.ok() || resources->size() != 1 || (*resources)[0].name != "r") {
      ADD_FAILURE() << "expected route r in " << response->DebugString();
      return "";
    }
    absl::StatusOr<RouteConfiguration> route = (*resources)[0].As<RouteConfiguration>();
    EXPECT_TRUE(route.ok()) << route.status();
    if (!route.ok() || route->virtual_hosts_size() != 1) return "";
    return route->virtual_hosts(0).name();
  }

  FakeAdsService upstream_{kWait};
  std::unique_ptr<grpc::Server> upstream_server_;
  int upstream_port_ = 0;
  size_t next_upstream_ = 0;
  SnapshotStore store_;
  std::unique_ptr<Relay> relay_;
  std::unique_ptr<AdsService> ads_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::vector<std::unique_ptr<AdsTestClient>> clients_;
  absl::Mutex published_mu_;
  // What on_published reported, in order.
  std::vector<absl::Duration> published_ ABSL_GUARDED_BY(published_mu_);
};

// The publication of every snapshot after Start() is reported with the time
// from the event that made it (facet_snapshot_build_seconds in `facet relay`):
// the demand that added route "r" and the upstream response that filled it.
TEST_F(RelayTest, ReportsEachPublicationWithTheTimeSinceItsEvent) {
  const absl::Time start = absl::Now();
  std::unique_ptr<DeltaStream> stream = Subscribe("client-1");
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(SubscribeTo("r").has_value());
  ASSERT_TRUE(SendRoute("n-1", "r", "1", "host-1"));
  EXPECT_EQ(NextHost(*stream), "host-1");
  absl::MutexLock lock(&published_mu_);
  // The response's snapshot was published (the client got it); the worker
  // reports it right after publishing, so it may still be on its way.
  ASSERT_TRUE(published_mu_.AwaitWithTimeout(
      absl::Condition(
          +[](std::vector<absl::Duration>* published) { return !published->empty(); },
          &published_),
      kWait));
  const absl::Duration elapsed = absl::Now() - start;
  for (absl::Duration since_change : published_) {
    EXPECT_GE(since_change, absl::ZeroDuration());
    EXPECT_LE(since_change, elapsed);
  }
}

// A hostile upstream: after a good route, a response that does not parse
// and resources past the bound a manifest's resource has. The relay NACKs
// each, naming the field or bound; downstream clients keep (and new ones
// get) the last good route from the cache; the stream goes on, so the next
// good route reaches them and new names are subscribed upstream.
TEST_F(RelayTest, HostileUpstreamResponsesAreNackedAndTheCacheKeepsServing) {
  std::unique_ptr<DeltaStream> first = Subscribe("client-1");
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(SubscribeTo("r").has_value());
  ASSERT_TRUE(SendRoute("good-1", "r", "1", "host-1"));
  std::optional<DeltaDiscoveryRequest> ack = AnswerTo("good-1");
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->has_error_detail());
  EXPECT_EQ(NextHost(*first), "host-1");

  auto expect_nack = [&](const std::string& nonce, const std::string& detail) {
    std::optional<DeltaDiscoveryRequest> nack = AnswerTo(nonce);
    ASSERT_TRUE(nack.has_value()) << "no answer to " << nonce;
    ASSERT_TRUE(nack->has_error_detail()) << nonce << " was ACKed";
    EXPECT_THAT(nack->error_detail().message(), HasSubstr(detail)) << nonce;
  };
  // Each step stops the test when it fails: an upstream client that stopped
  // reading would block the next send.
  ASSERT_TRUE(SendRoute("not-utf8", "r", "2\xff", "host-2"));
  ASSERT_NO_FATAL_FAILURE(expect_nack("not-utf8", "resources[0].version: is not valid UTF-8"));
  ASSERT_TRUE(SendRoute("past-bound", "r", "3", std::string(kMaxResourceBytes, 'x')));
  ASSERT_NO_FATAL_FAILURE(
      expect_nack("past-bound", "bytes encoded; the limit is 1048576 bytes per resource"));
  // 63 MB: what reached clients with gRPC's default 4 MiB receive limit.
  ASSERT_TRUE(SendRoute("huge", "r", "4", std::string(63 << 20, 'x')));
  ASSERT_NO_FATAL_FAILURE(
      expect_nack("huge", "bytes encoded; the limit is 1048576 bytes per resource"));
  EXPECT_EQ(relay_->stats().upstream_nacks_sent, 3);
  // The subscription, one ACK and three NACKs, at least.
  EXPECT_GE(relay_->stats().upstream_requests_sent, 5);
  EXPECT_EQ(upstream_.streams(), 1u);

  // A new client is served the last good route from the cache.
  std::unique_ptr<DeltaStream> second = Subscribe("client-2");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(NextHost(*second), "host-1");

  ASSERT_TRUE(SendRoute("good-5", "r", "5", "host-5"));
  ack = AnswerTo("good-5");
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->has_error_detail());
  // The first client's next response is the good update: nothing of the
  // rejected ones reached it in between.
  EXPECT_EQ(NextHost(*first), "host-5");
  EXPECT_EQ(NextHost(*second), "host-5");

  ASSERT_TRUE(first->Send(MakeDeltaRequest(kRds, {"r2"})).ok());
  EXPECT_TRUE(SubscribeTo("r2").has_value());
  EXPECT_EQ(upstream_.streams(), 1u);
}

}  // namespace
}  // namespace facet::xds
