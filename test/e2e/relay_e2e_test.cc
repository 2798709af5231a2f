// End-to-end tests of `facet relay` with the real xDS clients (gRPC C++ 1.51
// and, where installed, grpc-js-xds 1.14): `facet serve` instances upstream,
// relays in front of them (one, two chained, one with two upstream lists),
// real backends, and the relays' and servers' /metrics for what the clients
// cannot show (how many upstream streams and subscriptions downstream demand
// costs, what a reconnection pushes).
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/e2e/client_checks.h"
#include "test/e2e/e2e_harness.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::facet::testing::IsOk;
using ::testing::Each;
using ::testing::HasSubstr;

// Short linger so that probe subscriptions (sent while a resource's keys are
// unknown) expire within a test.
const std::vector<std::string> kRelayArgs = {"--upstream-linger", "1s"};
constexpr char kRelay[] = "relay";

int CountLines(absl::string_view text, absl::string_view line) {
  int count = 0;
  for (const std::string& l : SplitLines(text)) count += l == line ? 1 : 0;
  return count;
}

class RelayE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<E2eHarness>> harness = E2eHarness::Create();
    ASSERT_THAT(harness, IsOk());
    harness_ = *std::move(harness);
  }

  void TearDown() override {
    if (harness_ == nullptr || !HasFailure()) return;
    harness_->KeepTempDir();
    std::cerr << "relay e2e: kept " << harness_->dir() << " (logs/, manifests*/, *.json)\n"
              << harness_->ServerLogs();
  }

  // Renders `templates` into a new manifest directory `name` and starts
  // `facet serve` named `name` on it (backends must be running).
  absl::Status ServeManifests(const std::string& name, const std::vector<std::string>& templates,
                              const ServerOptions& options = {}) {
    absl::StatusOr<std::string> dir = harness_->AddManifestDir(name);
    if (!dir.ok()) return dir.status();
    for (const std::string& template_name : templates) {
      // greeter.yaml.tmpl -> greeter.yaml
      const std::string file_name = template_name.substr(0, template_name.size() - 5);
      if (absl::Status written = harness_->WriteManifest(template_name, file_name, *dir);
          !written.ok()) {
        return written;
      }
    }
    return harness_->StartNamedFacet(name, *dir, options);
  }

  // Starts a relay named `name` relaying `servers`, with kRelayArgs.
  absl::Status Relay(const std::string& name, RelayConfigOptions config,
                     std::vector<std::string> extra_args = {}) {
    ServerOptions options;
    options.extra_args = kRelayArgs;
    options.extra_args.insert(options.extra_args.end(), extra_args.begin(), extra_args.end());
    return harness_->StartRelay(name, config, options);
  }

  // Writes a bootstrap for `server`; fails the test (and returns "") on error.
  std::string Bootstrap(const std::string& server, const std::string& node_id,
                        std::map<std::string, std::string> metadata,
                        std::vector<std::string> authorities = {}) {
    absl::StatusOr<std::string> path =
        harness_->WriteBootstrap({.server_address = server,
                                  .node_id = node_id,
                                  .metadata = std::move(metadata),
                                  .authorities = std::move(authorities)});
    EXPECT_THAT(path, IsOk());
    return path.ok() ? *path : "";
  }

  void ExpectBackends(const std::vector<ClientOptions>& clients,
                      const std::vector<std::string>& expected) {
    e2e::ExpectBackends(*harness_, clients, expected);
  }

  // Returns a metric of server `name`, or -1 when it cannot be read.
  double MetricOr(const std::string& name, const std::string& metric) {
    absl::StatusOr<double> value = harness_->Metric(name, metric);
    return value.ok() ? *value : -1;
  }

  // Polls a metric of server `name` every 50 ms until `done(value)`.
  // DeadlineExceeded (with the last value) after `timeout`.
  absl::Status WaitForMetric(const std::string& name, const std::string& metric,
                             const std::function<bool(double)>& done,
                             absl::Duration timeout = absl::Seconds(15)) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string last;
    while (true) {
      absl::StatusOr<double> value = harness_->Metric(name, metric);
      if (value.ok() && done(*value)) return absl::OkStatus();
      last = value.ok() ? absl::StrCat(*value) : value.status().ToString();
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat(name, " ", metric, " did not reach the expected value in ",
                         absl::FormatDuration(timeout), "; last: ", last));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  // Waits until a client started with StartClient has printed `line`
  // `count` times.
  static absl::Status WaitForLines(Process& client, const std::string& line, int count,
                                   absl::Duration timeout = absl::Seconds(20)) {
    return client.WaitForStdout(
        [&](absl::string_view out) { return CountLines(out, line) >= count; }, timeout);
  }

  std::unique_ptr<E2eHarness> harness_;
};

// Old-style names: the same clients get the same backends through the relay
// as from Facet directly (variants by node metadata; the relay forwards them
// upstream as dynamic parameters).
TEST_F(RelayE2eTest, OldStyleNamesRouteThroughRelayAsDirect) {
  ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
  ASSERT_THAT(ServeManifests("facet", {"greeter.yaml.tmpl"}), IsOk());
  const std::string facet = harness_->XdsAddressOf("facet");
  ASSERT_THAT(Relay(kRelay, {.servers = {facet}}), IsOk());
  const std::string relay = harness_->XdsAddressOf(kRelay);

  std::vector<ClientOptions> clients;
  std::vector<std::string> expected;
  for (const std::string& server : {relay, facet}) {
    const std::string via = server == relay ? "relay" : "direct";
    clients.push_back({.bootstrap_path = Bootstrap(server, "cpp-prod-" + via, {{"env", "prod"}}),
                       .count = 3});
    clients.push_back({.bootstrap_path = Bootstrap(server, "cpp-test-" + via, {{"env", "test"}}),
                       .count = 3});
    clients.push_back(
        {.bootstrap_path = Bootstrap(server, "cpp-none-" + via, {{"zone", "zone-a"}}),
         .count = 3});
    expected.insert(expected.end(), {"prod", "test", "test"});
    if (E2eHarness::NodeClientUnavailableReason().empty()) {
      clients.push_back({.kind = ClientKind::kNode,
                         .bootstrap_path = Bootstrap(server, "node-prod-" + via, {{"env", "prod"}}),
                         .count = 3});
      clients.push_back({.kind = ClientKind::kNode,
                         .bootstrap_path = Bootstrap(server, "node-test-" + via, {{"env", "test"}}),
                         .count = 3});
      expected.insert(expected.end(), {"prod", "test"});
    }
  }
  ExpectBackends(clients, expected);
  if (!E2eHarness::NodeClientUnavailableReason().empty()) {
    std::cerr << E2eHarness::NodeClientUnavailableReason() << "\n";
  }
  // Explain through the relay follows what its cache holds down to the
  // endpoints, or names what it lacks: never a listener alone as complete.
  for (const char* path : {"/explain?target=greeter&param=env=prod",
                           "/explain?target=greeter&param=env=nowhere"}) {
    absl::StatusOr<std::string> explained = harness_->AdminGet(kRelay, path);
    ASSERT_THAT(explained, IsOk()) << path;
    EXPECT_THAT(*explained, HasSubstr("\"partial\": true")) << path;
    if (absl::StrContains(*explained, "\"complete\": true")) {
      EXPECT_THAT(*explained, HasSubstr("\"type\": \"endpoint\"")) << *explained;
    } else {
      EXPECT_THAT(*explained, HasSubstr("\"status\": \"not_cached\"")) << *explained;
    }
  }
  EXPECT_THAT(harness_->Stop(kRelay), IsOk()) << "facet relay must exit 0 on SIGTERM";
}

// xdstp:// names of two authorities through a relay whose configuration
// lists both (served by the top-level upstream).
TEST_F(RelayE2eTest, FederatedNamesRouteThroughRelay) {
  ASSERT_THAT(harness_->StartBackends({"a-prod", "a-test", "b"}), IsOk());
  ASSERT_THAT(ServeManifests("facet", {"federation.yaml.tmpl"}), IsOk());
  ASSERT_THAT(Relay(kRelay, {.servers = {harness_->XdsAddressOf("facet")},
                             .authorities = {{"a.example", {}}, {"b.example", {}}}}),
              IsOk());
  const std::string relay = harness_->XdsAddressOf(kRelay);
  const std::vector<std::string> authorities = {"a.example", "b.example"};
  const std::string prod = Bootstrap(relay, "fed-prod", {{"env", "prod"}}, authorities);
  const std::string test = Bootstrap(relay, "fed-test", {{"env", "test"}}, authorities);
  std::vector<ClientOptions> clients = {
      {.target = "xds://a.example/greeter", .bootstrap_path = prod, .federation = true, .count = 3},
      {.target = "xds://b.example/greeter", .bootstrap_path = prod, .federation = true, .count = 3},
      {.target = "xds://a.example/greeter", .bootstrap_path = test, .federation = true, .count = 3}};
  std::vector<std::string> expected = {"a-prod", "b", "a-test"};
  if (E2eHarness::NodeClientUnavailableReason().empty()) {
    clients.push_back({.kind = ClientKind::kNode,
                       .target = "xds://a.example/greeter",
                       .bootstrap_path = test,
                       .count = 3});
    clients.push_back({.kind = ClientKind::kNode,
                       .target = "xds://b.example/greeter",
                       .bootstrap_path = prod,
                       .count = 3});
    expected.insert(expected.end(), {"a-test", "b"});
  }
  ExpectBackends(clients, expected);
}

// A manifest edit on the upstream Facet reaches a continuously calling
// client through the relay: it switches to the new cluster within seconds,
// never fails a call and never goes back.
TEST_F(RelayE2eTest, UpstreamManifestChangeReachesRunningClientWithoutFailures) {
  ASSERT_THAT(harness_->StartBackends({"prod", "test", "blue"}), IsOk());
  ASSERT_THAT(ServeManifests("facet", {"greeter.yaml.tmpl"}), IsOk());
  ASSERT_THAT(Relay(kRelay, {.servers = {harness_->XdsAddressOf("facet")}}), IsOk());
  absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
      {.bootstrap_path = Bootstrap(harness_->XdsAddressOf(kRelay), "cpp-live", {{"env", "prod"}}),
       .duration = absl::Seconds(6)});
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT(WaitForLines(**client, "ok prod", 30), IsOk());

  absl::StatusOr<std::string> dir = harness_->AddManifestDir("facet");
  ASSERT_THAT(dir, IsOk());
  ASSERT_THAT(harness_->WriteManifest("greeter-blue.yaml.tmpl", "greeter.yaml", *dir), IsOk());
  const absl::Time changed = absl::Now();
  EXPECT_THAT(WaitForLines(**client, "ok blue", 1, absl::Seconds(5)), IsOk())
      << "the client did not switch to backend blue within 5 s of the edit";
  std::cerr << "relay e2e: switched to blue " << absl::FormatDuration(absl::Now() - changed)
            << " after the edit\n";
  // The edit's way as the histograms saw it: Facet built and published it
  // (the first snapshot was the other build) and pushed it to the relay's
  // stream, and the relay published it from that response and pushed it on
  // to the client's.
  EXPECT_GE(MetricOr("facet", "facet_snapshot_build_seconds_count"), 2);
  EXPECT_GE(MetricOr("facet", "facet_push_seconds_count"), 1);
  EXPECT_GE(MetricOr(kRelay, "facet_snapshot_build_seconds_count"), 1);
  EXPECT_GE(MetricOr(kRelay, "facet_push_seconds_count"), 1);

  ExpectSwitchedOnce(FinishContinuousRun(**client), "prod", "blue");
}

// Finishes a continuous client and checks it never failed and every call
// reached `backend`.
void ExpectAllOk(Process& client, const std::string& backend) {
  EXPECT_THAT(FinishContinuousRun(client), Each("ok " + backend));
}

// Many downstream streams with two distinct projected parameter sets: 20
// gRPC C++ clients, each with its own node id and pod metadata, half env=prod
// and half env=test. The relay holds one upstream stream (Facet sees one
// stream) and, once the probes have lingered out, one upstream subscription
// per resource and projected parameter set:
//   Listener greeter          unconstrained -> {}                       1
//   RouteConfiguration greeter  keys {env}  -> {env=prod}, {env=test}   2
//   Cluster greeter-prod / greeter-test      -> {} each                  2
//   ClusterLoadAssignment greeter-prod / -test -> {} each                2
// = 7. Before a resource's keys are known the relay sends one probe with
// the first client's full parameter set (env and pod); it lingers 1 s after
// the answer, so at most 7 + 6 = 13 at any time.
TEST_F(RelayE2eTest, ManyClientsShareOneUpstreamStreamAndOneSubscriptionPerProjectedSet) {
  constexpr int kClients = 20;
  constexpr int kSteadySubscriptions = 7;
  constexpr int kWithProbes = kSteadySubscriptions + 6;
  ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
  ASSERT_THAT(ServeManifests("facet", {"greeter.yaml.tmpl"}), IsOk());
  ASSERT_THAT(Relay(kRelay, {.servers = {harness_->XdsAddressOf("facet")}}), IsOk());
  const std::string relay = harness_->XdsAddressOf(kRelay);

  std::vector<std::unique_ptr<Process>> clients;
  std::vector<std::string> envs;
  for (int i = 0; i < kClients; ++i) {
    const std::string pod = absl::StrCat("pod-", i);
    envs.push_back(i % 2 == 0 ? "prod" : "test");
    absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
        {.bootstrap_path = Bootstrap(relay, pod, {{"env", envs.back()}, {"pod", pod}}),
         .duration = absl::Seconds(30),
         .interval = absl::Milliseconds(250)});
    ASSERT_THAT(client, IsOk());
    clients.push_back(*std::move(client));
  }
  double max_subscriptions = 0;
  for (int i = 0; i < kClients; ++i) {
    ASSERT_THAT(WaitForLines(*clients[i], "ok " + envs[i], 1, absl::Seconds(30)), IsOk())
        << "client " << i;
    max_subscriptions =
        std::max(max_subscriptions, MetricOr(kRelay, "facet_relay_upstream_subscriptions"));
  }
  EXPECT_EQ(MetricOr(kRelay, "facet_xds_streams_open"), kClients);
  EXPECT_EQ(MetricOr(kRelay, "facet_relay_upstream_streams"), 1);
  EXPECT_EQ(MetricOr("facet", "facet_xds_streams_open"), 1) << "Facet sees only the relay";
  EXPECT_EQ(MetricOr("facet", "facet_xds_streams_total"), 1);
  EXPECT_THAT(WaitForMetric(kRelay, "facet_relay_upstream_subscriptions",
                            [&](double value) {
                              max_subscriptions = std::max(max_subscriptions, value);
                              return value == kSteadySubscriptions;
                            }),
              IsOk());
  EXPECT_LE(max_subscriptions, kWithProbes);
  EXPECT_EQ(MetricOr(kRelay, "facet_relay_cache_variants"), 7);
  std::cerr << "relay e2e: " << kClients << " clients: relay upstream subscriptions max "
            << max_subscriptions << ", then "
            << MetricOr(kRelay, "facet_relay_upstream_subscriptions") << "; cache hits "
            << MetricOr(kRelay, "facet_relay_cache_hits_total") << ", misses "
            << MetricOr(kRelay, "facet_relay_cache_misses_total") << "; relay pushes "
            << MetricOr(kRelay, "facet_xds_pushes_total") << ", Facet pushes "
            << MetricOr("facet", "facet_xds_pushes_total") << "\n";
  // Every call so far reached the client's env (the rest are cut short).
  for (int i = 0; i < kClients; ++i) {
    EXPECT_THAT(SplitLines(clients[i]->Stdout()), Each("ok " + envs[i])) << "client " << i;
  }
}

// Two authorities served by two different Facets, through one relay, to one
// federated client (one gRPC C++ process, so one ADS stream to the relay,
// with channels to both authorities). Each Facet serves both authorities;
// the relay must ask each only for its own.
TEST_F(RelayE2eTest, TwoAuthoritiesFromTwoUpstreamsReachOneFederatedClient) {
  ASSERT_THAT(harness_->StartBackends({"a-prod", "a-test", "b"}), IsOk());
  ASSERT_THAT(ServeManifests("facet-a", {"federation.yaml.tmpl"}), IsOk());
  ASSERT_THAT(ServeManifests("facet-b", {"federation.yaml.tmpl"}), IsOk());
  const std::string a = harness_->XdsAddressOf("facet-a");
  const std::string b = harness_->XdsAddressOf("facet-b");
  ASSERT_THAT(
      Relay(kRelay, {.servers = {a}, .authorities = {{"a.example", {a}}, {"b.example", {b}}}}),
      IsOk());
  absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
      {.target = "xds://a.example/greeter,xds://b.example/greeter",
       .bootstrap_path = Bootstrap(harness_->XdsAddressOf(kRelay), "fed-client", {{"env", "prod"}},
                                   {"a.example", "b.example"}),
       .federation = true,
       .duration = absl::Seconds(4),
       .interval = absl::Milliseconds(50)});
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT(WaitForLines(**client, "ok b", 3), IsOk());

  EXPECT_EQ(MetricOr(kRelay, "facet_xds_streams_total"), 1) << "one client stream";
  EXPECT_EQ(MetricOr(kRelay, "facet_relay_upstream_streams"), 2);
  const std::string by_authority = "facet_xds_streams_by_authority{authority=\"";
  EXPECT_EQ(MetricOr("facet-a", by_authority + "a.example\"}"), 1);
  EXPECT_EQ(MetricOr("facet-a", by_authority + "b.example\"}"), -1) << "absent";
  EXPECT_EQ(MetricOr("facet-b", by_authority + "b.example\"}"), 1);
  EXPECT_EQ(MetricOr("facet-b", by_authority + "a.example\"}"), -1) << "absent";

  const std::vector<std::string> lines = FinishContinuousRun(**client);
  ASSERT_GE(lines.size(), 2u);
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_EQ(lines[i], i % 2 == 0 ? "ok a-prod" : "ok b") << "line " << i;
  }
}

// The only upstream is SIGKILLed while clients call: nothing fails, and a
// client that arrives afterwards (a new pod, an env already known) is
// answered from the cache alone.
TEST_F(RelayE2eTest, UpstreamKilledClientsAreServedFromCache) {
  ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
  ASSERT_THAT(ServeManifests("facet", {"greeter.yaml.tmpl"}), IsOk());
  ASSERT_THAT(Relay(kRelay, {.servers = {harness_->XdsAddressOf("facet")}}), IsOk());
  const std::string relay = harness_->XdsAddressOf(kRelay);
  std::map<std::string, std::unique_ptr<Process>> running;
  for (const std::string env : {"prod", "test"}) {
    absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
        {.bootstrap_path = Bootstrap(relay, "pod-" + env, {{"env", env}, {"pod", "pod-" + env}}),
         .duration = absl::Seconds(5),
         .interval = absl::Milliseconds(20)});
    ASSERT_THAT(client, IsOk());
    running[env] = *std::move(client);
  }
  for (const auto& [env, client] : running) {
    ASSERT_THAT(WaitForLines(*client, "ok " + env, 25), IsOk());
  }
  ASSERT_THAT(harness_->Kill("facet"), IsOk());
  ASSERT_THAT(WaitForMetric(kRelay, "facet_relay_upstream_streams",
                            [](double value) { return value == 0; }),
              IsOk());
  const double hits = MetricOr(kRelay, "facet_relay_cache_hits_total");
  const double misses = MetricOr(kRelay, "facet_relay_cache_misses_total");
  ExpectBackends({{.bootstrap_path = Bootstrap(relay, "pod-late",
                                               {{"env", "test"}, {"pod", "pod-late"}}),
                   .count = 3}},
                 {"test"});
  // Its listener, route, cluster and endpoints, all from the cache.
  EXPECT_EQ(MetricOr(kRelay, "facet_relay_cache_hits_total"), hits + 4);
  EXPECT_EQ(MetricOr(kRelay, "facet_relay_cache_misses_total"), misses);
  for (const auto& [env, client] : running) ExpectAllOk(*client, env);
}

// Two servers in the list, both `facet serve` on the same manifests: killing
// the first moves the relay to the second; the resync pushes nothing to
// clients (same content, same versions), and an edit on the second's
// manifests reaches a running client.
TEST_F(RelayE2eTest, FailsOverToSecondServerResyncsSilentlyAndFollowsIt) {
  ASSERT_THAT(harness_->StartBackends({"prod", "test", "blue"}), IsOk());
  ASSERT_THAT(ServeManifests("facet-a", {"greeter.yaml.tmpl"}), IsOk());
  ASSERT_THAT(ServeManifests("facet-b", {"greeter.yaml.tmpl"}), IsOk());
  ASSERT_THAT(Relay(kRelay, {.servers = {harness_->XdsAddressOf("facet-a"),
                                         harness_->XdsAddressOf("facet-b")}}),
              IsOk());
  absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
      {.bootstrap_path = Bootstrap(harness_->XdsAddressOf(kRelay), "pod-1",
                                   {{"env", "prod"}, {"pod", "pod-1"}}),
       .duration = absl::Seconds(12),
       .interval = absl::Milliseconds(50)});
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT(WaitForLines(**client, "ok prod", 10), IsOk());
  // Listener, route {env=prod}, cluster and endpoints, the probes gone.
  ASSERT_THAT(WaitForMetric(kRelay, "facet_relay_upstream_subscriptions",
                            [](double value) { return value == 4; }),
              IsOk());
  EXPECT_EQ(MetricOr("facet-b", "facet_xds_streams_total"), 0);
  const double pushes = MetricOr(kRelay, "facet_xds_pushes_total");
  const double updates = MetricOr(kRelay, "facet_relay_upstream_updates_total");

  ASSERT_THAT(harness_->Kill("facet-a"), IsOk());
  const absl::Time killed = absl::Now();
  EXPECT_THAT(WaitForMetric(kRelay, "facet_relay_upstream_failovers_total",
                            [](double value) { return value >= 1; }),
              IsOk());
  ASSERT_THAT(WaitForMetric("facet-b", "facet_xds_streams_open",
                            [](double value) { return value == 1; }),
              IsOk());
  // The four subscriptions sent again, one response per type applied.
  ASSERT_THAT(WaitForMetric(kRelay, "facet_relay_upstream_updates_total",
                            [&](double value) { return value >= updates + 4; }),
              IsOk());
  std::cerr << "relay e2e: resynced from facet-b " << absl::FormatDuration(absl::Now() - killed)
            << " after the kill; reconnects "
            << MetricOr(kRelay, "facet_relay_upstream_reconnects_total") << ", failovers "
            << MetricOr(kRelay, "facet_relay_upstream_failovers_total") << "\n";
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(MetricOr(kRelay, "facet_xds_pushes_total"), pushes)
      << "the resync changed nothing, so nothing may be pushed downstream";
  EXPECT_EQ(MetricOr(kRelay, "facet_relay_upstream_subscriptions"), 4);

  absl::StatusOr<std::string> b_dir = harness_->AddManifestDir("facet-b");
  ASSERT_THAT(b_dir, IsOk());
  ASSERT_THAT(harness_->WriteManifest("greeter-blue.yaml.tmpl", "greeter.yaml", *b_dir), IsOk());
  EXPECT_THAT(WaitForLines(**client, "ok blue", 1, absl::Seconds(5)), IsOk())
      << "the edit on facet-b did not reach the client within 5 s";

  ExpectSwitchedOnce(FinishContinuousRun(**client), "prod", "blue");
}

// relay -> relay -> Facet: the downstream relay talks SotW to the upstream
// relay, which talks delta to Facet.
TEST_F(RelayE2eTest, ClientsThroughTwoChainedRelaysRoute) {
  ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
  ASSERT_THAT(ServeManifests("facet", {"greeter.yaml.tmpl"}), IsOk());
  ASSERT_THAT(Relay("relay-1", {.servers = {harness_->XdsAddressOf("facet")}}), IsOk());
  ASSERT_THAT(Relay("relay-2", {.servers = {harness_->XdsAddressOf("relay-1")}},
                    {"--upstream-protocol", "sotw"}),
              IsOk());
  const std::string relay = harness_->XdsAddressOf("relay-2");
  std::vector<ClientOptions> clients = {
      {.bootstrap_path = Bootstrap(relay, "cpp-prod", {{"env", "prod"}}), .count = 3},
      {.bootstrap_path = Bootstrap(relay, "cpp-test", {{"env", "test"}}), .count = 3},
      {.bootstrap_path = Bootstrap(relay, "cpp-none", {}), .count = 3}};
  std::vector<std::string> expected = {"prod", "test", "test"};
  if (E2eHarness::NodeClientUnavailableReason().empty()) {
    clients.push_back({.kind = ClientKind::kNode,
                       .bootstrap_path = Bootstrap(relay, "node-prod", {{"env", "prod"}}),
                       .count = 3});
    expected.push_back("prod");
  }
  ExpectBackends(clients, expected);
  EXPECT_EQ(MetricOr("relay-1", "facet_xds_streams_total"), 1) << "only relay-2";
  EXPECT_EQ(MetricOr("facet", "facet_xds_streams_total"), 1) << "only relay-1";
}

// A relay whose only upstream cannot be reached does not answer with empty
// state: a client's call waits (no fast "does not exist") and succeeds once
// the upstream starts.
TEST_F(RelayE2eTest, UnreachableUpstreamIsWaitedForNotAnsweredEmpty) {
  ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
  absl::StatusOr<int> port = FreeLoopbackPort();
  ASSERT_THAT(port, IsOk());
  const std::string upstream = absl::StrCat("127.0.0.1:", *port);
  ASSERT_THAT(Relay(kRelay, {.servers = {upstream}}), IsOk());
  absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
      {.bootstrap_path = Bootstrap(harness_->XdsAddressOf(kRelay), "cpp-early", {{"env", "prod"}}),
       .count = 1,
       .rpc_timeout = absl::Seconds(30)});
  ASSERT_THAT(client, IsOk());
  // The client's listener subscription reached the relay and waits.
  ASSERT_THAT(WaitForMetric(kRelay, "facet_relay_cache_misses_total",
                            [](double value) { return value >= 1; }),
              IsOk());
  absl::SleepFor(absl::Seconds(1));
  EXPECT_TRUE((*client)->Running()) << (*client)->Stderr();
  EXPECT_EQ(MetricOr(kRelay, "facet_xds_pushes_total"), 0) << "nothing to answer yet";

  const absl::Time started = absl::Now();
  ASSERT_THAT(ServeManifests("facet", {"greeter.yaml.tmpl"}, {.xds_address = upstream}), IsOk());
  absl::StatusOr<ClientRun> run = E2eHarness::FinishClient(**client, absl::Seconds(30));
  ASSERT_THAT(run, IsOk());
  std::cerr << "relay e2e: answered " << absl::FormatDuration(absl::Now() - started)
            << " after the upstream started\n";
  EXPECT_TRUE(run->exit.Succeeded()) << run->ToString();
  EXPECT_THAT(run->lines, ::testing::ElementsAre("prod")) << run->ToString();
}

}  // namespace
}  // namespace facet::e2e
