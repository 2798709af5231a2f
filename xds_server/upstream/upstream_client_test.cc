#include "xds_server/upstream/upstream_client.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_ads_service.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/resources/wire_check.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/test_objects.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::xds {
namespace {

using ::envoy::config::route::v3::RouteConfiguration;
using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::Duration kWait = absl::Seconds(20);

// An upstream at `uri` with channel credentials `creds` and nothing else set.
UpstreamServer Server(const std::string& uri, const std::string& creds = "insecure") {
  UpstreamServer server;
  server.server_uri = uri;
  server.channel_creds = creds;
  return server;
}
const std::string kLds = ListenerType().type_url();
const std::string kRds = RouteConfigurationType().type_url();
const std::string kCds = ClusterType().type_url();

// ---- Snapshots ----------------------------------------------------------

std::string RouteTo(const std::string& cluster) {
  return R"({virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: ""}, route: {cluster: ")" +
         cluster + R"("}}]}]})";
}
std::string ListenerFor(const std::string& route) {
  return R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: )" +
         route +
         R"(, config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})";
}
std::string EdsCluster() { return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"; }
std::string Endpoints(int port) {
  return "{endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: "
         "{address: {socket_address: {address: 127.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}

// Listener "greeter" for env prod and staging (none for other envs), route
// "r" sending prod to `prod_cluster` and staging to c-b, clusters c-a and
// c-b with endpoints.
std::vector<ResourceObject> World(const std::string& prod_cluster) {
  auto object = [](const std::string& name, const std::string& type, const std::string& xds_name,
                   const std::vector<std::pair<std::string, std::string>>& variants) {
    std::string bad_match;
    ResourceObject out = testing::MakeObject("demo", name, type, xds_name, variants, &bad_match);
    EXPECT_EQ(bad_match, "");
    return out;
  };
  return {
      object("greeter", "listener", "greeter",
             {{"{env: prod}", ListenerFor("r")}, {"{env: staging}", ListenerFor("r")}}),
      object("r", "route", "r",
             {{"{env: prod}", RouteTo(prod_cluster)}, {"{env: staging}", RouteTo("c-b")}}),
      object("c-a", "cluster", "c-a", {{"", EdsCluster()}}),
      object("c-b", "cluster", "c-b", {{"", EdsCluster()}}),
      object("e-a", "endpoint", "c-a", {{"", Endpoints(1)}}),
      object("e-b", "endpoint", "c-b", {{"", Endpoints(2)}}),
  };
}

// The version and constraints the server gives the variant of `xds_name`
// selected by `params`.
struct Served {
  std::string version;
  Constraint constraints;
};

Served ServedVariant(const Snapshot& snapshot, const ResourceType& type, const std::string& name,
                     const ParameterSet& params) {
  const ServedResource* resource = snapshot.Find(type, name);
  if (resource == nullptr) return {};
  for (const auto& variant : resource->variants) {
    if (variant->constraints.Matches(params)) return {variant->version, variant->constraints};
  }
  return {};
}

// ---- The listener -------------------------------------------------------

class RecordingListener : public UpstreamClient::Listener {
 public:
  absl::Status OnUpdate(const UpstreamUpdate& update) override {
    OneAtATime guard(active_);
    absl::MutexLock lock(&mu_);
    updates_.push_back(update);
    if (reject_ && reject_(update)) return absl::InvalidArgumentError("rejected by the test");
    return absl::OkStatus();
  }
  void OnConnected(int server_index) override {
    OneAtATime guard(active_);
    absl::MutexLock lock(&mu_);
    connected_.push_back(server_index);
  }
  void OnDisconnected(int server_index, const absl::Status& status) override {
    OneAtATime guard(active_);
    absl::MutexLock lock(&mu_);
    disconnected_.push_back(server_index);
  }

  // Returns the first update after the first `skip` that satisfies `pred`,
  // waiting up to kWait; nullopt on timeout.
  std::optional<UpstreamUpdate> WaitFor(std::function<bool(const UpstreamUpdate&)> pred,
                                        size_t skip = 0, absl::Duration timeout = kWait) {
    std::optional<UpstreamUpdate> found;
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (size_t i = skip; i < updates_.size(); ++i) {
        if (pred(updates_[i])) {
          found = updates_[i];
          return true;
        }
      }
      return false;
    };
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
    return found;
  }
  size_t update_count() {
    absl::MutexLock lock(&mu_);
    return updates_.size();
  }
  std::vector<int> connected() {
    absl::MutexLock lock(&mu_);
    return connected_;
  }
  std::vector<int> disconnected() {
    absl::MutexLock lock(&mu_);
    return disconnected_;
  }
  void set_reject(std::function<bool(const UpstreamUpdate&)> reject) {
    absl::MutexLock lock(&mu_);
    reject_ = std::move(reject);
  }

 private:
  // Fails the test when listener calls overlap.
  struct OneAtATime {
    explicit OneAtATime(std::atomic<int>& active) : active(active) {
      EXPECT_EQ(++active, 1) << "listener calls overlap";
    }
    ~OneAtATime() { --active; }
    std::atomic<int>& active;
  };

  std::atomic<int> active_{0};
  absl::Mutex mu_;
  std::vector<UpstreamUpdate> updates_ ABSL_GUARDED_BY(mu_);
  std::vector<int> connected_ ABSL_GUARDED_BY(mu_);
  std::vector<int> disconnected_ ABSL_GUARDED_BY(mu_);
  std::function<bool(const UpstreamUpdate&)> reject_ ABSL_GUARDED_BY(mu_);
};

// Returns whether `update` carries a variant of `name`.
std::function<bool(const UpstreamUpdate&)> HasVariant(const std::string& name,
                                                      const std::string& version = "") {
  return [=](const UpstreamUpdate& update) {
    for (const auto& v : update.variants) {
      if (v.name == name && (version.empty() || v.version == version)) return true;
    }
    return false;
  };
}

const UpstreamVariant* FindVariant(const UpstreamUpdate& update, const std::string& name) {
  for (const auto& v : update.variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

std::string ClusterOf(const UpstreamVariant& variant) {
  RouteConfiguration route;
  if (!route.ParseFromString(variant.serialized)) return "(does not parse)";
  return route.virtual_hosts(0).routes(0).route().cluster();
}

// Polls `pred` until it holds or kWait passes (for server-side state that
// offers no signal).
bool Eventually(const std::function<bool()>& pred) {
  const absl::Time deadline = absl::Now() + kWait;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return pred();
}

// A loopback port on which nothing listens: bound, never listening, so a
// connection is refused and no other test can take the port meanwhile.
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~ClosedPort() { close(fd_); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A loopback TCP proxy to 127.0.0.1:`target_port` that holds back what the
// server sends on each connection for `delay`: a server slow to complete the
// HTTP/2 handshake (loaded, or far away behind TLS).
class SlowHandshakeProxy {
 public:
  SlowHandshakeProxy(int target_port, absl::Duration delay)
      : target_port_(target_port), delay_(delay) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(0);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptUntilStopped(); });
  }
  ~SlowHandshakeProxy() {
    stop_ = true;
    acceptor_.join();
    close(listen_fd_);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  static bool WriteAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  void AcceptUntilStopped() {
    std::vector<std::thread> connections;
    while (!stop_) {
      pollfd ready = {listen_fd_, POLLIN, 0};
      if (poll(&ready, 1, 10) <= 0) continue;
      const int client = accept(listen_fd_, nullptr, nullptr);
      if (client >= 0) connections.emplace_back([this, client] { Forward(client); });
    }
    for (std::thread& connection : connections) connection.join();
  }

  // Copies both ways until either side closes or the proxy stops.
  void Forward(int client) {
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(target_port_);
    bool open = connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    const absl::Time release = absl::Now() + delay_;
    std::string held;
    char buffer[16384];
    while (open && !stop_) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      poll(fds, 2, 10);
      if (fds[0].revents != 0) {
        const ssize_t n = read(client, buffer, sizeof(buffer));
        open = n > 0 && WriteAll(server, buffer, static_cast<size_t>(n));
      }
      if (open && fds[1].revents != 0) {
        const ssize_t n = read(server, buffer, sizeof(buffer));
        open = n > 0;
        if (open) held.append(buffer, static_cast<size_t>(n));
      }
      if (open && !held.empty() && absl::Now() >= release) {
        open = WriteAll(client, held.data(), held.size());
        held.clear();
      }
    }
    close(client);
    close(server);
  }

  const int target_port_;
  const absl::Duration delay_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
};

// ---- Facet's own ADS server in-process ------------------------------------

class FacetServer {
 public:
  explicit FacetServer(SnapshotStore& store, int port = 0) : store_(store) { Start(port); }
  ~FacetServer() { Stop(); }

  void Start(int port) {
    ads_ = std::make_unique<AdsService>(store_, AdsService::Options());
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(ads_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void Stop() {
    if (server_ == nullptr) return;
    ads_->Drain();
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }
  // Restarts on the same port.
  void Restart() {
    Stop();
    Start(port_);
  }

  AdsService& ads() { return *ads_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int port() const { return port_; }

 private:
  SnapshotStore& store_;
  std::unique_ptr<AdsService> ads_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Fast reconnection, for tests.
UpstreamClient::Options TestOptions(UpstreamClient::Protocol protocol) {
  UpstreamClient::Options options;
  options.protocol = protocol;
  options.node.set_id("relay-1");
  options.initial_backoff = absl::Milliseconds(20);
  options.max_backoff = absl::Milliseconds(200);
  return options;
}

class UpstreamClientTest : public ::testing::TestWithParam<UpstreamClient::Protocol> {
 protected:
  void SetUp() override {
    Publish("c-a");
    server_ = std::make_unique<FacetServer>(store_);
  }

  void Publish(const std::string& prod_cluster) {
    BuildResult result = BuildSnapshot(World(prod_cluster), {}, last_.get(), BuildOptions{});
    for (const auto& status : result.statuses) {
      ASSERT_TRUE(status.accepted)
          << status.ref.ToString() << (status.findings.empty() ? "" : status.findings[0].message);
    }
    last_ = result.snapshot;
    store_.Publish(last_);
  }

  UpstreamClient::Options ClientOptions() { return TestOptions(GetParam()); }

  std::unique_ptr<UpstreamClient> Client(std::vector<std::string> addresses,
                                         UpstreamClient::Options options) {
    std::vector<UpstreamServer> servers;
    for (auto& address : addresses) servers.push_back(Server(address));
    return std::make_unique<UpstreamClient>(std::move(servers), std::move(options), listener_);
  }

  bool delta() const { return GetParam() == UpstreamClient::Protocol::kDelta; }

  SnapshotStore store_;
  std::shared_ptr<const Snapshot> last_;
  std::unique_ptr<FacetServer> server_;
  RecordingListener listener_;
};

const ParameterSet kProd = {{"env", "prod"}};
const ParameterSet kDev = {{"env", "dev"}};

TEST_P(UpstreamClientTest, LocatorGetsTheSelectedVariantWithItsConstraintsAndVersion) {
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->type_url, kRds);
  EXPECT_EQ(update->server_index, 0);
  EXPECT_FALSE(update->full_state);
  const UpstreamVariant& variant = *FindVariant(*update, "r");
  const Served served = ServedVariant(*last_, RouteConfigurationType(), "r", kProd);
  EXPECT_EQ(variant.version, served.version);
  EXPECT_EQ(variant.constraints.ToString(), "env=prod");
  EXPECT_EQ(variant.constraints.ToString(), served.constraints.ToString());
  EXPECT_EQ(ClusterOf(variant), "c-a");
  EXPECT_THAT(listener_.connected(), ::testing::ElementsAre(0));
  const UpstreamClientStats stats = client->stats();
  EXPECT_TRUE(stats.connected);
  EXPECT_EQ(stats.server_index, 0);
  EXPECT_EQ(stats.subscriptions, 1);
  EXPECT_EQ(stats.streams_started, 1);
  EXPECT_EQ(stats.failovers, 0);
}

TEST_P(UpstreamClientTest, ListenerUpdatesAreFullStateInSotwOnly) {
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kLds, "greeter", kProd});
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("greeter"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->full_state, !delta());
  EXPECT_EQ(FindVariant(*update, "greeter")->constraints.ToString(), "env=prod");
}

TEST_P(UpstreamClientTest, ParameterSetMatchingNoVariant) {
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kDev});
  client->Subscribe({kLds, "greeter", kDev});
  if (delta()) {
    // Delta: "does not exist" for this parameter set, as a removal whose
    // constraints are exactly the subscription's parameters.
    for (const std::string& type : {kRds, kLds}) {
      std::optional<UpstreamUpdate> update = listener_.WaitFor(
          [&](const UpstreamUpdate& u) { return u.type_url == type && !u.removals.empty(); });
      ASSERT_TRUE(update.has_value()) << type;
      EXPECT_THAT(update->variants, IsEmpty());
      ASSERT_EQ(update->removals.size(), 1u);
      EXPECT_EQ(update->removals[0].constraints.ToString(), "env=dev");
      EXPECT_TRUE(update->removals[0].constraints.Matches(kDev));
      EXPECT_FALSE(update->removals[0].constraints.Matches(kProd));
    }
    return;
  }
  // SotW: an answer with no resource. For listeners (full state) that says
  // the subscription does not exist; for routes it says nothing either way.
  for (const std::string& type : {kRds, kLds}) {
    std::optional<UpstreamUpdate> update =
        listener_.WaitFor([&](const UpstreamUpdate& u) { return u.type_url == type; });
    ASSERT_TRUE(update.has_value()) << type;
    EXPECT_THAT(update->variants, IsEmpty());
    EXPECT_THAT(update->removals, IsEmpty());
    EXPECT_EQ(update->full_state, type == kLds);
  }
}

TEST_P(UpstreamClientTest, NewSnapshotSendsTheNewVariant) {
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r")).has_value());
  Publish("c-b");
  const std::string version = ServedVariant(*last_, RouteConfigurationType(), "r", kProd).version;
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r", version));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(ClusterOf(*FindVariant(*update, "r")), "c-b");
}

TEST_P(UpstreamClientTest, UnsubscribeStopsTheServerSending) {
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  client->Subscribe({kCds, "c-a", {}});
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r")).has_value());
  ASSERT_TRUE(listener_.WaitFor(HasVariant("c-a")).has_value());
  auto holds_route = [&] {
    for (const auto& [key, count] : server_->ads().ClientsPerVariant()) {
      if (std::get<1>(key) == "r" && count > 0) return true;
    }
    return false;
  };
  ASSERT_TRUE(Eventually(holds_route));
  client->Unsubscribe({kRds, "r", kProd});
  client->Unsubscribe({kRds, "r", kProd});  // Idempotent.
  EXPECT_EQ(client->stats().subscriptions, 1);
  EXPECT_TRUE(Eventually([&] { return !holds_route(); }));
  // A route change is no longer sent: a listener subscribed after it (and
  // pushed after routes) arrives with no route update before it.
  const size_t before = listener_.update_count();
  Publish("c-b");
  client->Subscribe({kLds, "greeter", kProd});
  ASSERT_TRUE(listener_.WaitFor(HasVariant("greeter"), before).has_value());
  // (SotW answers the unsubscription itself with an empty route response.)
  EXPECT_FALSE(listener_.WaitFor(HasVariant("r"), before, absl::ZeroDuration()).has_value());
}

TEST_P(UpstreamClientTest, FailsOverFromAnUnreachableServer) {
  ClosedPort closed;
  auto client = Client({closed.address(), server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->server_index, 1);
  EXPECT_THAT(listener_.connected(), ::testing::ElementsAre(1));
  const UpstreamClientStats stats = client->stats();
  EXPECT_GE(stats.failovers, 1);
  EXPECT_GE(stats.reconnects, 1);
  EXPECT_EQ(stats.server_index, 1);
}

// gRPC C-core gives one connection attempt GRPC_ARG_MIN_RECONNECT_BACKOFF_MS
// at the least: a server whose handshake takes longer than the initial
// backoff is connected to, not failed over from.
TEST_P(UpstreamClientTest, ServerSlowToHandshakeIsConnectedNotFailedOver) {
  SlowHandshakeProxy slow(server_->port(), absl::Milliseconds(500));
  FacetServer second(store_);
  auto client = Client({slow.address(), second.address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->server_index, 0);
  const UpstreamClientStats stats = client->stats();
  EXPECT_EQ(stats.failovers, 0);
  EXPECT_EQ(stats.streams_started, 1);
  client.reset();
}

TEST_P(UpstreamClientTest, HealthyServerThatGoesAwayIsRetriedOnceThenFailedOver) {
  FacetServer second(store_);
  auto client = Client({server_->address(), second.address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r")).has_value());
  server_->Stop();
  std::optional<UpstreamUpdate> update = listener_.WaitFor(
      [](const UpstreamUpdate& u) { return u.server_index == 1 && HasVariant("r")(u); });
  ASSERT_TRUE(update.has_value());
  EXPECT_THAT(listener_.disconnected(), ::testing::ElementsAre(0));
  EXPECT_THAT(listener_.connected(), ::testing::ElementsAre(0, 1));
  const UpstreamClientStats stats = client->stats();
  EXPECT_EQ(stats.streams_started, 3);  // Server 0, server 0 again, server 1.
  EXPECT_EQ(stats.failovers, 1);
  EXPECT_EQ(stats.server_index, 1);
  client.reset();
}

TEST_P(UpstreamClientTest, ServerWithUnsupportedCredentialsIsSkipped) {
  std::vector<UpstreamServer> servers = {Server(server_->address(), "google_default"),
                                         Server(server_->address())};
  UpstreamClient client(servers, ClientOptions(), listener_);
  client.Subscribe({kRds, "r", kProd});
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->server_index, 1);
  EXPECT_EQ(client.stats().failovers, 1);
}

TEST_P(UpstreamClientTest, ReconnectsAfterRestartAndSubscribesAgain) {
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  client->Subscribe({kCds, "c-a", {}});
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r")).has_value());
  ASSERT_TRUE(listener_.WaitFor(HasVariant("c-a")).has_value());
  const size_t before = listener_.update_count();
  server_->Restart();
  EXPECT_TRUE(listener_.WaitFor(HasVariant("r"), before).has_value());
  EXPECT_TRUE(listener_.WaitFor(HasVariant("c-a"), before).has_value());
  EXPECT_THAT(listener_.disconnected(), ::testing::ElementsAre(0));
  EXPECT_THAT(listener_.connected(), ::testing::ElementsAre(0, 0));
  EXPECT_GE(client->stats().reconnects, 1);
  EXPECT_TRUE(client->stats().connected);
}

TEST_P(UpstreamClientTest, ListenerErrorIsNackedUpstream) {
  listener_.set_reject([](const UpstreamUpdate& u) { return u.type_url == kRds; });
  auto client = Client({server_->address()}, ClientOptions());
  client->Subscribe({kRds, "r", kProd});
  ASSERT_TRUE(Eventually([&] { return !server_->ads().nacks().empty(); }));
  const std::vector<NackRecord> nacks = server_->ads().nacks();
  EXPECT_EQ(nacks[0].type_url, kRds);
  EXPECT_EQ(nacks[0].name, "r");
  EXPECT_EQ(nacks[0].node_id, "relay-1");
  EXPECT_THAT(nacks[0].error_detail, HasSubstr("rejected by the test"));
  EXPECT_EQ(client->stats().nacks_sent, 1);
}

TEST(UpstreamClientBackoffTest, RetriesAnUnreachableServerWithGrowingDelays) {
  ClosedPort closed;
  RecordingListener listener;
  UpstreamClient client({Server(closed.address())},
                        TestOptions(UpstreamClient::Protocol::kDelta), listener);
  const absl::Time start = absl::Now();
  client.Subscribe({kRds, "r", kProd});
  ASSERT_TRUE(Eventually([&] { return client.stats().streams_started >= 6; }));
  // Five delays of at least 0.8 x 20 ms x 1.6^k (k = 0..4) make 253 ms; a
  // delay that did not grow would make 100 ms.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
  EXPECT_EQ(client.stats().failovers, 0);  // One server: nowhere to move.
  EXPECT_THAT(listener.connected(), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Protocols, UpstreamClientTest,
                         ::testing::Values(UpstreamClient::Protocol::kDelta,
                                           UpstreamClient::Protocol::kSotw),
                         [](const auto& info) {
                           return info.param == UpstreamClient::Protocol::kDelta ? "Delta" : "Sotw";
                         });

// ---- A scripted upstream, for what Facet's server never sends -------------

class FakeUpstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    client_.reset();
    server_->Shutdown(std::chrono::system_clock::now());
  }

  void StartClient(UpstreamClient::Protocol protocol, std::vector<std::string> extra = {}) {
    UpstreamClient::Options options = TestOptions(protocol);
    options.failover_timeout = failover_timeout_;
    options.max_receive_bytes = max_receive_bytes_;
    std::vector<UpstreamServer> servers = {Server(address())};
    for (auto& a : extra) servers.push_back(Server(a));
    client_ = std::make_unique<UpstreamClient>(std::move(servers), options, listener_);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  // Starts a delta client subscribed to route "r" for prod and waits for its
  // first request.
  void StartDeltaSubscribedToRoute() {
    StartClient(UpstreamClient::Protocol::kDelta);
    client_->Subscribe({kRds, "r", kProd});
    ASSERT_TRUE(fake_.DeltaRequest(0).has_value());
  }

  static DeltaDiscoveryResponse DeltaResponse(const std::string& type_url,
                                              const std::string& nonce) {
    DeltaDiscoveryResponse response;
    response.set_type_url(type_url);
    response.set_nonce(nonce);
    return response;
  }

  // A route variant for `env`, wrapped as Facet's server wraps one.
  static Resource Wrapped(const std::string& env, const std::string& version) {
    Resource resource;
    resource.mutable_resource_name()->set_name("r");
    auto* c = resource.mutable_resource_name()->mutable_dynamic_parameter_constraints();
    c->mutable_constraint()->set_key("env");
    c->mutable_constraint()->set_value(env);
    resource.set_version(version);
    RouteConfiguration route;
    route.set_name("r");
    route.add_virtual_hosts()->set_name("v");
    resource.mutable_resource()->PackFrom(route);
    return resource;
  }

  facet::testing::FakeAdsService fake_{kWait};
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  absl::Duration failover_timeout_ = absl::Seconds(5);
  int max_receive_bytes_ = 64 << 20;
  RecordingListener listener_;
  std::unique_ptr<UpstreamClient> client_;
};

TEST_F(FakeUpstreamTest, DeltaRequestsCarryNodeLocatorsAndAcks) {
  StartClient(UpstreamClient::Protocol::kDelta);
  client_->Subscribe({kRds, "r", kProd});
  std::optional<DeltaDiscoveryRequest> first = fake_.DeltaRequest(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->type_url(), kRds);
  EXPECT_EQ(first->node().id(), "relay-1");
  EXPECT_THAT(first->node().client_features(),
              ::testing::Contains(std::string("xds.config.resource-in-sotw")));
  ASSERT_EQ(first->resource_locators_subscribe_size(), 1);
  EXPECT_EQ(first->resource_locators_subscribe(0).name(), "r");
  EXPECT_EQ(first->resource_locators_subscribe(0).dynamic_parameters().at("env"), "prod");
  EXPECT_THAT(first->resource_names_subscribe(), IsEmpty());

  DeltaDiscoveryResponse response = DeltaResponse(kRds, "n1");
  *response.add_resources() = Wrapped("prod", "v1");
  ASSERT_TRUE(fake_.Send(response));
  std::optional<DeltaDiscoveryRequest> ack = fake_.DeltaRequest(1);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->response_nonce(), "n1");
  EXPECT_FALSE(ack->has_error_detail());
  EXPECT_FALSE(ack->has_node());
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r", "v1"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->variants[0].constraints.ToString(), "env=prod");

  client_->Unsubscribe({kRds, "r", kProd});
  std::optional<DeltaDiscoveryRequest> unsubscribe = fake_.DeltaRequest(2);
  ASSERT_TRUE(unsubscribe.has_value());
  ASSERT_EQ(unsubscribe->resource_locators_unsubscribe_size(), 1);
  EXPECT_EQ(unsubscribe->resource_locators_unsubscribe(0).name(), "r");
}

TEST_F(FakeUpstreamTest, UnsolicitedTypeIsNotAcked) {
  ASSERT_NO_FATAL_FAILURE(StartDeltaSubscribedToRoute());
  // An ACK for clusters would be this stream's first cluster request: a
  // wildcard subscription to every cluster.
  ASSERT_TRUE(fake_.Send(DeltaResponse(kCds, "c1")));
  DeltaDiscoveryResponse routes = DeltaResponse(kRds, "r1");
  *routes.add_resources() = Wrapped("prod", "v1");
  ASSERT_TRUE(fake_.Send(routes));
  std::optional<DeltaDiscoveryRequest> next = fake_.DeltaRequest(1);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), kRds);
  EXPECT_EQ(next->response_nonce(), "r1");
}

TEST_F(FakeUpstreamTest, ManySubscribesAreCoalescedIntoFewRequests) {
  StartClient(UpstreamClient::Protocol::kDelta);
  for (int i = 0; i < 200; ++i) {
    client_->Subscribe({kRds, absl::StrCat("r", i), kProd});
  }
  // Every locator arrives, in far fewer requests than subscriptions.
  int locators = 0;
  size_t n = 0;
  while (locators < 200) {
    std::optional<DeltaDiscoveryRequest> request = fake_.DeltaRequest(n++);
    ASSERT_TRUE(request.has_value()) << "after " << locators << " locators";
    locators += request->resource_locators_subscribe_size();
  }
  EXPECT_EQ(locators, 200);
  EXPECT_LE(n, 10u);
  EXPECT_EQ(client_->stats().subscriptions, 200);
}

TEST_F(FakeUpstreamTest, DeltaNacksUncompilableConstraintsWrongTypesAndBadBytes) {
  ASSERT_NO_FATAL_FAILURE(StartDeltaSubscribedToRoute());

  auto expect_nack = [&](DeltaDiscoveryResponse response, size_t request_index,
                         const std::string& detail) {
    response.set_type_url(kRds);
    response.set_nonce(absl::StrCat("n", request_index));
    ASSERT_TRUE(fake_.Send(response));
    std::optional<DeltaDiscoveryRequest> nack = fake_.DeltaRequest(request_index);
    ASSERT_TRUE(nack.has_value());
    EXPECT_EQ(nack->response_nonce(), response.nonce());
    ASSERT_TRUE(nack->has_error_detail()) << detail;
    EXPECT_THAT(nack->error_detail().message(), HasSubstr(detail));
  };

  DeltaDiscoveryResponse empty_key;
  Resource bad = Wrapped("prod", "v1");
  bad.mutable_resource_name()
      ->mutable_dynamic_parameter_constraints()
      ->mutable_constraint()
      ->set_key("");
  *empty_key.add_resources() = bad;
  expect_nack(empty_key, 1, "dynamic_parameter_constraints");

  DeltaDiscoveryResponse wrong_type;
  Resource cluster = Wrapped("prod", "v1");
  envoy::config::cluster::v3::Cluster c;
  c.set_name("r");
  cluster.mutable_resource()->PackFrom(c);
  *wrong_type.add_resources() = cluster;
  expect_nack(wrong_type, 2, "is not the response's");

  DeltaDiscoveryResponse bad_bytes;
  Resource garbage = Wrapped("prod", "v1");
  garbage.mutable_resource()->set_value("\xff\xff\xff");
  *bad_bytes.add_resources() = garbage;
  expect_nack(bad_bytes, 3, "do not parse");

  DeltaDiscoveryResponse bad_removal;
  auto* removed = bad_removal.add_removed_resource_names();
  removed->set_name("r");
  removed->mutable_dynamic_parameter_constraints()->mutable_or_constraints();
  expect_nack(bad_removal, 4, "removed_resource_names");

  EXPECT_EQ(listener_.update_count(), 0u);  // Nothing rejected reaches the listener.
  EXPECT_EQ(client_->stats().nacks_sent, 4);
}

// A hostile or broken upstream: each response below does not parse, or
// carries a resource past the bounds. Each is NACKed naming the resource and
// the reason, and the stream goes on: a later good response is applied and a
// new subscription is sent.
TEST_F(FakeUpstreamTest, UnparsableAndOversizedResponsesAreNackedAndTheStreamGoesOn) {
  ASSERT_NO_FATAL_FAILURE(StartDeltaSubscribedToRoute());
  size_t next_request = 1;
  auto expect_nack = [&](Resource resource, const std::string& nonce, const std::string& detail) {
    DeltaDiscoveryResponse response = DeltaResponse(kRds, nonce);
    *response.add_resources() = std::move(resource);
    ASSERT_TRUE(fake_.Send(response));  // protobuf logs the bad UTF-8, and sends it.
    std::optional<DeltaDiscoveryRequest> nack = fake_.DeltaRequest(next_request++);
    ASSERT_TRUE(nack.has_value()) << "no answer to " << nonce;
    EXPECT_EQ(nack->response_nonce(), nonce);
    ASSERT_TRUE(nack->has_error_detail()) << nonce;
    EXPECT_THAT(nack->error_detail().message(), HasSubstr(detail)) << nonce;
  };

  Resource bad_name = Wrapped("prod", "v1");
  bad_name.mutable_resource_name()->set_name("r\xff");
  expect_nack(bad_name, "name",
              "DeltaDiscoveryResponse does not parse: resources[0].resource_name.name: is not "
              "valid UTF-8 (at byte 1)");

  Resource bad_value = Wrapped("pro\xc3", "v1");
  expect_nack(bad_value, "value",
              "resources[0].resource_name.dynamic_parameter_constraints.constraint.value: is not "
              "valid UTF-8 (at byte 3)");

  Resource bad_version = Wrapped("prod", "v\x80");
  expect_nack(bad_version, "version", "resources[0].version: is not valid UTF-8 (at byte 1)");

  Resource bad_content = Wrapped("prod", "v1");
  RouteConfiguration route;
  route.set_name("r");
  route.add_virtual_hosts()->set_name("v\xed\xa0\x80");  // A surrogate.
  bad_content.mutable_resource()->PackFrom(route);
  expect_nack(bad_content, "content",
              "RouteConfiguration resource [0]: virtual_hosts[0].name: is not valid UTF-8 (at "
              "byte 1)");

  Resource control = Wrapped("pr\x01od", "v1");
  expect_nack(control, "control", "contains control characters");

  // A resource just past the bound a manifest's resource has.
  Resource big = Wrapped("prod", "v1");
  route.mutable_virtual_hosts(0)->set_name(std::string(kMaxResourceBytes, 'x'));
  big.mutable_resource()->PackFrom(route);
  expect_nack(big, "big",
              absl::StrCat("RouteConfiguration resource [0]: is ", route.ByteSizeLong(),
                           " bytes encoded; the limit is 1048576 bytes per resource"));
  EXPECT_EQ(listener_.update_count(), 0u);

  DeltaDiscoveryResponse good = DeltaResponse(kRds, "good");
  *good.add_resources() = Wrapped("prod", "v2");
  ASSERT_TRUE(fake_.Send(good));
  std::optional<DeltaDiscoveryRequest> ack = fake_.DeltaRequest(next_request++);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->response_nonce(), "good");
  EXPECT_FALSE(ack->has_error_detail());
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r", "v2")).has_value());

  client_->Subscribe({kRds, "r2", kProd});
  std::optional<DeltaDiscoveryRequest> subscribe = fake_.DeltaRequest(next_request++);
  ASSERT_TRUE(subscribe.has_value());
  ASSERT_EQ(subscribe->resource_locators_subscribe_size(), 1);
  EXPECT_EQ(subscribe->resource_locators_subscribe(0).name(), "r2");
  EXPECT_EQ(fake_.streams(), 1u);
  EXPECT_EQ(client_->stats().nacks_sent, 6);
}

TEST_F(FakeUpstreamTest, SotwUnparsableResponseIsNackedWithTheAcceptedVersion) {
  StartClient(UpstreamClient::Protocol::kSotw);
  client_->Subscribe({kRds, "r", kProd});
  ASSERT_TRUE(fake_.SotwRequest(0).has_value());
  DiscoveryResponse good;
  good.set_type_url(kRds);
  good.set_version_info("7");
  good.set_nonce("a");
  good.add_resources()->PackFrom(Wrapped("prod", ""));
  ASSERT_TRUE(fake_.Send(good));
  ASSERT_TRUE(fake_.SotwRequest(1).has_value());

  DiscoveryResponse bad = good;
  bad.set_version_info("8\xff");
  bad.set_nonce("b");
  ASSERT_TRUE(fake_.Send(bad));
  std::optional<DiscoveryRequest> nack = fake_.SotwRequest(2);
  ASSERT_TRUE(nack.has_value());
  EXPECT_EQ(nack->version_info(), "7");
  EXPECT_EQ(nack->response_nonce(), "b");
  ASSERT_TRUE(nack->has_error_detail());
  EXPECT_THAT(nack->error_detail().message(),
              HasSubstr("DiscoveryResponse does not parse: version_info: is not valid UTF-8"));

  good.set_version_info("9");
  good.set_nonce("c");
  ASSERT_TRUE(fake_.Send(good));
  std::optional<DiscoveryRequest> ack = fake_.SotwRequest(3);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->version_info(), "9");
  EXPECT_FALSE(ack->has_error_detail());
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r", "9")).has_value());
}

TEST_F(FakeUpstreamTest, SotwAcksWithVersionAndNacksWithThePreviousOne) {
  StartClient(UpstreamClient::Protocol::kSotw);
  client_->Subscribe({kRds, "r", kProd});
  std::optional<DiscoveryRequest> first = fake_.SotwRequest(0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->node().id(), "relay-1");
  EXPECT_EQ(first->version_info(), "");
  EXPECT_EQ(first->response_nonce(), "");
  ASSERT_EQ(first->resource_locators_size(), 1);
  EXPECT_EQ(first->resource_locators(0).dynamic_parameters().at("env"), "prod");

  DiscoveryResponse good;
  good.set_type_url(kRds);
  good.set_version_info("7");
  good.set_nonce("a");
  good.add_resources()->PackFrom(Wrapped("prod", ""));
  ASSERT_TRUE(fake_.Send(good));
  std::optional<DiscoveryRequest> ack = fake_.SotwRequest(1);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->version_info(), "7");
  EXPECT_EQ(ack->response_nonce(), "a");
  EXPECT_FALSE(ack->has_error_detail());
  EXPECT_EQ(ack->resource_locators_size(), 1);
  // The wrapper carried no version: the response's version_info is the variant's.
  ASSERT_TRUE(listener_.WaitFor(HasVariant("r", "7")).has_value());

  DiscoveryResponse wrong;
  wrong.set_type_url(kRds);
  wrong.set_version_info("8");
  wrong.set_nonce("b");
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name("r");
  wrong.add_resources()->PackFrom(cluster);
  ASSERT_TRUE(fake_.Send(wrong));
  std::optional<DiscoveryRequest> nack = fake_.SotwRequest(2);
  ASSERT_TRUE(nack.has_value());
  EXPECT_EQ(nack->version_info(), "7");
  EXPECT_EQ(nack->response_nonce(), "b");
  ASSERT_TRUE(nack->has_error_detail());
  EXPECT_THAT(nack->error_detail().message(), HasSubstr("envoy.config.cluster.v3.Cluster"));
  EXPECT_EQ(nack->resource_locators_size(), 1);

  // A plain resource of the type is accepted, unconstrained, named by its
  // name field.
  DiscoveryResponse plain;
  plain.set_type_url(kRds);
  plain.set_version_info("9");
  plain.set_nonce("c");
  RouteConfiguration route;
  route.set_name("r");
  plain.add_resources()->PackFrom(route);
  ASSERT_TRUE(fake_.Send(plain));
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r", "9"));
  ASSERT_TRUE(update.has_value());
  EXPECT_TRUE(update->variants[0].constraints.unconstrained());
  EXPECT_EQ(update->variants[0].serialized, route.SerializeAsString());

  // Unsubscribing the last locator sends an empty list.
  client_->Unsubscribe({kRds, "r", kProd});
  for (size_t i = 3;; ++i) {
    std::optional<DiscoveryRequest> request = fake_.SotwRequest(i);
    ASSERT_TRUE(request.has_value());
    if (request->resource_locators_size() == 0) break;
  }
}

TEST_F(FakeUpstreamTest, ServerThatNeverAnswersIsGivenUpAfterTheFailoverTimeout) {
  SnapshotStore store;
  BuildResult result = BuildSnapshot(World("c-a"), {}, nullptr, BuildOptions{});
  store.Publish(result.snapshot);
  FacetServer facet(store);
  failover_timeout_ = absl::Milliseconds(300);
  StartClient(UpstreamClient::Protocol::kDelta, {facet.address()});
  client_->Subscribe({kRds, "r", kProd});
  std::optional<UpstreamUpdate> update = listener_.WaitFor(HasVariant("r"));
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(update->server_index, 1);
  EXPECT_EQ(fake_.streams(), 1u);
  EXPECT_EQ(client_->stats().failovers, 1);
  EXPECT_THAT(listener_.disconnected(), IsEmpty());  // It never connected.
  client_.reset();
}

TEST_F(FakeUpstreamTest, OversizedResponseEndsTheStreamAndTheNextOneSubscribesAgain) {
  max_receive_bytes_ = 4096;
  ASSERT_NO_FATAL_FAILURE(StartDeltaSubscribedToRoute());
  DeltaDiscoveryResponse big = DeltaResponse(kRds, "big");
  Resource resource = Wrapped("prod", "v1");
  RouteConfiguration route;
  route.set_name(std::string(8192, 'x'));
  resource.mutable_resource()->PackFrom(route);
  *big.add_resources() = resource;
  ASSERT_TRUE(fake_.Send(big));
  // gRPC refuses the message and ends the call; a new stream subscribes again.
  std::optional<DeltaDiscoveryRequest> again = fake_.DeltaRequest(1);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->response_nonce(), "");
  ASSERT_EQ(again->resource_locators_subscribe_size(), 1);
  EXPECT_EQ(fake_.streams(), 2u);
  EXPECT_EQ(listener_.update_count(), 0u);
}

TEST_F(FakeUpstreamTest, DestroyingTheClientEndsTheStream) {
  ASSERT_NO_FATAL_FAILURE(StartDeltaSubscribedToRoute());
  client_.reset();
  EXPECT_TRUE(Eventually([&] { return !fake_.Send(DeltaDiscoveryResponse()); }));
}

}  // namespace
}  // namespace facet::xds
