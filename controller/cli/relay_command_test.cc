// `facet relay`'s parts as ServingRunner runs them: the relay publishes into
// the store only while the ADS service it feeds is alive, up to the moment
// SIGTERM has stopped everything. Meant for the sanitizer builds too: under
// ASan or TSan, a publication after the service is gone is a use after free.
#include "controller/cli/relay_command.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/fakes/fake_ads_service.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::controller {
namespace {

using envoy::config::route::v3::RouteConfiguration;
using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DeltaDiscoveryResponse;
using envoy::service::discovery::v3::Resource;
using ::facet::testing::AdsTestClient;
using ::facet::testing::DeltaStream;
using ::facet::testing::FakeAdsService;
using ::facet::testing::MakeDeltaRequest;
using ::facet::testing::MakeNode;

constexpr absl::Duration kWait = absl::Seconds(20);
const std::string kRds(::facet::testing::kRouteConfigurationTypeUrl);

// Route "r" at `version`, as one resource of a delta response.
DeltaDiscoveryResponse RouteResponse(int version) {
  DeltaDiscoveryResponse response;
  response.set_type_url(kRds);
  response.set_nonce(absl::StrCat("n", version));
  Resource* resource = response.add_resources();
  resource->mutable_resource_name()->set_name("r");
  resource->set_version(absl::StrCat(version));
  RouteConfiguration route;
  route.set_name("r");
  route.add_virtual_hosts()->set_name(absl::StrCat("host-", version));
  resource->mutable_resource()->PackFrom(route);
  return response;
}

TEST(RelayUpstreamsJsonTest, ListsEachUpstreamsResourcesWithHitsAndMisses) {
  xds::RelayStats stats;
  stats.upstreams = {{"a.example:443", true}, {"b.example:443", false}};
  const std::vector<xds::RelayResourceStats> resources = {
      {.type_url = kRds, .name = "r", .upstream = 1, .hits = 3, .misses = 1, .cached_variants = 2},
      {.type_url = kRds,
       .name = "nowhere",
       .upstream = -1,
       .hits = 0,
       .misses = 1,
       .cached_variants = 0},
  };
  EXPECT_EQ(RelayUpstreamsJson(stats, resources, /*total=*/5),
            "{\"resources_shown\":2,\"resources_total\":5,\"upstreams\":["
            "{\"connected\":true,\"resources\":[],\"server_uri\":\"a.example:443\"},"
            "{\"connected\":false,\"resources\":[{\"cached_variants\":2,\"hits\":3,"
            "\"misses\":1,\"name\":\"r\",\"type\":\"route\"}],\"server_uri\":"
            "\"b.example:443\"}]}\n");
}

TEST(RelayCommandTest, PublishesOnlyWhileTheServiceItFeedsIsAlive) {
  // The command thread, and every thread started from here on, leave
  // SIGTERM to the command's sigwait.
  BlockShutdownSignals();
  FakeAdsService upstream(kWait);
  int upstream_port = 0;
  grpc::ServerBuilder upstream_builder;
  upstream_builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                                    &upstream_port);
  upstream_builder.RegisterService(&upstream);
  std::unique_ptr<grpc::Server> upstream_server = upstream_builder.BuildAndStart();
  ASSERT_NE(upstream_server, nullptr);

  xds::Relay::Options options;
  xds::UpstreamServer server;
  server.server_uri = absl::StrCat("127.0.0.1:", upstream_port);
  server.channel_creds = "insecure";
  options.config.xds_servers.push_back(server);
  options.config.node.set_id("relay-1");

  std::ostringstream out;
  std::ostringstream err;
  ServingRunner runner("relay", out, err);
  ASSERT_EQ(runner.ParseFlags({"--xds-address=127.0.0.1:0", "--admin-address="}, {}, "usage"),
            std::nullopt);
  ASSERT_EQ(runner.ReadServingFlags(), std::nullopt);

  // A watcher of the store that uses the service, as the service's own
  // watcher does. Once shutdown has begun it takes its time before it does:
  // a publication the relay starts then still runs when the service goes,
  // unless the relay was stopped first. (The service's own watcher is safe
  // either way: dropping its watch waits for a delivery to it.)
  std::atomic<xds::AdsService*> service{nullptr};
  std::atomic<bool> shutting_down{false};
  std::atomic<bool> held{false};
  absl::Notification holding;
  absl::Mutex mu;
  int publications = 0;  // Guarded by mu.
  absl::Notification serving;
  std::string xds_address;
  int exit_code = -1;
  std::thread command([&] {
    exit_code = runner.Run([&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
      xds::SnapshotStore& store = run.store();
      run.Own(std::make_unique<xds::SnapshotStore::WatchHandle>(
          store.Watch([&](std::shared_ptr<const xds::Snapshot>) {
            xds::AdsService* ads = service.load(std::memory_order_acquire);
            if (ads == nullptr) return;
            // The first publication once shutdown is due holds on: SIGTERM
            // is sent while it does, and the hold lasts longer than the
            // runner takes to drain the port and reach the service.
            if (shutting_down.load(std::memory_order_acquire) && !held.exchange(true)) {
              holding.Notify();
              absl::SleepFor(absl::Milliseconds(300));  // Widens the window; not a wait.
            }
            (void)ads->stats();
            (void)ads->CurrentSnapshot();
            absl::MutexLock lock(&mu);
            ++publications;
          })));
      absl::StatusOr<ServingParts> parts = StartRelay(run, options, out);
      if (!parts.ok()) return parts;
      service.store(run.ads(), std::memory_order_release);
      parts->announce = [&](const ServingAddresses& addresses) {
        xds_address = addresses.xds;
        serving.Notify();
      };
      return parts;
    });
  });
  ASSERT_TRUE(serving.WaitForNotificationWithTimeout(kWait)) << err.str();

  absl::StatusOr<std::unique_ptr<AdsTestClient>> client = AdsTestClient::Connect(xds_address);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::unique_ptr<DeltaStream>> stream = (*client)->OpenDelta();
  ASSERT_TRUE(stream.ok()) << stream.status();
  DeltaDiscoveryRequest request = MakeDeltaRequest(kRds, {"r"});
  *request.mutable_node() = MakeNode("client-1");
  ASSERT_TRUE((*stream)->Send(request).ok());
  ASSERT_TRUE(upstream.DeltaRequest(0).has_value()) << "the relay did not subscribe upstream";

  // Upstream changes the route as fast as the relay takes it, until the
  // relay's stream closes: the relay publishes all the time.
  std::atomic<bool> done{false};
  std::thread pusher([&] {
    for (int version = 1; !done.load() && upstream.Send(RouteResponse(version)); ++version) {
    }
  });
  absl::StatusOr<DeltaDiscoveryResponse> first = (*stream)->Next(kWait);
  ASSERT_TRUE(first.ok()) << first.status();
  // Shut down while the relay keeps publishing.
  {
    absl::MutexLock lock(&mu);
    auto busy = [&] { return publications >= 20; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&busy), kWait));
  }

  shutting_down.store(true, std::memory_order_release);
  ASSERT_TRUE(holding.WaitForNotificationWithTimeout(kWait)) << "the relay stopped publishing";
  pthread_kill(command.native_handle(), SIGTERM);
  command.join();
  done.store(true);
  upstream_server->Shutdown(std::chrono::system_clock::now());
  pusher.join();
  EXPECT_EQ(exit_code, 0) << err.str();
}

}  // namespace
}  // namespace facet::controller
