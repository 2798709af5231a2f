// End-to-end: CSDS (envoy.service.status.v3) and the admin port's /clients on
// a running `facet serve`, queried with the project's CSDS client while real
// gRPC C++ clients are connected: versions, a NACK with its detail, and the
// node-id filter.
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/ads_client/csds_test_client.h"
#include "test/e2e/e2e_harness.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::facet::testing::CsdsTestClient;
using ::facet::testing::FindClient;
using ::facet::testing::FindResource;
using ::facet::testing::IsOk;
using ::facet::testing::NodeIdRequest;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kLds[] = "type.googleapis.com/envoy.config.listener.v3.Listener";
constexpr char kRds[] = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
constexpr char kCds[] = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
constexpr char kEds[] = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

class ClientStatusE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<E2eHarness>> harness = E2eHarness::Create();
    ASSERT_THAT(harness, IsOk());
    harness_ = *std::move(harness);
    ASSERT_THAT(harness_->StartBackends({"prod", "test"}), IsOk());
    ASSERT_THAT(harness_->WriteManifest("greeter.yaml.tmpl", "greeter.yaml"), IsOk());
    ASSERT_THAT(harness_->StartFacet(), IsOk());
    csds_ = std::make_unique<CsdsTestClient>(harness_->xds_address());
  }

  void TearDown() override {
    if (harness_ == nullptr) return;
    clients_.clear();  // Kills the clients first: Facet then drains no streams of theirs.
    EXPECT_THAT(harness_->StopFacet(), IsOk());
    if (HasFailure()) {
      harness_->KeepTempDir();
      std::cerr << "e2e: kept " << harness_->dir() << "\nfacet stderr:\n"
                << harness_->FacetLog() << "\n";
    }
  }

  // Starts a gRPC C++ client with node `id` (env=`env`) calling greeter for
  // a minute, and waits for its first successful call.
  void StartClient(const std::string& id, const std::string& env, const std::string& backend) {
    absl::StatusOr<std::string> bootstrap =
        harness_->WriteBootstrap({.node_id = id, .metadata = {{"env", env}}, .authorities = {}});
    ASSERT_THAT(bootstrap, IsOk());
    absl::StatusOr<std::unique_ptr<Process>> client = harness_->StartClient(
        {.bootstrap_path = *bootstrap, .duration = absl::Seconds(60),
         .interval = absl::Milliseconds(100)});
    ASSERT_THAT(client, IsOk());
    const std::string ok = absl::StrCat("ok ", backend);
    ASSERT_THAT((*client)->WaitForStdout(
                    [&](absl::string_view out) { return absl::StrContains(out, ok); },
                    absl::Seconds(30)),
                IsOk());
    clients_.push_back(*std::move(client));
  }

  // Fetches until `done(config of node id)` holds, for up to 20 s (the
  // client ACKs after its own processing); returns the last response.
  testing::ClientStatusResponse FetchUntil(
      const std::string& id, const std::function<bool(const testing::ClientConfig&)>& done) {
    testing::ClientStatusResponse response;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      absl::StatusOr<testing::ClientStatusResponse> fetched = csds_->Fetch(NodeIdRequest(id));
      EXPECT_THAT(fetched, IsOk());
      if (!fetched.ok()) break;
      response = *std::move(fetched);
      const testing::ClientConfig* config = FindClient(response, id);
      if (config != nullptr && done(*config)) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    return response;
  }

  std::unique_ptr<E2eHarness> harness_;
  std::unique_ptr<CsdsTestClient> csds_;
  std::vector<std::unique_ptr<Process>> clients_;
};

bool Acked(const testing::ClientConfig& config, absl::string_view type_url,
           absl::string_view name) {
  const auto* resource = FindResource(config, type_url, name);
  return resource != nullptr && resource->client_status() == envoy::admin::v3::ACKED;
}

TEST_F(ClientStatusE2eTest, ReportsEachConnectedClientsResourcesVersionsAndParameters) {
  StartClient("csds-prod", "prod", "prod");
  StartClient("csds-test", "staging", "test");
  // The listener, the route, and the client's cluster and its endpoints.
  auto all_acked = [](const testing::ClientConfig& config) {
    if (config.generic_xds_configs_size() != 4) return false;
    for (const auto& resource : config.generic_xds_configs()) {
      if (resource.client_status() != envoy::admin::v3::ACKED) return false;
    }
    return Acked(config, kLds, "greeter") && Acked(config, kRds, "greeter");
  };
  FetchUntil("csds-prod", all_acked);
  FetchUntil("csds-test", all_acked);

  // Unfiltered: both clients, each with its own route variant and cluster.
  absl::StatusOr<testing::ClientStatusResponse> all = csds_->Fetch({});
  ASSERT_THAT(all, IsOk());
  const testing::ClientConfig* prod = FindClient(*all, "csds-prod");
  const testing::ClientConfig* test = FindClient(*all, "csds-test");
  ASSERT_NE(prod, nullptr) << all->DebugString();
  ASSERT_NE(test, nullptr) << all->DebugString();
  EXPECT_TRUE(all_acked(*prod)) << prod->DebugString();
  EXPECT_TRUE(all_acked(*test)) << test->DebugString();
  EXPECT_TRUE(Acked(*prod, kCds, "greeter-prod")) << prod->DebugString();
  EXPECT_TRUE(Acked(*test, kCds, "greeter-test")) << test->DebugString();
  EXPECT_TRUE(Acked(*prod, kEds, "greeter-prod")) << prod->DebugString();
  EXPECT_TRUE(Acked(*test, kEds, "greeter-test")) << test->DebugString();
  const auto* prod_route = FindResource(*prod, kRds, "greeter");
  const auto* test_route = FindResource(*test, kRds, "greeter");
  ASSERT_NE(prod_route, nullptr);
  ASSERT_NE(test_route, nullptr);
  EXPECT_FALSE(prod_route->version_info().empty());
  EXPECT_NE(prod_route->version_info(), test_route->version_info());
  EXPECT_EQ(prod->node()
                .metadata()
                .fields()
                .at("facet.dev/parameters")
                .struct_value()
                .fields()
                .at("env")
                .string_value(),
            "prod");

  // The node-id filter, unary and streaming.
  absl::StatusOr<testing::ClientStatusResponse> one = csds_->Fetch(NodeIdRequest("csds-test"));
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(one->config(), SizeIs(1));
  EXPECT_EQ(one->config(0).node().id(), "csds-test");
  absl::StatusOr<testing::ClientStatusResponse> none = csds_->Fetch(NodeIdRequest("nobody"));
  ASSERT_THAT(none, IsOk());
  EXPECT_THAT(none->config(), IsEmpty());
  absl::StatusOr<std::vector<testing::ClientStatusResponse>> streamed =
      csds_->Stream({NodeIdRequest("csds-prod"), NodeIdRequest("csds-test"), {}});
  ASSERT_THAT(streamed, IsOk());
  ASSERT_THAT(*streamed, SizeIs(3));
  EXPECT_NE(FindClient((*streamed)[0], "csds-prod"), nullptr);
  EXPECT_THAT((*streamed)[1].config(), SizeIs(1));
  EXPECT_GE((*streamed)[2].config_size(), 2);
  testing::ClientStatusRequest prefix;
  prefix.add_node_matchers()->mutable_node_id()->set_prefix("csds");
  EXPECT_THAT(csds_->Fetch(prefix).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("node_id.exact")));

  // The admin port: the same as JSON, with ?node=.
  absl::StatusOr<std::string> clients = harness_->AdminGet(E2eHarness::kFacet, "/clients");
  ASSERT_THAT(clients, IsOk());
  EXPECT_THAT(*clients, HasSubstr("\"id\":\"csds-prod\""));
  EXPECT_THAT(*clients, HasSubstr("\"id\":\"csds-test\""));
  EXPECT_THAT(*clients, HasSubstr("\"client_status\":\"ACKED\""));
  // Each resource names the object and the variant that served it.
  EXPECT_THAT(*clients, HasSubstr(R"("name":"greeter","object":"e2e/greeter-routes",)"
                                  R"("status":"ACKED","type":"route","variant":"prod")"));
  EXPECT_THAT(*clients, HasSubstr(R"("name":"greeter","object":"e2e/greeter-routes",)"
                                  R"("status":"ACKED","type":"route","variant":"not-prod")"));
  absl::StatusOr<std::string> filtered =
      harness_->AdminGet(E2eHarness::kFacet, "/clients?node=csds-prod");
  ASSERT_THAT(filtered, IsOk());
  EXPECT_THAT(*filtered, HasSubstr("csds-prod"));
  EXPECT_THAT(*filtered, ::testing::Not(HasSubstr("csds-test")));
  // /explain takes param=K=V as users type it, and escaped as before.
  for (const char* path :
       {"/explain?target=greeter&param=env=prod", "/explain?target=greeter&param=env%3Dprod"}) {
    absl::StatusOr<std::string> explained = harness_->AdminGet(E2eHarness::kFacet, path);
    ASSERT_THAT(explained, IsOk()) << path;
    EXPECT_THAT(*explained, HasSubstr("greeter-prod")) << path;
  }
  // /status keeps its counts.
  absl::StatusOr<std::string> status = harness_->AdminGet(E2eHarness::kFacet, "/status");
  ASSERT_THAT(status, IsOk());
  EXPECT_THAT(*status, HasSubstr("\"streams_open\": 2"));
  // A file that does not parse is listed, where and why; the rest serves on.
  {
    std::ofstream broken(harness_->manifest_dir() + "/broken.yaml.tmp");
    broken << "kind: XdsResource\nspec: [unclosed\n";
  }
  ASSERT_EQ(std::rename((harness_->manifest_dir() + "/broken.yaml.tmp").c_str(),
                        (harness_->manifest_dir() + "/broken.yaml").c_str()),
            0);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    status = harness_->AdminGet(E2eHarness::kFacet, "/status");
    ASSERT_THAT(status, IsOk());
    if (absl::StrContains(*status, "broken.yaml")) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  // {"column", "file", "line", "message"}: keys sorted.
  const size_t unparsed = status->find("\"unparsed_files\": [");
  ASSERT_NE(unparsed, std::string::npos) << *status;
  const size_t column = status->find("\"column\": ", unparsed);
  const size_t file =
      status->find(absl::StrCat("\"file\": \"", harness_->manifest_dir(), "/broken.yaml\""),
                   unparsed);
  const size_t line = status->find("\"line\": ", unparsed);
  const size_t message = status->find("\"message\": \"", unparsed);
  EXPECT_NE(file, std::string::npos) << *status;
  EXPECT_LT(column, file) << *status;
  EXPECT_LT(file, line) << *status;
  EXPECT_LT(line, message) << *status;
  EXPECT_NE(message, std::string::npos) << *status;
}

TEST_F(ClientStatusE2eTest, ReportsARealClientsNackWithItsDetail) {
  StartClient("csds-nack", "prod", "prod");
  FetchUntil("csds-nack", [](const testing::ClientConfig& config) {
    return Acked(config, kCds, "greeter-prod");
  });
  // gRPC clients reject a cluster whose lb_policy they do not support (Facet
  // serves it with a ClientCompatibility warning).
  absl::StatusOr<std::string> manifest = harness_->RenderManifest("greeter.yaml.tmpl");
  ASSERT_THAT(manifest, IsOk());
  const std::string nacked = absl::StrReplaceAll(
      *manifest, {{"      lb_policy: ROUND_ROBIN\n---\napiVersion: facet.dev/v1alpha1\nkind: "
                   "XdsResource\nmetadata:\n  name: greeter-test-cluster",
                   "      lb_policy: LEAST_REQUEST\n---\napiVersion: facet.dev/v1alpha1\nkind: "
                   "XdsResource\nmetadata:\n  name: greeter-test-cluster"}});
  ASSERT_NE(nacked, *manifest) << "greeter.yaml.tmpl changed: update the edit above";
  const std::string path = harness_->manifest_dir() + "/greeter.yaml";
  {
    std::ofstream out(path + ".tmp");
    out << nacked;
  }
  ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0);

  testing::ClientStatusResponse response =
      FetchUntil("csds-nack", [](const testing::ClientConfig& config) {
        const auto* cluster = FindResource(config, kCds, "greeter-prod");
        return cluster != nullptr && cluster->client_status() == envoy::admin::v3::NACKED;
      });
  const testing::ClientConfig* config = FindClient(response, "csds-nack");
  ASSERT_NE(config, nullptr) << response.DebugString();
  const auto* cluster = FindResource(*config, kCds, "greeter-prod");
  ASSERT_NE(cluster, nullptr) << config->DebugString();
  EXPECT_EQ(cluster->client_status(), envoy::admin::v3::NACKED) << config->DebugString();
  EXPECT_FALSE(cluster->error_state().details().empty());
  EXPECT_FALSE(cluster->error_state().version_info().empty());
  // The client keeps the version it last ACKed.
  EXPECT_NE(cluster->version_info(), cluster->error_state().version_info());
  // The other resources stay ACKed.
  EXPECT_TRUE(Acked(*config, kLds, "greeter")) << config->DebugString();
  absl::StatusOr<std::string> clients =
      harness_->AdminGet(E2eHarness::kFacet, "/clients?node=csds-nack");
  ASSERT_THAT(clients, IsOk());
  EXPECT_THAT(*clients, HasSubstr("\"client_status\":\"NACKED\""));
  // The NACKed cluster: its object, the client's text, and since when the
  // client has not taken the latest.
  EXPECT_THAT(*clients, HasSubstr(R"("object":"e2e/greeter-prod-cluster","stale_since":")"));
}

}  // namespace
}  // namespace facet::e2e
