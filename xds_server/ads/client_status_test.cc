#include "xds_server/ads/client_status.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/ads/csds_service.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::status::v3::ClientStatusRequest;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::facet::xds::testing::Certified;
using ::facet::xds::testing::MakeObject;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using State = ResourceStatus::State;

const std::string kEds = ClusterLoadAssignmentType().type_url();
const std::string kCds = ClusterType().type_url();

std::string Endpoints(int port) {
  return "{endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: "
         "127.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}
std::string EdsCluster() { return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"; }

// Endpoints "e" (env=prod: port `prod_port`, otherwise port `other_port`)
// and "f", and EDS clusters "e" (`cluster_e`) and "f" over them.
std::shared_ptr<const ServingSnapshot> Serve(int prod_port = 1, int other_port = 2,
                                             const std::string& cluster_e = EdsCluster()) {
  std::vector<ResourceObject> objects = {
      MakeObject("demo", "e-endpoints", "endpoint", "e",
                 {{"{env: prod}", Endpoints(prod_port)}, {"{env: {not: prod}}", Endpoints(other_port)}}),
      MakeObject("demo", "f-endpoints", "endpoint", "f", {{"", Endpoints(3)}}),
      MakeObject("demo", "e-cluster", "cluster", "e", {{"", cluster_e}}),
      MakeObject("demo", "f-cluster", "cluster", "f", {{"", EdsCluster()}}),
  };
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  BuildResult result = BuildSnapshot(objects, {}, nullptr, options);
  for (const auto& status : result.statuses) EXPECT_TRUE(status.accepted) << status.ref.ToString();
  return std::make_shared<ServingSnapshot>(result.snapshot);
}

envoy::config::core::v3::Node Node() {
  envoy::config::core::v3::Node node;
  node.set_id("client-1");
  (*node.mutable_metadata()->mutable_fields())["env"].set_string_value("prod");
  return node;
}

template <typename Request>
Request WithNode(Request request) {
  *request.mutable_node() = Node();
  return request;
}

DiscoveryRequest Sotw(const std::string& type, std::vector<std::string> names,
                      const std::string& nonce = "", const std::string& error = "") {
  DiscoveryRequest request;
  request.set_type_url(type);
  for (auto& name : names) request.add_resource_names(name);
  request.set_response_nonce(nonce);
  if (!error.empty()) request.mutable_error_detail()->set_message(error);
  return request;
}

class ClientStatusTest : public ::testing::Test {
 protected:
  ClientStatusTest() : state_(Protocol::kSotw, std::make_shared<ParameterMapping>()) {
    state_.SetSnapshot(Serve());
  }

  void Request(const DiscoveryRequest& request) {
    RequestOutcome outcome;
    ASSERT_THAT(state_.OnRequest(request, &outcome), IsOk());
  }

  // Sends every due response; returns the last nonce.
  std::string Drain() {
    std::string nonce;
    DiscoveryResponse response;
    PushRecord record;
    while (state_.NextResponse(&response, &record)) nonce = response.nonce();
    return nonce;
  }

  ClientStatus Describe(size_t budget = 1 << 20) {
    ClientStatus status;
    EXPECT_TRUE(state_.DescribeClient(&status, &budget));
    return status;
  }

  StreamState state_;
};

TEST_F(ClientStatusTest, ReportsRequestedThenAckedAndDoesNotExist) {
  Request(WithNode(Sotw(kEds, {"e", "missing"})));
  ClientStatus before = Describe();
  EXPECT_EQ(before.node.id(), "client-1");
  EXPECT_THAT(before.parameters, ElementsAre(std::make_pair("env", "prod")));
  ASSERT_EQ(before.resources.size(), 2u);
  EXPECT_EQ(before.resources[0].name, "e");
  EXPECT_EQ(before.resources[0].state, State::kRequested);
  EXPECT_EQ(before.resources[0].version, "");
  EXPECT_EQ(before.resources[1].name, "missing");
  EXPECT_EQ(before.resources[1].state, State::kRequested);

  const std::string nonce = Drain();
  ClientStatus sent = Describe();
  ASSERT_EQ(sent.resources.size(), 2u);
  // Sent, not yet ACKed: still requested, with the version in flight.
  EXPECT_EQ(sent.resources[0].state, State::kRequested);
  EXPECT_FALSE(sent.resources[0].version.empty());
  EXPECT_EQ(sent.resources[1].state, State::kDoesNotExist);

  Request(Sotw(kEds, {"e", "missing"}, nonce));
  ClientStatus acked = Describe();
  ASSERT_EQ(acked.resources.size(), 2u);
  EXPECT_EQ(acked.resources[0].state, State::kAcked);
  EXPECT_EQ(acked.resources[0].version, sent.resources[0].version);
  EXPECT_EQ(acked.resources[1].state, State::kDoesNotExist);
}

TEST_F(ClientStatusTest, ReportsANackWithItsDetailUntilTheResourceIsSentAgain) {
  Request(WithNode(Sotw(kEds, {"e", "f"})));
  std::string nonce = Drain();
  Request(Sotw(kEds, {"e", "f"}, nonce, "endpoint e: bad address"));
  ClientStatus nacked = Describe();
  ASSERT_EQ(nacked.resources.size(), 2u);
  for (const ResourceStatus& resource : nacked.resources) {
    EXPECT_EQ(resource.state, State::kNacked) << resource.name;
    EXPECT_EQ(resource.nacked_version, resource.version);
    ASSERT_NE(resource.error_detail, nullptr);
    EXPECT_EQ(*resource.error_detail, "endpoint e: bad address");
  }
  // A new variant of "e" goes out: in flight, then ACKed; "f" stays NACKed.
  state_.SetSnapshot(Serve(/*prod_port=*/5));
  nonce = Drain();
  ASSERT_FALSE(nonce.empty());
  ClientStatus resent = Describe();
  ASSERT_EQ(resent.resources.size(), 2u);
  EXPECT_EQ(resent.resources[0].state, State::kRequested);
  EXPECT_NE(resent.resources[0].version, nacked.resources[0].version);
  EXPECT_EQ(resent.resources[1].state, State::kNacked);
  Request(Sotw(kEds, {"e", "f"}, nonce));
  ClientStatus acked = Describe();
  EXPECT_EQ(acked.resources[0].state, State::kAcked);
  EXPECT_EQ(acked.resources[1].state, State::kNacked);
}

TEST_F(ClientStatusTest, FullStateNackMarksOnlyTheChangedResource) {
  Request(WithNode(Sotw(kCds, {"e", "f"})));
  std::string nonce = Drain();
  Request(Sotw(kCds, {"e", "f"}, nonce));
  const ClientStatus before = Describe();
  // A new "e": the full-state response carries both, but only "e" changed
  // since the last ACK, so only "e" is rejected; the client keeps its old "e".
  state_.SetSnapshot(Serve(1, 2,
                           "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}, "
                           "connect_timeout: 3s}"));
  nonce = Drain();
  Request(Sotw(kCds, {"e", "f"}, nonce, "cluster e: rejected"));
  ClientStatus status = Describe();
  ASSERT_EQ(status.resources.size(), 2u);
  EXPECT_EQ(status.resources[0].name, "e");
  EXPECT_EQ(status.resources[0].state, State::kNacked);
  EXPECT_EQ(status.resources[0].version, before.resources[0].version);
  EXPECT_NE(status.resources[0].nacked_version, before.resources[0].version);
  EXPECT_EQ(status.resources[1].name, "f");
  EXPECT_EQ(status.resources[1].state, State::kAcked);
}

TEST_F(ClientStatusTest, NamesTheObjectAndVariantAndSinceWhenTheClientIsStale) {
  const absl::Time t1 = absl::FromUnixSeconds(1000);
  const absl::Time t2 = absl::FromUnixSeconds(2000);
  const absl::Time t3 = absl::FromUnixSeconds(3000);
  Request(WithNode(Sotw(kEds, {"e", "f", "missing"})));
  ClientStatus before = Describe();
  ASSERT_EQ(before.resources.size(), 3u);
  // Nothing held yet: the object that serves it, no variant, not stale.
  EXPECT_EQ(before.resources[0].object, "demo/e-endpoints");
  EXPECT_EQ(before.resources[0].variant, "");
  EXPECT_EQ(before.resources[0].stale_since, std::nullopt);
  EXPECT_EQ(before.resources[2].object, "");

  state_.set_now(t1);
  std::string nonce = Drain();
  ClientStatus sent = Describe();
  ASSERT_EQ(sent.resources.size(), 3u);
  EXPECT_EQ(sent.resources[0].object, "demo/e-endpoints");
  EXPECT_EQ(sent.resources[0].variant, "v0");
  EXPECT_EQ(sent.resources[0].constraints, "env=prod");
  EXPECT_EQ(sent.resources[0].stale_since, t1);  // In flight since t1.
  EXPECT_EQ(sent.resources[1].object, "demo/f-endpoints");
  EXPECT_EQ(sent.resources[1].constraints, "");  // Unconstrained.
  EXPECT_EQ(sent.resources[2].stale_since, std::nullopt);  // Does not exist.

  Request(Sotw(kEds, {"e", "f", "missing"}, nonce));
  ClientStatus acked = Describe();
  EXPECT_EQ(acked.resources[0].state, State::kAcked);
  EXPECT_EQ(acked.resources[0].stale_since, std::nullopt);

  // A new "e" at t2 is NACKed; resent at t3, the client is stale since t2.
  state_.SetSnapshot(Serve(/*prod_port=*/5));
  state_.set_now(t2);
  nonce = Drain();
  Request(Sotw(kEds, {"e", "f", "missing"}, nonce, "bad e"));
  ClientStatus nacked = Describe();
  EXPECT_EQ(nacked.resources[0].state, State::kNacked);
  EXPECT_EQ(nacked.resources[0].stale_since, t2);
  EXPECT_EQ(nacked.resources[1].state, State::kAcked);
  state_.SetSnapshot(Serve(/*prod_port=*/6));
  state_.set_now(t3);
  nonce = Drain();
  ClientStatus resent = Describe();
  EXPECT_EQ(resent.resources[0].state, State::kRequested);
  EXPECT_EQ(resent.resources[0].stale_since, t2);
  Request(Sotw(kEds, {"e", "f", "missing"}, nonce));
  EXPECT_EQ(Describe().resources[0].stale_since, std::nullopt);
}

TEST_F(ClientStatusTest, KeepsABoundedDetailCutAtACharacterBoundary) {
  Request(WithNode(Sotw(kEds, {"f"})));
  const std::string nonce = Drain();
  std::string detail(StreamState::kMaxStatusDetailBytes - 1, 'x');
  detail += "\xC3\xA9 and more";  // A two-byte character across the bound.
  Request(Sotw(kEds, {"f"}, nonce, detail));
  ClientStatus status = Describe();
  ASSERT_EQ(status.resources.size(), 1u);
  ASSERT_NE(status.resources[0].error_detail, nullptr);
  EXPECT_EQ(*status.resources[0].error_detail,
            std::string(StreamState::kMaxStatusDetailBytes - 1, 'x'));
}

TEST_F(ClientStatusTest, StaysWithinTheByteBudget) {
  Request(WithNode(Sotw(kEds, {"e", "f", "g"})));
  Drain();
  size_t budget = 0;
  ClientStatus none;
  EXPECT_FALSE(state_.DescribeClient(&none, &budget));
  EXPECT_THAT(none.resources, IsEmpty());

  ClientStatus full = Describe();
  ASSERT_EQ(full.resources.size(), 3u);
  // Room for the node and one resource.
  size_t node_and_one = 1 << 20;
  ClientStatus probe;
  ASSERT_TRUE(state_.DescribeClient(&probe, &node_and_one));
  const size_t used = (1 << 20) - node_and_one;
  budget = used - EstimatedBytes(full.resources[1]) - EstimatedBytes(full.resources[2]);
  ClientStatus partial;
  ASSERT_TRUE(state_.DescribeClient(&partial, &budget));
  EXPECT_EQ(partial.resources.size(), 1u);
  EXPECT_EQ(partial.omitted_resources, 2);
}

TEST(DeltaClientStatusTest, ReportsDeltaAcksNacksAndDoesNotExist) {
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>());
  state.SetSnapshot(Serve());
  DeltaDiscoveryRequest subscribe;
  subscribe.set_type_url(kEds);
  subscribe.add_resource_names_subscribe("e");
  subscribe.add_resource_names_subscribe("missing");
  *subscribe.mutable_node() = Node();
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(subscribe, &outcome), IsOk());
  DeltaDiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state.NextResponse(&response, &record));
  size_t budget = 1 << 20;
  ClientStatus status;
  ASSERT_TRUE(state.DescribeClient(&status, &budget));
  EXPECT_TRUE(status.delta);
  ASSERT_EQ(status.resources.size(), 2u);
  EXPECT_EQ(status.resources[0].state, State::kRequested);
  EXPECT_EQ(status.resources[1].state, State::kDoesNotExist);

  DeltaDiscoveryRequest nack;
  nack.set_type_url(kEds);
  nack.set_response_nonce(response.nonce());
  nack.mutable_error_detail()->set_message("no");
  ASSERT_THAT(state.OnRequest(nack, &outcome), IsOk());
  status = ClientStatus();
  ASSERT_TRUE(state.DescribeClient(&status, &budget));
  EXPECT_EQ(status.resources[0].state, State::kNacked);
  EXPECT_EQ(*status.resources[0].error_detail, "no");

  // A changed "e" is sent and ACKed.
  state.SetSnapshot(Serve(/*prod_port=*/5));
  ASSERT_TRUE(state.NextResponse(&response, &record));
  DeltaDiscoveryRequest ack;
  ack.set_type_url(kEds);
  ack.set_response_nonce(response.nonce());
  ASSERT_THAT(state.OnRequest(ack, &outcome), IsOk());
  status = ClientStatus();
  budget = 1 << 20;
  ASSERT_TRUE(state.DescribeClient(&status, &budget));
  EXPECT_EQ(status.resources[0].name, "e");
  EXPECT_EQ(status.resources[0].state, State::kAcked);
}

TEST(QueryFromRequestTest, AcceptsNoMatcherOrOneExactNodeId) {
  ClientStatusRequest request;
  absl::StatusOr<ClientStatusQuery> all = QueryFromRequest(request, 100);
  ASSERT_THAT(all.status(), IsOk());
  EXPECT_FALSE(all->filter_node_id);
  EXPECT_EQ(all->max_bytes, 100u);
  request.add_node_matchers()->mutable_node_id()->set_exact("client-1");
  absl::StatusOr<ClientStatusQuery> one = QueryFromRequest(request, 100);
  ASSERT_THAT(one.status(), IsOk());
  EXPECT_TRUE(one->filter_node_id);
  EXPECT_EQ(one->node_id, "client-1");
}

TEST(QueryFromRequestTest, RefusesOtherMatchersAsUnimplemented) {
  ClientStatusRequest prefix;
  prefix.add_node_matchers()->mutable_node_id()->set_prefix("client");
  EXPECT_THAT(QueryFromRequest(prefix, 100).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("node_matchers[0].node_id")));
  ClientStatusRequest metadata;
  metadata.add_node_matchers()->add_node_metadatas();
  EXPECT_THAT(QueryFromRequest(metadata, 100).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("node_metadatas")));
  ClientStatusRequest two;
  two.add_node_matchers()->mutable_node_id()->set_exact("a");
  two.add_node_matchers()->mutable_node_id()->set_exact("b");
  EXPECT_THAT(QueryFromRequest(two, 100).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("2 matchers")));
}

TEST(ClientStatusQueryTest, ReportsEveryClientUnlessScopedToTheReadersIdentity) {
  const ClientIdentity a = Certified("spiffe://td/ns/demo/sa/a", {"localhost"});
  const ClientIdentity b = Certified("spiffe://td/ns/demo/sa/b", {"localhost"});
  const envoy::config::core::v3::Node node = Node();
  ClientStatusQuery query;  // As /clients on the admin port asks.
  for (const ClientIdentity& client : {a, b, ClientIdentity()}) {
    EXPECT_TRUE(query.Selects(client, &node)) << client.ToString();
    EXPECT_TRUE(query.Selects(client, nullptr)) << client.ToString();
  }

  query.only_readers_identity = true;
  query.reader = a;
  EXPECT_TRUE(query.Selects(a, &node));
  EXPECT_TRUE(query.Selects(a, nullptr));
  EXPECT_FALSE(query.Selects(b, &node));
  EXPECT_FALSE(query.Selects(ClientIdentity(), &node));

  // A caller without a certificate sees the clients without one.
  query.reader = ClientIdentity();
  EXPECT_TRUE(query.Selects(ClientIdentity(), &node));
  EXPECT_FALSE(query.Selects(a, &node));
  EXPECT_FALSE(query.Selects(b, &node));

  // The node id filter applies within the scope.
  query.reader = a;
  query.filter_node_id = true;
  query.node_id = "client-1";
  EXPECT_TRUE(query.Selects(a, &node));
  EXPECT_FALSE(query.Selects(a, nullptr));
  EXPECT_FALSE(query.Selects(b, &node));
  query.node_id = "client-2";
  EXPECT_FALSE(query.Selects(a, &node));
}

TEST(ClientStatusServiceTest, OnlyListedReadersSeeEveryClient) {
  SnapshotStore store;
  AdsService::Options options;
  options.csds_readers = {{AllowedClient::Kind::kSpiffeId, "spiffe://td/ns/ops/*"},
                          {AllowedClient::Kind::kDnsName, "csds.ops.example"}};
  AdsService ads(store, options);
  ClientStatusService listed(ads, options.csds_readers);
  EXPECT_TRUE(listed.SeesEveryClient(Certified("spiffe://td/ns/ops/sa/csds", {"localhost"})));
  EXPECT_TRUE(listed.SeesEveryClient(Certified("", {"localhost", "CSDS.ops.example"})));
  EXPECT_FALSE(listed.SeesEveryClient(Certified("spiffe://td/ns/demo/sa/a", {"localhost"})));
  EXPECT_FALSE(listed.SeesEveryClient(Certified("", {})));
  EXPECT_FALSE(listed.SeesEveryClient(ClientIdentity()));
  ClientStatusService unlisted(ads);
  EXPECT_FALSE(unlisted.SeesEveryClient(Certified("spiffe://td/ns/ops/sa/csds", {"localhost"})));
}

TEST(ToClientConfigTest, CarriesParametersAndNackState) {
  ClientStatus client;
  client.node = Node();
  client.parameters = {{"env", "prod"}};
  ResourceStatus acked{kEds, "e", "v1", State::kAcked, "", nullptr};
  ResourceStatus nacked{kEds, "f", "v2", State::kNacked, "v3",
                        std::make_shared<const std::string>("bad")};
  ResourceStatus missing{kEds, "g", "", State::kDoesNotExist, "", nullptr};
  client.resources = {acked, nacked, missing};
  auto config = ToClientConfig(client);
  EXPECT_EQ(config.node().id(), "client-1");
  EXPECT_EQ(config.node()
                .metadata()
                .fields()
                .at(kDerivedParametersKey)
                .struct_value()
                .fields()
                .at("env")
                .string_value(),
            "prod");
  ASSERT_EQ(config.generic_xds_configs_size(), 3);
  EXPECT_EQ(config.generic_xds_configs(0).client_status(), envoy::admin::v3::ACKED);
  EXPECT_EQ(config.generic_xds_configs(0).config_status(), envoy::service::status::v3::SYNCED);
  EXPECT_EQ(config.generic_xds_configs(1).client_status(), envoy::admin::v3::NACKED);
  EXPECT_EQ(config.generic_xds_configs(1).error_state().details(), "bad");
  EXPECT_EQ(config.generic_xds_configs(1).error_state().version_info(), "v3");
  EXPECT_EQ(config.generic_xds_configs(2).client_status(), envoy::admin::v3::DOES_NOT_EXIST);

  ClientStatusReport report;
  report.clients.push_back(client);
  report.omitted_clients = 2;
  const std::string json = ReportToJson(report);
  EXPECT_THAT(json, HasSubstr("\"omitted_clients\":2"));
  EXPECT_THAT(json, HasSubstr("\"client_status\":\"NACKED\""));
  EXPECT_THAT(json, HasSubstr("\"facet.dev/parameters\""));
}

TEST(ClientStatusJsonTest, ListsEachResourceWithItsObjectVariantAndState) {
  ClientStatus client;
  client.stream_id = 7;
  client.peer = "ipv4:127.0.0.1:5000";
  client.node = Node();
  client.parameters = {{"env", "prod"}};
  ResourceStatus acked{kEds, "e", "v1", State::kAcked, "", nullptr};
  acked.object = "demo/e-endpoints";
  acked.variant = "prod";
  acked.constraints = "env=prod";
  ResourceStatus nacked{kCds, "f", "v2", State::kNacked, "v3",
                        std::make_shared<const std::string>("bad \"f\"")};
  nacked.object = "demo/f-cluster";
  nacked.variant = "variants[0]";
  nacked.stale_since = absl::FromUnixMillis(1'700'000'000'123);
  client.resources = {acked, nacked};
  const std::string json = ClientToJson(client);
  EXPECT_THAT(json, HasSubstr(R"({"constraints":"env=prod","name":"e","object":"demo/e-endpoints",)"
                              R"("status":"ACKED","type":"endpoint","variant":"prod","version":"v1"})"));
  EXPECT_THAT(json, HasSubstr(R"({"constraints":"","error_detail":"bad \"f\"",)"
                              R"("nacked_version":"v3","name":"f","object":"demo/f-cluster",)"
                              R"("stale_since":"2023-11-14T22:13:20.123Z","status":"NACKED",)"
                              R"("type":"cluster","variant":"variants[0]","version":"v2"})"));
  EXPECT_THAT(json, HasSubstr(R"("node_id":"client-1")"));
  EXPECT_THAT(json, HasSubstr(R"("parameters":{"env":"prod"})"));
  // Keys are sorted at every level, the node's metadata included, and the
  // same report prints the same bytes.
  EXPECT_LT(json.find("\"client_config\""), json.find("\"node_id\""));
  EXPECT_LT(json.find("\"resources\""), json.find("\"stream_id\""));
  EXPECT_LT(json.find("\"env\":\"prod\""), json.find("\"facet.dev/parameters\""));
  EXPECT_EQ(ClientToJson(client), json);
  ClientStatusReport report;
  report.clients = {client, client};
  EXPECT_EQ(ReportToJson(report), absl::StrCat("{\"clients\":[\n", json, ",\n", json,
                                               "\n],\"omitted_clients\":0,\"omitted_resources\":0}"));
}

TEST(ClientStatusJsonTest, NamesThePeersVerifiedIdentityOnlyWhenItPresentedACertificate) {
  ClientStatus client;
  client.node = Node();
  EXPECT_THAT(ClientToJson(client), Not(HasSubstr("\"identity\"")));
  client.identity.has_certificate = true;
  client.identity.spiffe_id = "spiffe://example.org/ns/demo/sa/web";
  client.identity.dns_names = {"web.demo.svc", "web.example"};
  EXPECT_THAT(ClientToJson(client),
              HasSubstr(R"("identity":{"dns_names":["web.demo.svc","web.example"],)"
                        R"("spiffe_id":"spiffe://example.org/ns/demo/sa/web"},)"));
  // A certificate without a SPIFFE ID or DNS SAN is still one.
  client.identity = ClientIdentity();
  client.identity.has_certificate = true;
  EXPECT_THAT(ClientToJson(client), HasSubstr(R"("identity":{"dns_names":[],"spiffe_id":""},)"));
}

TEST(ClientStatusJsonTest, IsCutToItsByteBoundSayingSo) {
  ClientStatusReport report;
  for (int i = 0; i < 200; ++i) {
    ClientStatus client;
    client.stream_id = static_cast<uint64_t>(i);
    client.node.set_id(absl::StrCat("client-", i));
    for (int r = 0; r < 20; ++r) {
      client.resources.push_back(
          ResourceStatus{kEds, absl::StrCat("resource-", r), "v1", State::kAcked, "", nullptr});
    }
    report.clients.push_back(std::move(client));
  }
  const size_t whole = ReportToJson(report).size();
  const size_t bound = whole / 3;
  const std::string cut = ReportToJson(report, bound);
  EXPECT_LE(cut.size(), bound);
  EXPECT_GT(cut.size(), bound * 9 / 10);
  EXPECT_THAT(cut, HasSubstr("\"truncated\":true"));
  EXPECT_THAT(cut, Not(HasSubstr("\"client-199\"")));
  EXPECT_THAT(cut, HasSubstr("\"client-0\""));
  // The page says where the next one starts: after the last client kept.
  const size_t last = cut.rfind("\"stream_id\":");
  const size_t next = cut.find("\"next_after\":");
  ASSERT_NE(next, std::string::npos);
  EXPECT_EQ(cut.substr(last + 12, cut.find('}', last) - last - 12),
            cut.substr(next + 13, cut.find(',', next) - next - 13));
  // A first client too large alone keeps the resources that fit.
  const std::string one = ReportToJson(report, 2000);
  EXPECT_LE(one.size(), 2000u);
  EXPECT_THAT(one, HasSubstr("\"client-0\""));
  EXPECT_THAT(one, HasSubstr("\"next_after\":0"));
  EXPECT_THAT(one, HasSubstr("\"truncated\":true"));
  EXPECT_THAT(one, Not(HasSubstr("\"omitted_resources\":0,\"parameters\"")));
  // Within its bound, a report is whole.
  const std::string kept = ReportToJson(report, whole);
  EXPECT_EQ(kept.size(), whole);
  EXPECT_THAT(kept, Not(HasSubstr("truncated")));
  EXPECT_THAT(kept, Not(HasSubstr("next_after")));
}

}  // namespace
}  // namespace facet::xds
