#include "xds_server/ads/stream_state.h"

#include <malloc.h>
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FACET_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FACET_SANITIZER_ALLOCATOR 1
#endif
#endif
#ifdef FACET_SANITIZER_ALLOCATOR
#include <sanitizer/allocator_interface.h>
#endif

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/names/names.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const std::string kLds = ListenerType().type_url();
const std::string kRds = RouteConfigurationType().type_url();
const std::string kCds = ClusterType().type_url();
const std::string kEds = ClusterLoadAssignmentType().type_url();

struct V {
  std::string match;
  std::string resource;
  std::string label;
};

ResourceObject Object(const std::string& name, const std::string& type, const std::vector<V>& variants) {
  ResourceObject object;
  object.ref = {kXdsResourceKind, "demo", name};
  ResourceSpec spec;
  spec.type = type;
  spec.name = name;
  for (const V& v : variants) {
    VariantSpec variant;
    variant.label = v.label;
    if (!v.match.empty()) variant.constraints = *CompileMatch(YAML::Load(v.match), "m");
    variant.resource = YAML::Load(v.resource);
    spec.variants.push_back(std::move(variant));
  }
  object.spec = std::move(spec);
  return object;
}

std::string Listener(const std::string& route) {
  return R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: )" +
         route + R"(, config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})";
}
std::string Route(const std::string& cluster) {
  return R"({virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: ""}, route: {cluster: )" +
         cluster + "}}]}]}";
}
std::string Cluster() { return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"; }
std::string Endpoints(int port) {
  return "{endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: {address: "
         "{socket_address: {address: 127.0.0.1, port_value: " + std::to_string(port) + "}}}}]}]}";
}

// greeter listener -> route (prod/other variants) -> clusters c-prod, c-test -> endpoints.
std::vector<ResourceObject> Base(int prod_port = 1) {
  return {
      Object("greeter", "listener", {{"", Listener("r"), "all"}}),
      Object("r", "route", {{"{env: prod}", Route("c-prod"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}}),
      Object("c-prod", "cluster", {{"", Cluster(), "all"}}),
      Object("c-test", "cluster", {{"", Cluster(), "all"}}),
      Object("e-prod", "endpoint", {{"", Endpoints(prod_port), "all"}}),
      Object("e-test", "endpoint", {{"", Endpoints(2), "all"}}),
  };
}

std::shared_ptr<const ServingSnapshot> Serve(std::vector<ResourceObject> objects) {
  // Endpoint objects are named e-*, but serve the cluster names c-*.
  for (auto& object : objects) {
    if (object.spec->type == "endpoint") object.spec->name = "c-" + object.spec->name.substr(2);
  }
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  BuildResult result = BuildSnapshot(objects, {}, nullptr, options);
  for (const auto& status : result.statuses) {
    EXPECT_TRUE(status.accepted) << status.ref.ToString()
                                 << (status.findings.empty() ? "" : status.findings[0].message);
  }
  return std::make_shared<ServingSnapshot>(result.snapshot);
}

envoy::config::core::v3::Node NodeWith(const std::string& env, bool resource_in_sotw = false) {
  envoy::config::core::v3::Node node;
  node.set_id("client");
  if (!env.empty()) (*node.mutable_metadata()->mutable_fields())["env"].set_string_value(env);
  if (resource_in_sotw) node.add_client_features(kResourceInSotwFeature);
  return node;
}

DiscoveryRequest Sotw(const std::string& type, std::vector<std::string> names,
                      const std::string& nonce = "") {
  DiscoveryRequest request;
  request.set_type_url(type);
  for (auto& n : names) request.add_resource_names(n);
  request.set_response_nonce(nonce);
  return request;
}

void AddLocator(DiscoveryRequest* request, const std::string& name, const ParameterSet& params) {
  auto* locator = request->add_resource_locators();
  locator->set_name(name);
  for (const auto& [k, v] : params) (*locator->mutable_dynamic_parameters())[k] = v;
}

// Decoded view of one resource in a response.
struct Item {
  std::string name;
  std::string constraints;  // ToString of the constraints, "" when not sent.
  bool wrapped = false;
  std::string route_cluster;  // For RouteConfigurations: the first route's cluster.
  std::string label_hint;
};

std::vector<Item> Decode(const DiscoveryResponse& response) {
  std::vector<Item> items;
  for (const auto& any : response.resources()) {
    Item item;
    google::protobuf::Any inner = any;
    if (any.type_url() == "type.googleapis.com/envoy.service.discovery.v3.Resource") {
      Resource wrapper;
      wrapper.ParseFromString(any.value());
      item.wrapped = true;
      item.name = wrapper.has_resource_name() ? wrapper.resource_name().name() : wrapper.name();
      if (wrapper.has_resource_name()) {
        auto c = Constraint::Compile(wrapper.resource_name().dynamic_parameter_constraints());
        item.constraints = c.ok() ? c->ToString() : "?";
      }
      inner = wrapper.resource();
    }
    if (inner.type_url() == kRds) {
      envoy::config::route::v3::RouteConfiguration route;
      inner.UnpackTo(&route);
      if (item.name.empty()) item.name = route.name();
      item.route_cluster = route.virtual_hosts(0).routes(0).route().cluster();
    } else if (inner.type_url() == kCds) {
      envoy::config::cluster::v3::Cluster cluster;
      inner.UnpackTo(&cluster);
      if (item.name.empty()) item.name = cluster.name();
    } else if (inner.type_url() == kEds) {
      envoy::config::endpoint::v3::ClusterLoadAssignment cla;
      inner.UnpackTo(&cla);
      if (item.name.empty()) item.name = cla.cluster_name();
    } else if (inner.type_url() == kLds) {
      envoy::config::listener::v3::Listener listener;
      inner.UnpackTo(&listener);
      if (item.name.empty()) item.name = listener.name();
    }
    items.push_back(item);
  }
  return items;
}

std::vector<std::string> Names(const DiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const Item& item : Decode(response)) names.push_back(item.name);
  return names;
}

class SotwTest : public ::testing::Test {
 protected:
  SotwTest() : state_(Protocol::kSotw, std::make_shared<ParameterMapping>()) {
    state_.SetSnapshot(Serve(Base()));
  }

  // Sends a request (with the node on the first) and returns the outcome.
  RequestOutcome Request(DiscoveryRequest request) {
    if (first_) *request.mutable_node() = node_;
    first_ = false;
    RequestOutcome outcome;
    EXPECT_THAT(state_.OnRequest(request, &outcome), IsOk());
    return outcome;
  }
  // Returns every response due now.
  std::vector<DiscoveryResponse> Drain() {
    std::vector<DiscoveryResponse> out;
    DiscoveryResponse response;
    PushRecord record;
    while (state_.NextResponse(&response, &record)) out.push_back(response);
    return out;
  }

  envoy::config::core::v3::Node node_ = NodeWith("prod");
  bool first_ = true;
  StreamState state_;
};

TEST_F(SotwTest, SelectsVariantFromNodeMetadataAndSendsPlainResources) {
  Request(Sotw(kRds, {"r"}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  auto items = Decode(responses[0]);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_FALSE(items[0].wrapped);
  EXPECT_EQ(items[0].route_cluster, "c-prod");
  EXPECT_EQ(responses[0].type_url(), kRds);
  EXPECT_FALSE(responses[0].nonce().empty());
  EXPECT_FALSE(responses[0].version_info().empty());
}

TEST_F(SotwTest, OtherParametersSelectTheOtherVariant) {
  node_ = NodeWith("test");
  Request(Sotw(kRds, {"r"}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(Decode(responses[0])[0].route_cluster, "c-test");
}

TEST_F(SotwTest, WrapsWithNameForClientsThatReadResourceWrappers) {
  node_ = NodeWith("prod", /*resource_in_sotw=*/true);
  Request(Sotw(kRds, {"r"}));
  auto items = Decode(Drain().at(0));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_TRUE(items[0].wrapped);
  EXPECT_EQ(items[0].name, "r");
  EXPECT_EQ(items[0].constraints, "");  // Plain subscription: no resource_name.
}

TEST_F(SotwTest, LocatorSubscriptionsGetEachVariantWithItsConstraints) {
  DiscoveryRequest request = Sotw(kRds, {});
  AddLocator(&request, "r", {{"env", "prod"}});
  AddLocator(&request, "r", {{"env", "qa"}});
  Request(request);
  auto items = Decode(Drain().at(0));
  ASSERT_EQ(items.size(), 2u);
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& item : items) {
    EXPECT_TRUE(item.wrapped);
    EXPECT_EQ(item.name, "r");
    got.emplace_back(item.constraints, item.route_cluster);
  }
  EXPECT_THAT(got, UnorderedElementsAre(std::make_pair("env=prod", "c-prod"),
                                        std::make_pair("NOT env=prod", "c-test")));
}

TEST_F(SotwTest, TwoLocatorsSelectingOneVariantGetItOnce) {
  DiscoveryRequest request = Sotw(kRds, {});
  AddLocator(&request, "r", {{"env", "qa"}});
  AddLocator(&request, "r", {{"env", "dev"}});
  Request(request);
  EXPECT_EQ(Decode(Drain().at(0)).size(), 1u);
}

TEST_F(SotwTest, WildcardListenerAndClusterRequestsGetEverything) {
  Request(Sotw(kCds, {}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_THAT(Names(responses[0]), UnorderedElementsAre("c-prod", "c-test"));
  Request(Sotw(kLds, {}));
  EXPECT_THAT(Names(Drain().at(0)), ElementsAre("greeter"));
}

TEST_F(SotwTest, LegacyWildcardSurvivesEmptyAcks) {
  Request(Sotw(kCds, {}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(Request(Sotw(kCds, {}, first[0].nonce())).kind, RequestOutcome::Kind::kAck);
  EXPECT_THAT(Drain(), IsEmpty());  // Still wildcard: nothing changed, nothing sent.
  auto objects = Base();
  objects.push_back(Object("c-extra", "cluster", {{"", Cluster(), "all"}}));
  objects.push_back(Object("e-extra", "endpoint", {{"", Endpoints(4), "all"}}));
  state_.SetSnapshot(Serve(objects));
  auto pushed = Drain();
  ASSERT_EQ(pushed.size(), 1u);
  EXPECT_THAT(Names(pushed[0]), UnorderedElementsAre("c-prod", "c-test", "c-extra"));
}

TEST_F(SotwTest, EmptyNamesAfterSubscriptionsMeansUnsubscribeNotWildcard) {
  Request(Sotw(kCds, {"c-prod"}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  Request(Sotw(kCds, {}, first[0].nonce()));
  auto second = Drain();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_THAT(Names(second[0]), IsEmpty());
}

TEST_F(SotwTest, AnswersUnknownNamesPromptly) {
  Request(Sotw(kRds, {"missing"}));
  auto rds = Drain();
  ASSERT_EQ(rds.size(), 1u);
  EXPECT_THAT(Names(rds[0]), IsEmpty());
  Request(Sotw(kLds, {"missing-listener"}));
  auto lds = Drain();
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_THAT(Names(lds[0]), IsEmpty());  // Complete LDS state without it: does not exist.
}

TEST_F(SotwTest, AnswersUnknownTypesWithAnEmptyResponse) {
  Request(Sotw("type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", {"s"}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].resources_size(), 0);
}

TEST_F(SotwTest, AcksAreRecognisedAndSendNothing) {
  Request(Sotw(kRds, {"r"}));
  auto first = Drain();
  RequestOutcome outcome = Request(Sotw(kRds, {"r"}, first[0].nonce()));
  EXPECT_EQ(outcome.kind, RequestOutcome::Kind::kAck);
  EXPECT_THAT(Drain(), IsEmpty());
}

TEST_F(SotwTest, NackIsRecordedAndNotResentUntilTheSnapshotChanges) {
  Request(Sotw(kRds, {"r"}));
  auto first = Drain();
  DiscoveryRequest nack = Sotw(kRds, {"r"}, first[0].nonce());
  nack.mutable_error_detail()->set_message("route rejected");
  RequestOutcome outcome = Request(nack);
  EXPECT_EQ(outcome.kind, RequestOutcome::Kind::kNack);
  EXPECT_EQ(outcome.error_detail, "route rejected");
  ASSERT_EQ(outcome.nacked.size(), 1u);
  EXPECT_EQ(outcome.nacked[0].name, "r");
  EXPECT_EQ(outcome.nacked[0].label, "prod");
  EXPECT_THAT(Drain(), IsEmpty());
  // The same snapshot again: still nothing.
  state_.SetSnapshot(Serve(Base()));
  EXPECT_THAT(Drain(), IsEmpty());
  // A changed route: sent.
  auto objects = Base();
  objects[1] = Object("r", "route", {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.SetSnapshot(Serve(objects));
  EXPECT_EQ(Drain().size(), 1u);
}

TEST_F(SotwTest, StaleNonceIsNotAnAck) {
  Request(Sotw(kRds, {"r"}));
  Drain();
  EXPECT_EQ(Request(Sotw(kRds, {"r"}, "999")).kind, RequestOutcome::Kind::kStale);
}

TEST_F(SotwTest, UnsubscribeThenResubscribeSendsAgain) {
  Request(Sotw(kEds, {"c-prod", "c-test"}));
  auto first = Drain();
  EXPECT_THAT(Names(first[0]), UnorderedElementsAre("c-prod", "c-test"));
  Request(Sotw(kEds, {"c-prod"}, first[0].nonce()));
  auto second = Drain();
  Request(Sotw(kEds, {"c-prod", "c-test"}, second.empty() ? first[0].nonce() : second.back().nonce()));
  auto third = Drain();
  ASSERT_EQ(third.size(), 1u);
  EXPECT_THAT(Names(third[0]), ElementsAre("c-test"));
}

TEST_F(SotwTest, PushesOnlyWhenTheSelectedVariantChanges) {
  node_ = NodeWith("test");
  Request(Sotw(kRds, {"r"}));
  Drain();
  // Only the prod variant changes: this env=test client hears nothing.
  auto objects = Base();
  objects[1] = Object("r", "route", {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.SetSnapshot(Serve(objects));
  EXPECT_THAT(Drain(), IsEmpty());
  // Its own variant changes: pushed.
  objects[1] = Object("r", "route", {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-prod"), "other"}});
  state_.SetSnapshot(Serve(objects));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(Decode(responses[0])[0].route_cluster, "c-prod");
}

TEST_F(SotwTest, PushesReferencedResourcesBeforeReferrersAndRemovalsAfter) {
  Request(Sotw(kLds, {}));
  Request(Sotw(kRds, {"r"}));
  Request(Sotw(kCds, {}));
  Request(Sotw(kEds, {"c-prod", "c-test", "c-new"}));
  Drain();
  // Route prod -> new cluster c-new (with endpoints); c-prod removed.
  auto objects = Base();
  objects[1] = Object("r", "route", {{"{env: prod}", Route("c-new"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  objects[2] = Object("c-new", "cluster", {{"", Cluster(), "all"}});
  objects[4] = Object("e-new", "endpoint", {{"", Endpoints(3), "all"}});
  state_.SetSnapshot(Serve(objects));
  auto responses = Drain();
  std::vector<std::string> order;
  for (const auto& r : responses) order.push_back(r.type_url() + " " + std::to_string(r.resources_size()));
  ASSERT_EQ(responses.size(), 4u) << ::testing::PrintToString(order);
  EXPECT_EQ(responses[0].type_url(), kEds);  // c-new endpoints first.
  EXPECT_EQ(responses[1].type_url(), kCds);  // c-new added, c-prod still present.
  EXPECT_THAT(Names(responses[1]), UnorderedElementsAre("c-new", "c-prod", "c-test"));
  EXPECT_EQ(responses[2].type_url(), kRds);  // Route now points at c-new.
  EXPECT_EQ(Decode(responses[2])[0].route_cluster, "c-new");
  EXPECT_EQ(responses[3].type_url(), kCds);  // Only then c-prod goes.
  EXPECT_THAT(Names(responses[3]), UnorderedElementsAre("c-new", "c-test"));
}

TEST_F(SotwTest, ReconnectingClientHoldingTheCurrentStateIsNotResentIt) {
  Request(Sotw(kCds, {}));
  Request(Sotw(kRds, {"r"}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 2u);
  // The same client reconnects to another replica with the same state: its
  // first requests carry the versions it holds, so nothing is resent.
  StreamState other(Protocol::kSotw, std::make_shared<ParameterMapping>());
  other.SetSnapshot(Serve(Base()));
  for (const auto& response : first) {
    DiscoveryRequest request = Sotw(
        response.type_url(),
        response.type_url() == kRds ? std::vector<std::string>{"r"} : std::vector<std::string>{});
    request.set_version_info(response.version_info());
    *request.mutable_node() = node_;
    RequestOutcome outcome;
    ASSERT_THAT(other.OnRequest(request, &outcome), IsOk());
  }
  DiscoveryResponse response;
  PushRecord record;
  EXPECT_FALSE(other.NextResponse(&response, &record));
  // It holds the state: a later change to it is pushed as usual.
  auto objects = Base();
  objects.push_back(Object("c-extra", "cluster", {{"", Cluster(), "all"}}));
  objects.push_back(Object("e-extra", "endpoint", {{"", Endpoints(4), "all"}}));
  other.SetSnapshot(Serve(objects));
  ASSERT_TRUE(other.NextResponse(&response, &record));
  EXPECT_THAT(Names(response), UnorderedElementsAre("c-prod", "c-test", "c-extra"));
}

TEST_F(SotwTest, ReconnectingClientWithAnOlderStateGetsTheCurrentOne) {
  Request(Sotw(kRds, {"r"}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  StreamState other(Protocol::kSotw, std::make_shared<ParameterMapping>());
  auto objects = Base();
  objects[1] = Object("r", "route", {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  other.SetSnapshot(Serve(objects));
  DiscoveryRequest request = Sotw(kRds, {"r"});
  request.set_version_info(first[0].version_info());
  *request.mutable_node() = node_;
  RequestOutcome outcome;
  ASSERT_THAT(other.OnRequest(request, &outcome), IsOk());
  DiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(other.NextResponse(&response, &record));
  EXPECT_EQ(Decode(response)[0].route_cluster, "c-test");
}

TEST(StreamStateTest, RejectsRequestsWithoutTypeOrWithTooManyNames) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  RequestOutcome outcome;
  EXPECT_THAT(state.OnRequest(DiscoveryRequest(), &outcome),
              StatusIs(absl::StatusCode::kInvalidArgument));
  DiscoveryRequest big = Sotw(kRds, {});
  for (int i = 0; i <= StreamState::kMaxNamesPerRequest; ++i) big.add_resource_names("n");
  EXPECT_THAT(state.OnRequest(big, &outcome), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(StreamStateTest, MalformedNamesAreAnsweredAsNonexistent) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  state.SetSnapshot(Serve(Base()));
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(Sotw(kRds, {"xdstp://a/b/%zz"}), &outcome), IsOk());
  DiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state.NextResponse(&response, &record));
  EXPECT_EQ(response.resources_size(), 0);
}

// ---- Delta ----------------------------------------------------------------

class DeltaTest : public ::testing::Test {
 protected:
  DeltaTest() : state_(Protocol::kDelta, std::make_shared<ParameterMapping>()) {
    state_.SetSnapshot(Serve(Base()));
  }
  void Request(DeltaDiscoveryRequest request) {
    if (first_) *request.mutable_node() = NodeWith("prod");
    first_ = false;
    RequestOutcome outcome;
    ASSERT_THAT(state_.OnRequest(request, &outcome), IsOk());
  }
  std::vector<DeltaDiscoveryResponse> Drain() {
    std::vector<DeltaDiscoveryResponse> out;
    DeltaDiscoveryResponse response;
    PushRecord record;
    while (state_.NextResponse(&response, &record)) out.push_back(response);
    return out;
  }
  static DeltaDiscoveryRequest Locators(const std::string& type, const std::string& name,
                                        std::vector<ParameterSet> subscribe,
                                        std::vector<ParameterSet> unsubscribe = {}) {
    DeltaDiscoveryRequest request;
    request.set_type_url(type);
    for (const auto& params : subscribe) {
      auto* l = request.add_resource_locators_subscribe();
      l->set_name(name);
      for (const auto& [k, v] : params) (*l->mutable_dynamic_parameters())[k] = v;
    }
    for (const auto& params : unsubscribe) {
      auto* l = request.add_resource_locators_unsubscribe();
      l->set_name(name);
      for (const auto& [k, v] : params) (*l->mutable_dynamic_parameters())[k] = v;
    }
    return request;
  }
  static std::string ConstraintsOf(const envoy::service::discovery::v3::ResourceName& name) {
    return Constraint::Compile(name.dynamic_parameter_constraints())->ToString();
  }

  bool first_ = true;
  StreamState state_;
};

TEST_F(DeltaTest, LocatorSubscriptionReturnsTheVariantWithItsConstraints) {
  Request(Locators(kRds, "r", {{{"env", "prod"}}}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].resources_size(), 1);
  const Resource& resource = responses[0].resources(0);
  EXPECT_EQ(resource.resource_name().name(), "r");
  EXPECT_EQ(ConstraintsOf(resource.resource_name()), "env=prod");
  EXPECT_FALSE(resource.version().empty());
  EXPECT_EQ(resource.name(), "");  // Only one of name and resource_name.
}

TEST_F(DeltaTest, VariantSwapArrivesInOneResponse) {
  Request(Locators(kRds, "r", {{{"env", "prod"}, {"version", "v1"}}}));
  Drain();
  // TP2 transition: env=prod is replaced by env=prod & version=v1 / v2.
  auto objects = Base();
  objects[1] = Object("r", "route",
                      {{"{env: prod, version: v1}", Route("c-prod"), "prod-v1"},
                       {"{env: prod, version: {not: v1}}", Route("c-prod"), "prod-other"},
                       {"{env: {not: prod}, version: {or: [v1, {not: v1}]}}", Route("c-test"), "other"}});
  state_.SetSnapshot(Serve(objects));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].resources_size(), 1);
  EXPECT_EQ(ConstraintsOf(responses[0].resources(0).resource_name()), "env=prod AND version=v1");
  ASSERT_EQ(responses[0].removed_resource_names_size(), 1);
  EXPECT_EQ(responses[0].removed_resource_names(0).name(), "r");
  EXPECT_EQ(ConstraintsOf(responses[0].removed_resource_names(0)), "env=prod");
}

TEST_F(DeltaTest, VariantRemovalUsesRemovedResourceNames) {
  Request(Locators(kEds, "c-prod", {{{"env", "prod"}}}));
  Drain();
  auto objects = Base();
  objects.erase(objects.begin() + 4);  // e-prod gone ...
  objects.erase(objects.begin() + 2);  // ... with its cluster ...
  objects[1] = Object("r", "route", {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.SetSnapshot(Serve(objects));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].removed_resource_names_size(), 1);
  EXPECT_EQ(responses[0].removed_resource_names(0).name(), "c-prod");
  EXPECT_EQ(responses[0].resources_size(), 0);
}

TEST_F(DeltaTest, UnknownNamesAreReportedRemoved) {
  DeltaDiscoveryRequest request;
  request.set_type_url(kRds);
  request.add_resource_names_subscribe("missing");
  Request(request);
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_THAT(responses[0].removed_resources(), ElementsAre("missing"));
}

TEST_F(DeltaTest, InitialResourceVersionsAreNotResent) {
  DeltaDiscoveryRequest request;
  request.set_type_url(kEds);
  request.add_resource_names_subscribe("c-prod");
  request.add_resource_names_subscribe("c-test");
  Request(request);
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].resources_size(), 2);
  // A new stream (another replica) told what the client holds sends nothing.
  StreamState reconnect(Protocol::kDelta, std::make_shared<ParameterMapping>());
  reconnect.SetSnapshot(Serve(Base()));
  DeltaDiscoveryRequest again = request;
  *again.mutable_node() = NodeWith("prod");
  for (const auto& resource : first[0].resources()) {
    (*again.mutable_initial_resource_versions())[resource.name()] = resource.version();
  }
  RequestOutcome outcome;
  ASSERT_THAT(reconnect.OnRequest(again, &outcome), IsOk());
  DeltaDiscoveryResponse response;
  PushRecord record;
  EXPECT_FALSE(reconnect.NextResponse(&response, &record));
}

TEST_F(DeltaTest, WildcardAndUnsubscribe) {
  DeltaDiscoveryRequest request;
  request.set_type_url(kCds);
  Request(request);  // Implicit wildcard.
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].resources_size(), 2);
  Request(Locators(kRds, "r", {{{"env", "prod"}}}));
  Drain();
  Request(Locators(kRds, "r", {}, {{{"env", "prod"}}}));
  EXPECT_THAT(Drain(), IsEmpty());  // Unsubscribing needs no answer.
  Request(Locators(kRds, "r", {{{"env", "prod"}}}));
  EXPECT_EQ(Drain().size(), 1u);  // Resubscribing sends it again.
}

// ---- Protocol fixes ----------------------------------------------------------

TEST_F(DeltaTest, ReconnectRemovesClaimedResourcesThatNoLongerExistAndResendsChangedOnes) {
  DeltaDiscoveryRequest request;
  request.set_type_url(kCds);  // Implicit wildcard.
  *request.mutable_node() = NodeWith("prod");
  const std::string current =
      Serve(Base())->snapshot().Find(ClusterType(), "c-prod")->variants[0]->version;
  (*request.mutable_initial_resource_versions())["c-prod"] = current;    // Equal: not resent.
  (*request.mutable_initial_resource_versions())["c-test"] = "old";      // Differs: resent.
  (*request.mutable_initial_resource_versions())["c-gone"] = "whatever"; // Gone: removed.
  RequestOutcome outcome;
  ASSERT_THAT(state_.OnRequest(request, &outcome), IsOk());
  first_ = false;
  auto responses = Drain();
  std::vector<std::string> sent;
  std::vector<std::string> removed;
  for (const auto& response : responses) {
    for (const auto& resource : response.resources()) sent.push_back(resource.name());
    for (const auto& name : response.removed_resources()) removed.push_back(name);
  }
  EXPECT_THAT(sent, ElementsAre("c-test"));
  EXPECT_THAT(removed, ElementsAre("c-gone"));
}

TEST_F(DeltaTest, LocatorMatchingNothingBesideOneThatMatchesIsToldItDoesNotExist) {
  auto objects = Base();
  objects[2] = Object("c-prod", "cluster", {{"{env: prod}", Cluster(), "prod"}});
  state_.SetSnapshot(Serve(objects));
  Request(Locators(kCds, "c-prod", {{{"env", "prod"}}, {{"env", "qa"}}}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].resources_size(), 1);
  EXPECT_EQ(ConstraintsOf(responses[0].resources(0).resource_name()), "env=prod");
  ASSERT_EQ(responses[0].removed_resource_names_size(), 1);
  EXPECT_EQ(responses[0].removed_resource_names(0).name(), "c-prod");
  EXPECT_EQ(ConstraintsOf(responses[0].removed_resource_names(0)), "env=qa");
}

TEST_F(DeltaTest, UnsubscribingANameTheWildcardStillCoversSendsItAgain) {
  DeltaDiscoveryRequest request;
  request.set_type_url(kCds);
  request.add_resource_names_subscribe("*");
  request.add_resource_names_subscribe("c-prod");
  Request(request);
  Drain();
  DeltaDiscoveryRequest unsubscribe;
  unsubscribe.set_type_url(kCds);
  unsubscribe.add_resource_names_unsubscribe("c-prod");
  Request(unsubscribe);
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].resources_size(), 1);
  EXPECT_EQ(responses[0].resources(0).name(), "c-prod");
}

TEST_F(DeltaTest, VariantSentWithConstraintsIsRemovedWithThemAfterItsLocatorIsGone) {
  // r by locator (env=qa selects "other") and by plain name (node env=prod).
  DeltaDiscoveryRequest request = Locators(kRds, "r", {{{"env", "qa"}}});
  request.add_resource_names_subscribe("r");
  Request(request);
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].resources_size(), 2);
  // Each subscription gets its own form: by name, and with constraints.
  std::vector<std::string> forms;
  for (const auto& resource : first[0].resources()) {
    forms.push_back(resource.has_resource_name() ? "locator:" + ConstraintsOf(resource.resource_name())
                                                 : "name:" + resource.name());
  }
  EXPECT_THAT(forms, UnorderedElementsAre("name:r", "locator:NOT env=prod"));
  // The locator goes: its variant leaves with its constraints.
  Request(Locators(kRds, "r", {}, {{{"env", "qa"}}}));
  auto unsubscribed = Drain();
  ASSERT_EQ(unsubscribed.size(), 1u);
  EXPECT_THAT(unsubscribed[0].removed_resources(), IsEmpty());
  ASSERT_EQ(unsubscribed[0].removed_resource_names_size(), 1);
  EXPECT_EQ(ConstraintsOf(unsubscribed[0].removed_resource_names(0)), "NOT env=prod");
  // Then the route goes.
  auto objects = Base();
  objects.erase(objects.begin() + 1);
  objects[0] = Object("greeter", "listener", {{"", Listener("r2"), "all"}});
  objects.push_back(Object("r2", "route", {{"", Route("c-test"), "all"}}));
  state_.SetSnapshot(Serve(objects));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  // The plain subscription hears removed_resources; nothing constrained is
  // removed by plain name.
  EXPECT_THAT(responses[0].removed_resources(), ElementsAre("r"));
  EXPECT_EQ(responses[0].removed_resource_names_size(), 0);
}

TEST_F(SotwTest, FullStateResponseAfterANackCarriesTheLastAckedVariant) {
  Request(Sotw(kCds, {}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  Request(Sotw(kCds, {}, first[0].nonce()));  // ACK.
  // c-prod changes; the client rejects it.
  auto objects = Base();
  objects[2] = Object("c-prod", "cluster", {{"", "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}, lb_policy: RING_HASH}", "all"}});
  state_.SetSnapshot(Serve(objects));
  auto pushed = Drain();
  ASSERT_EQ(pushed.size(), 1u);
  DiscoveryRequest nack = Sotw(kCds, {}, pushed[0].nonce());
  nack.mutable_error_detail()->set_message("c-prod rejected");
  EXPECT_EQ(Request(nack).kind, RequestOutcome::Kind::kNack);
  EXPECT_THAT(Drain(), IsEmpty());
  // An unrelated cluster is added: the complete set carries c-prod as the
  // client kept it (the first version), not the rejected one.
  objects.push_back(Object("c-extra", "cluster", {{"", Cluster(), "all"}}));
  objects.push_back(Object("e-extra", "endpoint", {{"", Endpoints(4), "all"}}));
  state_.SetSnapshot(Serve(objects));
  auto next = Drain();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_THAT(Names(next[0]), UnorderedElementsAre("c-prod", "c-test", "c-extra"));
  for (const auto& any : next[0].resources()) {
    envoy::config::cluster::v3::Cluster cluster;
    ASSERT_TRUE(any.UnpackTo(&cluster));
    if (cluster.name() == "c-prod") {
      EXPECT_NE(cluster.lb_policy(), envoy::config::cluster::v3::Cluster::RING_HASH);
    }
  }
}

TEST_F(SotwTest, AChangeOnlyWakesTheNamesItTouches) {
  Request(Sotw(kRds, {"r"}));
  Drain();
  // A derived snapshot changing only an unrelated cluster: nothing to send.
  auto base = Serve(Base());
  state_.SetSnapshot(base);
  Drain();
  auto changed = Base();
  changed[3] = Object("c-test", "cluster", {{"", "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}, lb_policy: RING_HASH}", "all"}});
  auto other = Serve(changed);
  auto derived = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      base->snapshot(), {other->snapshot().resources(ClusterType()).at("c-test")}, {}));
  state_.SetSnapshot(derived);
  EXPECT_THAT(Drain(), IsEmpty());
}

// ---- Bounds ----------------------------------------------------------------

TEST(StreamStateTest, NamesPerStreamAreBoundedAcrossDeltaRequests) {
  StreamState::Limits limits;
  limits.max_names = 3;
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>(), limits);
  RequestOutcome outcome;
  DeltaDiscoveryRequest request;
  request.set_type_url(kEds);
  request.add_resource_names_subscribe("a");
  request.add_resource_names_subscribe("b");
  ASSERT_THAT(state.OnRequest(request, &outcome), IsOk());
  DeltaDiscoveryRequest more;
  more.set_type_url(kRds);
  more.add_resource_names_subscribe("c");
  more.add_resource_names_subscribe("d");
  EXPECT_THAT(state.OnRequest(more, &outcome), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(outcome.limit, RequestOutcome::Limit::kNames);
}

TEST(StreamStateTest, TypeUrlsPerStreamAreBounded) {
  StreamState::Limits limits;
  limits.max_types = 2;
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>(), limits);
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(Sotw("type.example/a", {"x"}), &outcome), IsOk());
  ASSERT_THAT(state.OnRequest(Sotw("type.example/b", {"x"}), &outcome), IsOk());
  EXPECT_THAT(state.OnRequest(Sotw("type.example/c", {"x"}), &outcome),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(outcome.limit, RequestOutcome::Limit::kTypes);
}

// Names and locator parameters count against Limits::max_bytes across delta
// requests, and unsubscribing gives their bytes back.
TEST(StreamStateTest, SubscriptionBytesAreBoundedAcrossDeltaRequests) {
  StreamState::Limits limits;
  limits.max_bytes = 100;
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>(), limits);
  RequestOutcome outcome;
  DeltaDiscoveryRequest names;
  names.set_type_url(kEds);
  names.add_resource_names_subscribe(std::string(40, 'a'));
  ASSERT_THAT(state.OnRequest(names, &outcome), IsOk());
  DeltaDiscoveryRequest locator;
  locator.set_type_url(kEds);
  auto* sub = locator.add_resource_locators_subscribe();
  sub->set_name(std::string(30, 'b'));
  (*sub->mutable_dynamic_parameters())["k"] = std::string(10, 'v');
  ASSERT_THAT(state.OnRequest(locator, &outcome), IsOk());
  EXPECT_EQ(state.subscribed_bytes(), 40 + 30 + 1 + 10);
  DeltaDiscoveryRequest more;
  more.set_type_url(kRds);
  more.add_resource_names_subscribe(std::string(30, 'c'));
  EXPECT_THAT(state.OnRequest(more, &outcome), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(outcome.limit, RequestOutcome::Limit::kBytes);

  StreamState fresh(Protocol::kDelta, std::make_shared<ParameterMapping>(), limits);
  ASSERT_THAT(fresh.OnRequest(names, &outcome), IsOk());
  ASSERT_THAT(fresh.OnRequest(locator, &outcome), IsOk());
  DeltaDiscoveryRequest unsubscribe;
  unsubscribe.set_type_url(kEds);
  unsubscribe.add_resource_names_unsubscribe(std::string(40, 'a'));
  *unsubscribe.add_resource_locators_unsubscribe() = *sub;
  ASSERT_THAT(fresh.OnRequest(unsubscribe, &outcome), IsOk());
  EXPECT_EQ(fresh.subscribed_bytes(), 0);
  outcome = RequestOutcome();
  EXPECT_THAT(fresh.OnRequest(more, &outcome), IsOk());
}

// A quota that refuses to go beyond `cap` bytes, recording what it was asked.
class CappedQuota final : public SubscriptionQuota {
 public:
  explicit CappedQuota(int64_t cap) : cap_(cap) {}
  absl::Status Take(int64_t bytes, RequestOutcome::Limit* limit) override {
    asked.push_back(bytes);
    if (taken + bytes > cap_) {
      *limit = RequestOutcome::Limit::kConnectionMemory;
      return absl::ResourceExhaustedError("over the connection's cap");
    }
    taken += bytes;
    return absl::OkStatus();
  }
  std::vector<int64_t> asked;
  int64_t taken = 0;

 private:
  const int64_t cap_;
};

// A request that adds subscriptions asks the quota for what they cost before
// anything changes: refused, it leaves the stream as it was.
TEST(StreamStateTest, QuotaIsAskedForWhatARequestAddsBeforeItIsApplied) {
  CappedQuota quota(StreamState::SubscriptionMemory(3, 30));
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>());
  state.SetQuota(&quota);
  RequestOutcome outcome;
  DeltaDiscoveryRequest two;
  two.set_type_url(kEds);
  two.add_resource_names_subscribe(std::string(10, 'a'));
  two.add_resource_names_subscribe(std::string(10, 'b'));
  ASSERT_THAT(state.OnRequest(two, &outcome), IsOk());
  EXPECT_THAT(quota.asked, ElementsAre(StreamState::SubscriptionMemory(2, 20)));
  EXPECT_EQ(state.subscription_memory(), StreamState::SubscriptionMemory(2, 20));

  DeltaDiscoveryRequest two_more;
  two_more.set_type_url(kEds);
  two_more.add_resource_names_subscribe(std::string(10, 'c'));
  two_more.add_resource_names_subscribe(std::string(10, 'd'));
  EXPECT_THAT(state.OnRequest(two_more, &outcome),
              StatusIs(absl::StatusCode::kResourceExhausted, "over the connection's cap"));
  EXPECT_EQ(outcome.limit, RequestOutcome::Limit::kConnectionMemory);
  EXPECT_EQ(state.subscribed_names(), 2);

  // SotW asks only for what a request adds beyond the set it replaces.
  CappedQuota sotw_quota(StreamState::SubscriptionMemory(2, 20));
  StreamState sotw(Protocol::kSotw, std::make_shared<ParameterMapping>());
  sotw.SetQuota(&sotw_quota);
  ASSERT_THAT(sotw.OnRequest(Sotw(kEds, {"aaaaaaaaaa", "bbbbbbbbbb"}), &outcome), IsOk());
  ASSERT_THAT(sotw.OnRequest(Sotw(kEds, {"cccccccccc"}), &outcome), IsOk());
  EXPECT_THAT(sotw_quota.asked, ElementsAre(StreamState::SubscriptionMemory(2, 20)));
}

// SubscriptionMemory against the heap: what a stream's subscriptions hold
// (with the watch changes that stand for the server's index entries) is
// within a factor of two of the estimate, for short names and long ones.
// Before the estimate, 62 MB of names cost 276 MB while the bounds counted
// 62 MB.
// Returns the bytes the program has allocated and not freed: glibc's count,
// or the sanitizer allocator's (which replaces glibc's, so mallinfo2 says 0).
size_t HeapBytesInUse() {
#ifdef FACET_SANITIZER_ALLOCATOR
  return __sanitizer_get_current_allocated_bytes();
#else
  return mallinfo2().uordblks;
#endif
}

TEST(StreamStateTest, SubscriptionMemoryEstimatesTheHeapSubscriptionsHold) {
  for (const size_t name_bytes : {size_t{20}, size_t{600}, size_t{2000}}) {
    SCOPED_TRACE(name_bytes);
    std::vector<DeltaDiscoveryRequest> requests(5);
    for (size_t r = 0; r < requests.size(); ++r) {
      requests[r].set_type_url(kEds);
      for (int i = 0; i < 2000; ++i) {
        std::string name = absl::StrCat(r, "-", i, "-");
        name.resize(name_bytes, 'n');
        requests[r].add_resource_names_subscribe(std::move(name));
      }
    }
    const size_t before = HeapBytesInUse();
    auto state =
        std::make_unique<StreamState>(Protocol::kDelta, std::make_shared<ParameterMapping>());
    RequestOutcome outcome;
    for (const auto& request : requests) ASSERT_THAT(state->OnRequest(request, &outcome), IsOk());
    const auto held = static_cast<int64_t>(HeapBytesInUse() - before);
    const int64_t estimate = state->subscription_memory();
    EXPECT_GE(estimate, held / 2) << "heap " << held << ", raw " << state->subscribed_bytes();
    EXPECT_LE(estimate, held * 2) << "heap " << held << ", raw " << state->subscribed_bytes();
    state.reset();
  }
}

// SotW requests replace the subscription set: the names and bytes counted
// are those of the latest request, not the sum of the old and new sets.
TEST(StreamStateTest, SotwSubscriptionBytesFollowTheLatestRequest) {
  StreamState::Limits limits;
  limits.max_bytes = 10;
  limits.max_names = 2;
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>(), limits);
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(Sotw(kEds, {"aaaa", "bbbb"}), &outcome), IsOk());
  EXPECT_EQ(state.subscribed_bytes(), 8);
  ASSERT_THAT(state.OnRequest(Sotw(kEds, {"cccccccc"}), &outcome), IsOk());
  EXPECT_EQ(state.subscribed_bytes(), 8);
  ASSERT_THAT(state.OnRequest(Sotw(kEds, {"ee", "ff"}), &outcome), IsOk());
  EXPECT_EQ(state.subscribed_names(), 2);
  EXPECT_EQ(state.subscribed_bytes(), 4);
  EXPECT_THAT(state.OnRequest(Sotw(kEds, {"gg", "hh", "ii"}), &outcome),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(outcome.limit, RequestOutcome::Limit::kNames);
  ASSERT_THAT(state.OnRequest(Sotw(kEds, {"cccccccc"}), &outcome), IsOk());
  EXPECT_THAT(state.OnRequest(Sotw(kEds, {"cccccccc", "ddd"}), &outcome),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(outcome.limit, RequestOutcome::Limit::kBytes);
}

// No served resource has a longer name or type URL: such a request is
// refused (naming the limit) instead of being kept at any size.
TEST(StreamStateTest, RefusesNamesAndTypeUrlsNoServedResourceCanHave) {
  RequestOutcome outcome;
  StreamState sotw(Protocol::kSotw, std::make_shared<ParameterMapping>());
  EXPECT_THAT(sotw.OnRequest(Sotw(kEds, {std::string(kMaxResourceNameLength + 1, 'n')}), &outcome),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("2049 bytes")));
  EXPECT_THAT(sotw.OnRequest(Sotw(std::string(StreamState::kMaxTypeUrlBytes + 1, 't'), {"x"}),
                             &outcome),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("513 bytes")));
  ASSERT_THAT(sotw.OnRequest(Sotw(kEds, {std::string(kMaxResourceNameLength, 'n')}), &outcome),
              IsOk());
  StreamState delta(Protocol::kDelta, std::make_shared<ParameterMapping>());
  DeltaDiscoveryRequest request;
  request.set_type_url(kEds);
  (*request.mutable_initial_resource_versions())[std::string(5000, 'n')] = "v";
  EXPECT_THAT(delta.OnRequest(request, &outcome),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("initial_resource_versions")));
}

// ---- Partial snapshots (the relay's cache) and demand ---------------------

// Returns `base` partial, holding only route "r" with its env=prod variant,
// answered for the parameter sets in `known` (projected onto `env`).
std::shared_ptr<const ServingSnapshot> PartialWithRoute(const std::vector<ParameterSet>& known,
                                                        const Snapshot* base = nullptr) {
  auto full = Serve(Base());
  const ServedResource* route = full->snapshot().Find(RouteConfigurationType(), "r");
  auto resource = std::make_shared<ServedResource>(*route);
  resource->variants.resize(1);  // The env=prod variant only.
  auto resolution = std::make_shared<Resolution>();
  resolution->keys = std::set<std::string>{"env"};
  for (const ParameterSet& params : known) resolution->known.insert(CanonicalParameters(params));
  resource->resolution = std::move(resolution);
  return std::make_shared<ServingSnapshot>(
      Snapshot::Derive(base != nullptr ? *base : *Snapshot::EmptyPartial(), {resource}, {}));
}

TEST(PartialSnapshotTest, DeltaWaitsForWhatThePartialSourceDoesNotKnowYet) {
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>());
  auto first = PartialWithRoute({{{"env", "prod"}}});
  state.SetSnapshot(first);
  DeltaDiscoveryRequest request;
  request.set_type_url(kRds);
  for (const char* env : {"prod", "qa"}) {
    auto* locator = request.add_resource_locators_subscribe();
    locator->set_name("r");
    (*locator->mutable_dynamic_parameters())["env"] = env;
  }
  auto* unknown_name = request.add_resource_locators_subscribe();
  unknown_name->set_name("elsewhere");
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(request, &outcome), IsOk());
  DeltaDiscoveryResponse response;
  PushRecord record;
  // env=qa is not known yet: the name waits as a whole (no partial answer,
  // no "does not exist" guess); "elsewhere" is not known at all.
  EXPECT_FALSE(state.NextResponse(&response, &record));

  // The source learns that env=qa selects nothing.
  auto second = PartialWithRoute({{{"env", "prod"}}, {{"env", "qa"}}}, &first->snapshot());
  state.SetSnapshot(second);
  ASSERT_TRUE(state.NextResponse(&response, &record));
  ASSERT_EQ(response.resources_size(), 1);
  EXPECT_EQ(Constraint::Compile(response.resources(0).resource_name().dynamic_parameter_constraints())
                ->ToString(),
            "env=prod");
  ASSERT_EQ(response.removed_resource_names_size(), 1);
  EXPECT_EQ(Constraint::Compile(response.removed_resource_names(0).dynamic_parameter_constraints())
                ->ToString(),
            "env=qa");
  EXPECT_FALSE(state.NextResponse(&response, &record));
}

TEST(PartialSnapshotTest, SotwListenerResponsesWaitRatherThanOmitAnUnknownName) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  auto partial = std::make_shared<ServingSnapshot>(Snapshot::EmptyPartial());
  state.SetSnapshot(partial);
  DiscoveryRequest request = Sotw(kLds, {"greeter"});
  *request.mutable_node() = NodeWith("prod");
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(request, &outcome), IsOk());
  DiscoveryResponse response;
  PushRecord record;
  // An empty full-state response would tell the client its listener is gone.
  EXPECT_FALSE(state.NextResponse(&response, &record));

  auto full = Serve(Base());
  auto listener = std::make_shared<ServedResource>(
      *full->snapshot().Find(ListenerType(), "greeter"));
  auto resolution = std::make_shared<Resolution>();
  resolution->keys = std::set<std::string>{};
  resolution->known.insert(CanonicalParameters({}));
  listener->resolution = std::move(resolution);
  state.SetSnapshot(std::make_shared<ServingSnapshot>(
      Snapshot::Derive(partial->snapshot(), {listener}, {})));
  ASSERT_TRUE(state.NextResponse(&response, &record));
  EXPECT_THAT(Names(response), ElementsAre("greeter"));
}

TEST(PartialSnapshotTest, AnAuthoritativeSnapshotStillSaysDoesNotExistAtOnce) {
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>());
  state.SetSnapshot(Serve(Base()));
  DeltaDiscoveryRequest request;
  request.set_type_url(kRds);
  request.add_resource_names_subscribe("nowhere");
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(request, &outcome), IsOk());
  DeltaDiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state.NextResponse(&response, &record));
  EXPECT_THAT(response.removed_resources(), ElementsAre("nowhere"));
}

std::vector<std::string> DemandText(const std::vector<DemandChange>& changes) {
  std::vector<std::string> out;
  for (const DemandChange& change : changes) {
    out.push_back(absl::StrCat(change.added ? "+" : "-", change.name, " ",
                               ParameterSetToString(change.params->params)));
  }
  return out;
}

TEST(DemandTest, ReportsSubscriptionsStartedAndEndedInOrder) {
  StreamState state(Protocol::kDelta, std::make_shared<ParameterMapping>());
  state.RecordDemand();
  state.SetSnapshot(Serve(Base()));
  DeltaDiscoveryRequest request;
  request.set_type_url(kRds);
  *request.mutable_node() = NodeWith("prod");
  request.add_resource_names_subscribe("r");
  auto* locator = request.add_resource_locators_subscribe();
  locator->set_name("r");
  (*locator->mutable_dynamic_parameters())["env"] = "qa";
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(request, &outcome), IsOk());
  EXPECT_THAT(DemandText(state.TakeDemandChanges()),
              ElementsAre("+r {env=prod}", "+r {env=qa}"));
  EXPECT_THAT(state.TakeDemandChanges(), IsEmpty());

  DeltaDiscoveryRequest unsubscribe;
  unsubscribe.set_type_url(kRds);
  unsubscribe.add_resource_names_unsubscribe("r");
  ASSERT_THAT(state.OnRequest(unsubscribe, &outcome), IsOk());
  EXPECT_THAT(DemandText(state.TakeDemandChanges()), ElementsAre("-r {env=prod}"));
  EXPECT_THAT(DemandText(state.Demands()), ElementsAre("+r {env=qa}"));
}

TEST(DemandTest, SotwRequestsReportOnlyWhatChanged) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  state.RecordDemand();
  state.SetSnapshot(Serve(Base()));
  DiscoveryRequest request = Sotw(kCds, {"c-prod", "c-test"});
  *request.mutable_node() = NodeWith("test");
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(request, &outcome), IsOk());
  EXPECT_THAT(DemandText(state.TakeDemandChanges()),
              ElementsAre("+c-prod {env=test}", "+c-test {env=test}"));
  ASSERT_THAT(state.OnRequest(Sotw(kCds, {"c-test"}), &outcome), IsOk());
  EXPECT_THAT(DemandText(state.TakeDemandChanges()), ElementsAre("-c-prod {env=test}"));
}

TEST(DemandTest, NotRecordedUnlessAsked) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  state.SetSnapshot(Serve(Base()));
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(Sotw(kCds, {"c-prod"}), &outcome), IsOk());
  EXPECT_THAT(state.TakeDemandChanges(), IsEmpty());
}

// --- Read authorization by client identity (XdsAuthority spec.allowedClients)

const std::string kSecure = "xdstp://secure.example/envoy.config.cluster.v3.Cluster/c";
const std::string kSecureMissing =
    "xdstp://secure.example/envoy.config.cluster.v3.Cluster/missing";
const std::string kOpen = "xdstp://open.example/envoy.config.cluster.v3.Cluster/c";
constexpr char kAllowedId[] = "spiffe://td/ns/demo/sa/allowed";

ClientIdentity Identity(const std::string& spiffe_id) {
  ClientIdentity identity;
  identity.spiffe_id = spiffe_id;
  return identity;
}

// Clusters "c" under secure.example (restricted to kAllowedId unless opened)
// and open.example, and the old-style "c-plain", built incrementally so that
// snapshots carry their changes.
class AccessTest : public ::testing::Test {
 protected:
  AccessTest() : builder_(BuildOptions()) {
    for (const auto& [ref, authority] : std::vector<std::pair<std::string, std::string>>{
             {"c-secure", "secure.example"}, {"c-open", "open.example"}, {"c-plain", ""}}) {
      // LOGICAL_DNS: an xdstp:// EDS cluster would need its endpoints too.
      ResourceObject object = Object(
          ref, "cluster",
          {{"",
            "{type: LOGICAL_DNS, load_assignment: {endpoints: [{lb_endpoints: [{endpoint: "
            "{address: {socket_address: {address: greeter.example, port_value: 443}}}}]}]}}",
            "all"}});
      if (!authority.empty()) {
        object.spec->name = "c";
        object.spec->authority = authority;
      }
      builder_.Upsert(std::move(object));
    }
    Restrict("open.example", std::nullopt);
    Restrict("secure.example", std::vector<AllowedClient>{
                                   {AllowedClient::Kind::kSpiffeId, kAllowedId}});
  }

  void Restrict(const std::string& authority, std::optional<std::vector<AllowedClient>> clients) {
    AuthorityObject object;
    object.ref = {kXdsAuthorityKind, "", authority};
    object.authority = authority;
    object.allowed_namespaces = {"demo"};
    object.allowed_clients = std::move(clients);
    builder_.Upsert(std::move(object));
  }
  std::shared_ptr<const ServingSnapshot> Build() {
    IncrementalBuilder::Result result = builder_.Build();
    for (const auto& status : result.changed_statuses) EXPECT_TRUE(status->accepted);
    return std::make_shared<ServingSnapshot>(result.snapshot);
  }
  static std::unique_ptr<StreamState> Stream(Protocol protocol,
                                             std::shared_ptr<const ServingSnapshot> snapshot,
                                             const ClientIdentity& identity) {
    auto state = std::make_unique<StreamState>(protocol, std::make_shared<ParameterMapping>());
    state->SetIdentity(identity);
    state->SetSnapshot(std::move(snapshot));
    return state;
  }
  template <typename Request, typename Response>
  static std::vector<Response> Exchange(StreamState& state, Request request) {
    request.mutable_node()->set_id("client");
    RequestOutcome outcome;
    EXPECT_THAT(state.OnRequest(request, &outcome), IsOk());
    std::vector<Response> out;
    Response response;
    PushRecord record;
    while (state.NextResponse(&response, &record)) out.push_back(response);
    return out;
  }
  static DeltaDiscoveryRequest DeltaSubscribe(const std::string& name) {
    DeltaDiscoveryRequest request;
    request.set_type_url(kCds);
    request.add_resource_names_subscribe(name);
    return request;
  }

  IncrementalBuilder builder_;
};

TEST_F(AccessTest, SotwWildcardOmitsRestrictedResourcesForOtherClients) {
  auto snapshot = Build();
  ASSERT_NE(snapshot->snapshot().access(), nullptr);
  const std::vector<std::pair<ClientIdentity, std::vector<std::string>>> cases = {
      {Identity(kAllowedId), {"c-plain", kOpen, kSecure}},
      {Identity("spiffe://td/ns/demo/sa/other"), {"c-plain", kOpen}},
      {ClientIdentity(), {"c-plain", kOpen}},
  };
  for (const auto& [identity, expected] : cases) {
    auto state = Stream(Protocol::kSotw, snapshot, identity);
    auto responses = Exchange<DiscoveryRequest, DiscoveryResponse>(*state, Sotw(kCds, {}));
    ASSERT_EQ(responses.size(), 1u) << identity.ToString();
    std::vector<std::string> names = Names(responses[0]);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, expected) << identity.ToString();
  }
}

TEST_F(AccessTest, AuthoritiesHeldAreReportedAsTheClientComesToHoldAndDropThem) {
  auto state = Stream(Protocol::kSotw, Build(), Identity(kAllowedId));
  ASSERT_EQ((Exchange<DiscoveryRequest, DiscoveryResponse>(*state, Sotw(kCds, {"c-plain", kOpen}))
                 .size()),
            1u);
  EXPECT_THAT(state->TakeAuthorityChanges(),
              UnorderedElementsAre(std::pair<std::string, int>("", 1),
                                   std::pair<std::string, int>("open.example", 1)));
  EXPECT_THAT(state->TakeAuthorityChanges(), IsEmpty());
  ASSERT_EQ(
      (Exchange<DiscoveryRequest, DiscoveryResponse>(*state, Sotw(kCds, {kOpen, kSecure})).size()),
      1u);
  EXPECT_THAT(state->TakeAuthorityChanges(),
              UnorderedElementsAre(std::pair<std::string, int>("", -1),
                                   std::pair<std::string, int>("secure.example", 1)));
  EXPECT_THAT(state->HeldAuthorities(), UnorderedElementsAre("open.example", "secure.example"));
  // Dropped and held again before anyone asked: nothing to report.
  ASSERT_EQ((Exchange<DiscoveryRequest, DiscoveryResponse>(*state, Sotw(kCds, {kOpen})).size()),
            1u);
  ASSERT_EQ(
      (Exchange<DiscoveryRequest, DiscoveryResponse>(*state, Sotw(kCds, {kOpen, kSecure})).size()),
      1u);
  EXPECT_THAT(state->TakeAuthorityChanges(), IsEmpty());
}

TEST_F(AccessTest, DeltaWildcardNeitherSendsNorRemovesRestrictedResources) {
  auto with_secure = Build();
  builder_.Remove({kXdsResourceKind, "demo", "c-secure"});
  auto without_secure = Build();
  std::vector<std::string> seen;
  for (const auto& snapshot : {with_secure, without_secure}) {
    auto state = Stream(Protocol::kDelta, snapshot, Identity("spiffe://td/other"));
    auto responses = Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(
        *state, DeltaSubscribe("*"));
    ASSERT_EQ(responses.size(), 1u);
    std::vector<std::string> names;
    for (const auto& resource : responses[0].resources()) names.push_back(resource.name());
    std::sort(names.begin(), names.end());
    EXPECT_THAT(names, ElementsAre("c-plain", kOpen));
    EXPECT_EQ(responses[0].removed_resources_size(), 0);
    seen.push_back(responses[0].SerializeAsString());
  }
  EXPECT_EQ(seen[0], seen[1]);
}

// Client status (CSDS) tells a reader no more about a restricted authority
// than ADS would: another client's restricted resources are left out for a
// reader who may not read them, and shown to one who may.
TEST_F(AccessTest, ClientStatusLeavesOutRestrictedResourcesTheReaderMayNotRead) {
  auto snapshot = Build();
  auto allowed = Stream(Protocol::kSotw, snapshot, Identity(kAllowedId));
  ASSERT_EQ((Exchange<DiscoveryRequest, DiscoveryResponse>(*allowed, Sotw(kCds, {}))).size(), 1u);
  auto described = [&](const ClientStatusQuery* query) {
    ClientStatus status;
    size_t budget = 1 << 20;
    EXPECT_TRUE(allowed->DescribeClient(&status, &budget, query));
    std::vector<std::string> names;
    for (const ResourceStatus& resource : status.resources) names.push_back(resource.name);
    std::sort(names.begin(), names.end());
    return names;
  };
  EXPECT_THAT(described(nullptr), ElementsAre("c-plain", kOpen, kSecure));
  ClientStatusQuery query;
  query.access = snapshot->snapshot().shared_access();
  for (const ClientIdentity& reader : {Identity("spiffe://td/other"), ClientIdentity()}) {
    query.reader = reader;
    EXPECT_THAT(described(&query), ElementsAre("c-plain", kOpen)) << reader.ToString();
  }
  query.reader = Identity(kAllowedId);
  EXPECT_THAT(described(&query), ElementsAre("c-plain", kOpen, kSecure));
}

TEST_F(AccessTest, SotwAnswerForARestrictedNameIsTheAnswerForANameThatDoesNotExist) {
  auto snapshot = Build();
  auto denied = Stream(Protocol::kSotw, snapshot, Identity("spiffe://td/other"));
  auto restricted = Exchange<DiscoveryRequest, DiscoveryResponse>(*denied, Sotw(kCds, {kSecure}));
  auto fresh = Stream(Protocol::kSotw, snapshot, Identity("spiffe://td/other"));
  auto missing =
      Exchange<DiscoveryRequest, DiscoveryResponse>(*fresh, Sotw(kCds, {kSecureMissing}));
  ASSERT_EQ(restricted.size(), 1u);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(restricted[0].resources_size(), 0);
  EXPECT_EQ(restricted[0].SerializeAsString(), missing[0].SerializeAsString());

  auto allowed = Stream(Protocol::kSotw, snapshot, Identity(kAllowedId));
  auto served = Exchange<DiscoveryRequest, DiscoveryResponse>(*allowed, Sotw(kCds, {kSecure}));
  ASSERT_EQ(served.size(), 1u);
  EXPECT_THAT(Names(served[0]), ElementsAre(kSecure));
}

TEST_F(AccessTest, DeltaAnswerForARestrictedNameIsTheAnswerForANameThatDoesNotExist) {
  auto with_secure = Build();
  // The same world without the restricted resource: a denied client must not
  // be able to tell the difference, in content or versions.
  builder_.Remove({kXdsResourceKind, "demo", "c-secure"});
  auto without_secure = Build();
  ASSERT_NE(with_secure->snapshot().version(), without_secure->snapshot().version());

  std::vector<std::string> seen;
  for (const auto& snapshot : {with_secure, without_secure}) {
    auto state = Stream(Protocol::kDelta, snapshot, ClientIdentity());
    auto responses = Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(
        *state, DeltaSubscribe(kSecure));
    ASSERT_EQ(responses.size(), 1u);
    EXPECT_THAT(responses[0].removed_resources(), ElementsAre(kSecure));
    EXPECT_EQ(responses[0].resources_size(), 0);
    seen.push_back(responses[0].SerializeAsString());
    // A claim of the restricted resource's real version is not honoured.
    auto claimed = Stream(Protocol::kDelta, snapshot, ClientIdentity());
    DeltaDiscoveryRequest resume = DeltaSubscribe(kSecure);
    const ServedResource* secure = with_secure->snapshot().Find(ClusterType(), kSecure);
    ASSERT_NE(secure, nullptr);
    (*resume.mutable_initial_resource_versions())[kSecure] = secure->variants[0]->version;
    auto resumed = Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(*claimed, resume);
    ASSERT_EQ(resumed.size(), 1u);
    EXPECT_THAT(resumed[0].removed_resources(), ElementsAre(kSecure));
    seen.push_back(resumed[0].SerializeAsString());
  }
  EXPECT_EQ(seen[0], seen[2]);
  EXPECT_EQ(seen[1], seen[3]);

  auto allowed = Stream(Protocol::kDelta, with_secure, Identity(kAllowedId));
  auto served = Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(*allowed,
                                                                        DeltaSubscribe(kSecure));
  ASSERT_EQ(served.size(), 1u);
  ASSERT_EQ(served[0].resources_size(), 1);
  EXPECT_EQ(served[0].resources(0).name(), kSecure);
}

TEST_F(AccessTest, ChangingTheAllowedClientsReachesOpenStreams) {
  auto restricted = Build();
  auto state = Stream(Protocol::kDelta, restricted, Identity("spiffe://td/other"));
  auto first =
      Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(*state, DeltaSubscribe(kSecure));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_THAT(first[0].removed_resources(), ElementsAre(kSecure));

  Restrict("secure.example", std::vector<AllowedClient>{
                                 {AllowedClient::Kind::kSpiffeId, "spiffe://td/*"}});
  state->SetSnapshot(Build());
  DeltaDiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state->NextResponse(&response, &record));
  ASSERT_EQ(response.resources_size(), 1);
  EXPECT_EQ(response.resources(0).name(), kSecure);

  Restrict("secure.example", std::vector<AllowedClient>{
                                 {AllowedClient::Kind::kDnsName, "allowed.example"}});
  state->SetSnapshot(Build());
  ASSERT_TRUE(state->NextResponse(&response, &record));
  EXPECT_EQ(response.resources_size(), 0);
  EXPECT_THAT(response.removed_resources(), ElementsAre(kSecure));
  EXPECT_FALSE(state->NextResponse(&response, &record));
}

}  // namespace
}  // namespace facet::xds
