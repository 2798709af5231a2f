// End-to-end: `facet serve` on a manifest directory, real gRPC backends, and
// the real xDS clients (gRPC C++ 1.51, grpc-js-xds 1.14) dialling xds:
// targets through it; plus wire-level checks of what the real clients never
// send (resource locators, delta) with the project's ADS test client.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/e2e/client_checks.h"
#include "test/e2e/e2e_harness.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

namespace ads = ::facet::testing;
using ::envoy::config::route::v3::RouteConfiguration;
using ::facet::testing::AdsTestClient;
using ::facet::testing::DecodedResource;
using ::facet::testing::IsOk;

constexpr absl::Duration kAdsTimeout = absl::Seconds(10);

// Returns how many lines of `text` are exactly `line`.
int CountLines(absl::string_view text, absl::string_view line) {
  int count = 0;
  for (const std::string& l : SplitLines(text)) count += l == line ? 1 : 0;
  return count;
}

// Returns the cluster of the first route of the first virtual host.
std::string FirstCluster(const DecodedResource& resource) {
  absl::StatusOr<RouteConfiguration> route = resource.As<RouteConfiguration>();
  if (!route.ok() || route->virtual_hosts_size() == 0 ||
      route->virtual_hosts(0).routes_size() == 0) {
    return "<no route>";
  }
  return route->virtual_hosts(0).routes(0).route().cluster();
}

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<E2eHarness>> harness = E2eHarness::Create();
    ASSERT_THAT(harness, IsOk());
    harness_ = *std::move(harness);
  }

  void TearDown() override {
    if (harness_ == nullptr) return;
    if (facet_started_) {
      EXPECT_THAT(harness_->StopFacet(), IsOk()) << "facet serve must exit 0 on SIGTERM";
    }
    if (HasFailure()) {
      harness_->KeepTempDir();
      std::cerr << "e2e: kept " << harness_->dir() << " (logs/, manifests/, bootstraps)\n"
                << "facet stderr:\n"
                << harness_->FacetLog() << "\n";
    }
  }

  // Starts `backends`, renders each template into the manifest directory
  // under its file name, checks them with `facet validate`, starts Facet.
  absl::Status Serve(const std::vector<std::string>& backends,
                     const std::vector<std::pair<std::string, std::string>>& manifests) {
    if (absl::Status started = harness_->StartBackends(backends); !started.ok()) return started;
    for (const auto& [template_name, file_name] : manifests) {
      if (absl::Status written = harness_->WriteManifest(template_name, file_name); !written.ok()) {
        return written;
      }
    }
    if (absl::StatusOr<std::string> valid = harness_->ValidateManifests(); !valid.ok()) {
      return valid.status();
    }
    if (absl::Status started = harness_->StartFacet(); !started.ok()) return started;
    facet_started_ = true;
    return absl::OkStatus();
  }

  // Writes a bootstrap; fails the test (and returns "") on error.
  std::string Bootstrap(const std::string& node_id, std::map<std::string, std::string> metadata,
                        std::vector<std::string> authorities = {}) {
    absl::StatusOr<std::string> path = harness_->WriteBootstrap(
        {.node_id = node_id, .metadata = std::move(metadata), .authorities = authorities});
    EXPECT_THAT(path, IsOk());
    return path.ok() ? *path : "";
  }

  // Runs the clients together and checks that each made `count` calls that
  // all reached `expected_backends[i]`.
  void ExpectBackends(const std::vector<ClientOptions>& clients,
                      const std::vector<std::string>& expected_backends) {
    e2e::ExpectBackends(*harness_, clients, expected_backends);
  }

  std::unique_ptr<E2eHarness> harness_;
  bool facet_started_ = false;
};

// (a) One Listener and RouteConfiguration name, two variants: gRPC C++
// clients get the variant their bootstrap's node metadata selects.
TEST_F(E2eTest, CppClientsGetRouteVariantSelectedByNodeMetadata) {
  ASSERT_THAT(Serve({"prod", "test"}, {{"greeter.yaml.tmpl", "greeter.yaml"}}), IsOk());
  const std::string prod = Bootstrap("cpp-prod", {{"env", "prod"}});
  const std::string test = Bootstrap("cpp-test", {{"env", "test"}});
  const std::string unset = Bootstrap("cpp-no-env", {{"zone", "zone-a"}});
  ExpectBackends({{.bootstrap_path = prod, .count = 5},
                  {.bootstrap_path = test, .count = 5},
                  {.bootstrap_path = unset, .count = 3}},
                 {"prod", "test", "test"});
}

// (b) A47 federation in gRPC C++: xds://<authority>/greeter subscribes to
// xdstp://<authority>/envoy.config.listener.v3.Listener/greeter.
TEST_F(E2eTest, CppFederationRoutesPerAuthority) {
  ASSERT_THAT(Serve({"a-prod", "a-test", "b"}, {{"federation.yaml.tmpl", "federation.yaml"}}),
              IsOk());
  const std::vector<std::string> authorities = {"a.example", "b.example"};
  const std::string prod = Bootstrap("cpp-fed-prod", {{"env", "prod"}}, authorities);
  const std::string test = Bootstrap("cpp-fed-test", {{"env", "test"}}, authorities);
  ExpectBackends({{.target = "xds://a.example/greeter",
                   .bootstrap_path = prod,
                   .federation = true,
                   .count = 3},
                  {.target = "xds://b.example/greeter",
                   .bootstrap_path = prod,
                   .federation = true,
                   .count = 3},
                  {.target = "xds://a.example/greeter",
                   .bootstrap_path = test,
                   .federation = true,
                   .count = 3}},
                 {"a-prod", "b", "a-test"});
}

// (c) The same with grpc-js-xds, which always reads "authorities".
TEST_F(E2eTest, NodeFederationRoutesPerAuthority) {
  if (std::string reason = E2eHarness::NodeClientUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  ASSERT_THAT(Serve({"a-prod", "a-test", "b"}, {{"federation.yaml.tmpl", "federation.yaml"}}),
              IsOk());
  const std::vector<std::string> authorities = {"a.example", "b.example"};
  const std::string prod = Bootstrap("node-fed-prod", {{"env", "prod"}}, authorities);
  const std::string test = Bootstrap("node-fed-test", {{"env", "test"}}, authorities);
  ExpectBackends({{.kind = ClientKind::kNode,
                   .target = "xds://a.example/greeter",
                   .bootstrap_path = test,
                   .count = 3},
                  {.kind = ClientKind::kNode,
                   .target = "xds://b.example/greeter",
                   .bootstrap_path = test,
                   .count = 3},
                  {.kind = ClientKind::kNode,
                   .target = "xds://a.example/greeter",
                   .bootstrap_path = prod,
                   .count = 3}},
                 {"a-test", "b", "a-prod"});
}

// grpc-js with old-style names: variants by node metadata, as for gRPC C++.
TEST_F(E2eTest, NodeClientsGetRouteVariantSelectedByNodeMetadata) {
  if (std::string reason = E2eHarness::NodeClientUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  ASSERT_THAT(Serve({"prod", "test"}, {{"greeter.yaml.tmpl", "greeter.yaml"}}), IsOk());
  const std::string prod = Bootstrap("node-prod", {{"env", "prod"}});
  const std::string test = Bootstrap("node-test", {{"env", "test"}});
  ExpectBackends({{.kind = ClientKind::kNode, .bootstrap_path = prod, .count = 3},
                  {.kind = ClientKind::kNode, .bootstrap_path = test, .count = 3}},
                 {"prod", "test"});
}

// Conditional elements: one route table whose routes carry "@when"; Facet
// compiles it into variants, and each client's node metadata selects the one
// with the routes its parameters include.
TEST_F(E2eTest, CppClientsRouteByCompiledConditionalElements) {
  ASSERT_THAT(Serve({"prod", "test", "v1"}, {{"greeter-when.yaml.tmpl", "greeter.yaml"}}), IsOk());
  const std::string prod = Bootstrap("cpp-when-prod", {{"env", "prod"}});
  const std::string prod_v1 = Bootstrap("cpp-when-prod-v1", {{"env", "prod"}, {"version", "v1"}});
  const std::string test = Bootstrap("cpp-when-test", {{"env", "test"}});
  const std::string test_v1 = Bootstrap("cpp-when-test-v1", {{"env", "test"}, {"version", "v1"}});
  const std::string unset = Bootstrap("cpp-when-no-keys", {{"zone", "zone-a"}});
  ExpectBackends({{.bootstrap_path = prod, .count = 3},
                  {.bootstrap_path = prod_v1, .count = 3},
                  {.bootstrap_path = test, .count = 3},
                  {.bootstrap_path = test_v1, .count = 3},
                  {.bootstrap_path = unset, .count = 3}},
                 {"prod", "prod", "test", "v1", "test"});
  absl::StatusOr<std::string> validated = harness_->ValidateManifests();
  ASSERT_THAT(validated, IsOk());
  EXPECT_THAT(*validated, ::testing::HasSubstr("e2e/greeter-routes: spec.variants[0].resource: "
                                               "compiles to 4 variants from 2 distinct conditions"));
}

// grpc-js with the same compiled route table.
TEST_F(E2eTest, NodeClientsRouteByCompiledConditionalElements) {
  if (std::string reason = E2eHarness::NodeClientUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << reason;
  }
  ASSERT_THAT(Serve({"prod", "test", "v1"}, {{"greeter-when.yaml.tmpl", "greeter.yaml"}}), IsOk());
  const std::string prod = Bootstrap("node-when-prod", {{"env", "prod"}});
  const std::string test_v1 = Bootstrap("node-when-test-v1", {{"env", "test"}, {"version", "v1"}});
  const std::string test = Bootstrap("node-when-test", {{"env", "test"}});
  ExpectBackends({{.kind = ClientKind::kNode, .bootstrap_path = prod, .count = 3},
                  {.kind = ClientKind::kNode, .bootstrap_path = test_v1, .count = 3},
                  {.kind = ClientKind::kNode, .bootstrap_path = test, .count = 3}},
                 {"prod", "v1", "test"});
}

// (d) Editing a manifest while a client calls continuously: the prod route
// moves to a new cluster (new Cluster and ClusterLoadAssignment in the same
// edit). The client must switch within a few seconds, never fail a call, and
// never go back.
TEST_F(E2eTest, LiveManifestChangeSwitchesRunningClientWithoutFailures) {
  ASSERT_THAT(Serve({"prod", "test", "blue"}, {{"greeter.yaml.tmpl", "greeter.yaml"}}), IsOk());
  const std::string prod = Bootstrap("cpp-live", {{"env", "prod"}});
  absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
      {.bootstrap_path = prod, .duration = absl::Seconds(10), .interval = absl::Milliseconds(20)});
  ASSERT_THAT(client, IsOk());

  // About one second of calls answered by prod (50 calls, 20 ms apart).
  ASSERT_THAT((*client)->WaitForStdout(
                  [](absl::string_view out) { return CountLines(out, "ok prod") >= 50; },
                  absl::Seconds(20)),
              IsOk());
  ASSERT_THAT(harness_->WriteManifest("greeter-blue.yaml.tmpl", "greeter.yaml"), IsOk());
  const absl::Time changed = absl::Now();
  EXPECT_THAT(
      (*client)->WaitForStdout([](absl::string_view out) { return CountLines(out, "ok blue") > 0; },
                               absl::Seconds(5)),
      IsOk())
      << "the client did not switch to backend blue within 5 s of the edit";
  std::cerr << "e2e: switched to blue " << absl::FormatDuration(absl::Now() - changed)
            << " after the edit\n";

  // prod, prod, ..., blue, blue, ... and nothing else.
  ExpectSwitchedOnce(FinishContinuousRun(**client), "prod", "blue");
}

// Sends `request` on `stream`, waits for the next RouteConfiguration
// response (stored in `response`, for the ACK) and returns its only resource.
template <typename Request, typename Response>
absl::StatusOr<DecodedResource> ExchangeForOneRoute(ads::AdsStream<Request, Response>& stream,
                                                    const Request& request, Response* response) {
  if (absl::Status sent = stream.Send(request); !sent.ok()) return sent;
  absl::StatusOr<Response> next = stream.NextOfType(ads::kRouteConfigurationTypeUrl, kAdsTimeout);
  if (!next.ok()) return next.status();
  *response = *std::move(next);
  absl::StatusOr<std::vector<DecodedResource>> resources = ads::DecodeResources(*response);
  if (!resources.ok()) return resources.status();
  if (resources->size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat("expected one RouteConfiguration, got ",
                                                      resources->size(), ": ",
                                                      response->ShortDebugString()));
  }
  return resources->front();
}

class E2eAdsTest : public E2eTest {
 protected:
  // Serves greeter.yaml.tmpl and connects the ADS test client to Facet.
  void SetUp() override {
    E2eTest::SetUp();
    ASSERT_THAT(Serve({"prod", "test"}, {{"greeter.yaml.tmpl", "greeter.yaml"}}), IsOk());
    absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
        AdsTestClient::Connect(harness_->xds_address());
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }

  void TearDown() override {
    client_.reset();
    E2eTest::TearDown();
  }

  std::unique_ptr<AdsTestClient> client_;
};

// What the real clients never send: an A67 resource locator gets the variant
// its dynamic parameters select, wrapped in a Resource whose resource_name
// carries the variant's constraints. Node metadata does not apply.
TEST_F(E2eAdsTest, LocatorGetsWrappedVariantWithConstraints) {
  struct Case {
    std::string env;
    std::string cluster;
  };
  for (const Case& c : {Case{"prod", "greeter-prod"}, Case{"staging", "greeter-test"}}) {
    SCOPED_TRACE(c.env);
    absl::StatusOr<std::unique_ptr<ads::SotwStream>> stream = client_->OpenSotw();
    ASSERT_THAT(stream, IsOk());
    ads::DiscoveryRequest subscription = ads::MakeRequest(
        ads::kRouteConfigurationTypeUrl, {}, {ads::MakeLocator("greeter", {{"env", c.env}})});
    ads::DiscoveryRequest first = subscription;
    // Metadata that would select the other variant, to show it is ignored.
    *first.mutable_node() =
        ads::MakeNode("ads-locator", {{"env", c.env == "prod" ? "test" : "prod"}});
    ads::DiscoveryResponse response;
    absl::StatusOr<DecodedResource> route = ExchangeForOneRoute(**stream, first, &response);
    ASSERT_THAT(route, IsOk());
    EXPECT_TRUE(route->wrapped);
    EXPECT_EQ(route->resource_name, "greeter");
    EXPECT_TRUE(route->has_constraints) << "a variant is always sent with its constraints";
    if (c.env == "prod") {
      EXPECT_EQ(route->constraints.constraint().key(), "env");
      EXPECT_EQ(route->constraints.constraint().value(), "prod");
    } else {
      EXPECT_TRUE(route->constraints.has_not_constraints()) << route->constraints.DebugString();
    }
    EXPECT_EQ(FirstCluster(*route), c.cluster);
    EXPECT_THAT((*stream)->Send(ads::Ack(response, subscription)), IsOk());
  }
}

// Plain resource_names from a client that does not advertise
// xds.config.resource-in-sotw: the variant comes from node metadata and the
// resource is sent unwrapped (grpc-js NACKs wrappers).
TEST_F(E2eAdsTest, PlainNameGetsUnwrappedVariantFromNodeMetadata) {
  absl::StatusOr<std::unique_ptr<ads::SotwStream>> stream = client_->OpenSotw();
  ASSERT_THAT(stream, IsOk());
  ads::DiscoveryRequest subscription =
      ads::MakeRequest(ads::kRouteConfigurationTypeUrl, {"greeter"});
  ads::DiscoveryRequest first = subscription;
  *first.mutable_node() = ads::MakeNode("ads-plain", {{"env", "prod"}});
  ads::DiscoveryResponse response;
  absl::StatusOr<DecodedResource> route = ExchangeForOneRoute(**stream, first, &response);
  ASSERT_THAT(route, IsOk());
  EXPECT_FALSE(route->wrapped);
  EXPECT_EQ(route->name, "greeter");
  EXPECT_EQ(FirstCluster(*route), "greeter-prod");
  EXPECT_THAT((*stream)->Send(ads::Ack(response, subscription)), IsOk());
  // An ACK is not answered.
  EXPECT_THAT((*stream)->NextOfType(ads::kRouteConfigurationTypeUrl, absl::Milliseconds(500)),
              ::facet::testing::StatusIs(absl::StatusCode::kDeadlineExceeded));
}

// Delta ADS: a plain name takes its variant from node metadata, a locator
// from its dynamic parameters (and comes back with resource_name set).
TEST_F(E2eAdsTest, DeltaServesNamesAndLocators) {
  absl::StatusOr<std::unique_ptr<ads::DeltaStream>> by_name = client_->OpenDelta();
  ASSERT_THAT(by_name, IsOk());
  ads::DeltaDiscoveryRequest subscribe =
      ads::MakeDeltaRequest(ads::kRouteConfigurationTypeUrl, {"greeter"});
  *subscribe.mutable_node() = ads::MakeNode("ads-delta-name", {{"env", "prod"}});
  ads::DeltaDiscoveryResponse response;
  absl::StatusOr<DecodedResource> route = ExchangeForOneRoute(**by_name, subscribe, &response);
  ASSERT_THAT(route, IsOk());
  EXPECT_EQ(route->name, "greeter");
  EXPECT_FALSE(route->version.empty());
  EXPECT_EQ(FirstCluster(*route), "greeter-prod");
  EXPECT_THAT((*by_name)->Send(ads::DeltaAck(response)), IsOk());

  absl::StatusOr<std::unique_ptr<ads::DeltaStream>> by_locator = client_->OpenDelta();
  ASSERT_THAT(by_locator, IsOk());
  subscribe = ads::MakeDeltaRequest(ads::kRouteConfigurationTypeUrl, {}, {},
                                    {ads::MakeLocator("greeter", {{"env", "test"}})});
  *subscribe.mutable_node() = ads::MakeNode("ads-delta-locator");
  route = ExchangeForOneRoute(**by_locator, subscribe, &response);
  ASSERT_THAT(route, IsOk());
  EXPECT_EQ(route->resource_name, "greeter");
  EXPECT_TRUE(route->has_constraints);
  EXPECT_EQ(FirstCluster(*route), "greeter-test");
  EXPECT_THAT((*by_locator)->Send(ads::DeltaAck(response)), IsOk());
}

}  // namespace
}  // namespace facet::e2e
