// StreamState with SotW requests and responses.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/ads/stream_state_test_support.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;
using ::facet::testing::IsOk;
using stream_state_testing::AddLocator;
using stream_state_testing::Base;
using stream_state_testing::Cluster;
using stream_state_testing::Decode;
using stream_state_testing::Endpoints;
using stream_state_testing::Item;
using stream_state_testing::kCds;
using stream_state_testing::kEds;
using stream_state_testing::kLds;
using stream_state_testing::kRds;
using stream_state_testing::Names;
using stream_state_testing::NodeWith;
using stream_state_testing::Object;
using stream_state_testing::Route;
using stream_state_testing::Serve;
using stream_state_testing::Sotw;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

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

TEST_F(SotwTest, VersionInfoIsTheHexSumOfWhatTheClientHolds) {
  const std::shared_ptr<const ServingSnapshot> serving = Serve(Base());
  state_.SetSnapshot(serving);
  const auto variant_of = [&](const std::string& name) {
    const ServedResource* resource = serving->snapshot().Find(ClusterType(), name);
    return resource == nullptr ? nullptr : serving->Select(*resource, Parameters({}));
  };
  const std::shared_ptr<const Variant> prod = variant_of("c-prod");
  const std::shared_ptr<const Variant> test = variant_of("c-test");
  ASSERT_NE(prod, nullptr);
  ASSERT_NE(test, nullptr);
  // The variant's kept digest is the formula's, when computed and after.
  const uint64_t plain = HeldVariantDigest("c-prod", false, prod->version);
  EXPECT_EQ(prod->HeldDigest(false), plain);
  EXPECT_EQ(prod->HeldDigest(false), plain);
  EXPECT_EQ(prod->HeldDigest(true), HeldVariantDigest("c-prod", true, prod->version));
  EXPECT_NE(prod->HeldDigest(true), plain);  // The form counts.
  // One variant held: its digest, as sixteen lowercase hex digits.
  Request(Sotw(kCds, {"c-prod"}));
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].version_info(), absl::StrCat(absl::Hex(plain, absl::kZeroPad16)));
  // Another held adds its digest (mod 2^64).
  Request(Sotw(kCds, {"c-prod", "c-test"}));
  responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].version_info(),
            absl::StrCat(absl::Hex(plain + HeldVariantDigest("c-test", false, test->version),
                                   absl::kZeroPad16)));
}

TEST_F(SotwTest, ARecordWithoutItemsLeavesThemOutAndTheResponseAlone) {
  Request(Sotw(kRds, {"r"}));
  DiscoveryResponse response;
  PushRecord record;
  record.with_items = false;
  ASSERT_TRUE(state_.NextResponse(&response, &record));
  EXPECT_THAT(record.items, IsEmpty());
  EXPECT_EQ(record.type_url, kRds);
  EXPECT_EQ(record.nonce, response.nonce());
  EXPECT_THAT(record.version_info, IsEmpty());  // Copied only for a listing.
  // The same request on a stream whose record lists the items.
  StreamState listing(Protocol::kSotw, std::make_shared<ParameterMapping>());
  listing.SetSnapshot(Serve(Base()));
  DiscoveryRequest request = Sotw(kRds, {"r"});
  *request.mutable_node() = node_;
  RequestOutcome outcome;
  ASSERT_THAT(listing.OnRequest(request, &outcome), IsOk());
  DiscoveryResponse listed_response;
  PushRecord listed;
  ASSERT_TRUE(listing.NextResponse(&listed_response, &listed));
  ASSERT_EQ(listed.items.size(), 1u);
  EXPECT_EQ(listed.items[0].name, "r");
  EXPECT_EQ(listed.version_info, listed_response.version_info());
  EXPECT_FALSE(listed.version_info.empty());
  EXPECT_EQ(listed_response.SerializeAsString(), response.SerializeAsString());
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

TEST_F(SotwTest, AcksNameTheirTypeWithTheStreamsOwnCopyOfItsUrl) {
  Request(Sotw(kRds, {"r"}));
  auto first = Drain();
  const RequestOutcome a = Request(Sotw(kRds, {"r"}, first[0].nonce()));
  const RequestOutcome b = Request(Sotw(kRds, {"r"}, first[0].nonce()));
  EXPECT_EQ(a.type_url, kRds);
  EXPECT_EQ(a.type_url.data(), b.type_url.data());  // No copy per request.
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
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.SetSnapshot(Serve(objects));
  EXPECT_EQ(Drain().size(), 1u);
}

// A request carrying error_detail is a NACK even when its message is empty
// (the field's presence is what the protocol defines).
TEST_F(SotwTest, ErrorDetailWithoutAMessageIsANack) {
  Request(Sotw(kRds, {"r"}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  DiscoveryRequest nack = Sotw(kRds, {"r"}, first[0].nonce());
  nack.mutable_error_detail()->set_code(3);
  RequestOutcome outcome = Request(nack);
  EXPECT_EQ(outcome.kind, RequestOutcome::Kind::kNack);
  EXPECT_EQ(outcome.error_detail, "(NACK without a message)");
  ASSERT_EQ(outcome.nacked.size(), 1u);
  EXPECT_EQ(outcome.nacked[0].name, "r");
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
  Request(
      Sotw(kEds, {"c-prod", "c-test"}, second.empty() ? first[0].nonce() : second.back().nonce()));
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
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.SetSnapshot(Serve(objects));
  EXPECT_THAT(Drain(), IsEmpty());
  // Its own variant changes: pushed.
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-prod"), "other"}});
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
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-new"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  objects[2] = Object("c-new", "cluster", {{"", Cluster(), "all"}});
  objects[4] = Object("e-new", "endpoint", {{"", Endpoints(3), "all"}});
  state_.SetSnapshot(Serve(objects));
  auto responses = Drain();
  std::vector<std::string> order;
  for (const auto& r : responses)
    order.push_back(r.type_url() + " " + std::to_string(r.resources_size()));
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
    DiscoveryRequest request =
        Sotw(response.type_url(), response.type_url() == kRds ? std::vector<std::string>{"r"}
                                                              : std::vector<std::string>{});
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
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
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

// ---- After a NACK, and what a change wakes ---------------------------------

TEST_F(SotwTest, FullStateResponseAfterANackCarriesTheLastAckedVariant) {
  Request(Sotw(kCds, {}));
  auto first = Drain();
  ASSERT_EQ(first.size(), 1u);
  Request(Sotw(kCds, {}, first[0].nonce()));  // ACK.
  // c-prod changes; the client rejects it.
  auto objects = Base();
  objects[2] =
      Object("c-prod", "cluster",
             {{"", "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}, lb_policy: RING_HASH}",
               "all"}});
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
  changed[3] =
      Object("c-test", "cluster",
             {{"", "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}, lb_policy: RING_HASH}",
               "all"}});
  auto other = Serve(changed);
  auto derived = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      base->snapshot(), {other->snapshot().resources(ClusterType()).at("c-test")}, {}));
  state_.SetSnapshot(derived);
  EXPECT_THAT(Drain(), IsEmpty());
}

TEST_F(SotwTest, WorkArrivingAfterACheckThatFoundNoneIsFound) {
  // A check that finds nothing is remembered until something can give a
  // type work: each way of giving it some is seen by the next check.
  Request(Sotw(kRds, {"r"}));
  Drain();
  EXPECT_FALSE(state_.ResponseMayBeDue());
  EXPECT_FALSE(state_.ResponseMayBeDue());
  // A change to a watched name, delivered as the service delivers it.
  auto objects = Base();
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.AdoptSnapshot(Serve(objects));
  EXPECT_FALSE(state_.ResponseMayBeDue());  // Nothing marked yet.
  state_.MarkDirty(RouteConfigurationType(), "r");
  EXPECT_TRUE(state_.ResponseMayBeDue());
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(Decode(responses[0])[0].route_cluster, "c-test");
  EXPECT_FALSE(state_.ResponseMayBeDue());
  // Every name re-examined (a snapshot not derived from the last one).
  state_.MarkAllDirty();
  EXPECT_TRUE(state_.ResponseMayBeDue());
  EXPECT_THAT(Drain(), IsEmpty());
  EXPECT_FALSE(state_.ResponseMayBeDue());
  // A request adding a name.
  Request(Sotw(kRds, {"r", "unknown"}, responses[0].nonce()));
  EXPECT_TRUE(state_.ResponseMayBeDue());
  EXPECT_THAT(Drain(), SizeIs(1));
  EXPECT_FALSE(state_.ResponseMayBeDue());
  // A snapshot set directly (SetSnapshot marks what changed itself).
  state_.SetSnapshot(Serve(Base()));
  EXPECT_TRUE(state_.ResponseMayBeDue());
  responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(Decode(responses[0])[0].route_cluster, "c-prod");
  EXPECT_FALSE(state_.ResponseMayBeDue());
}

TEST_F(SotwTest, APushCarriesNamesDecidedInItsPassAndNamesLeftFromAnEarlierOne) {
  // Two routes and both clusters' endpoints.
  auto objects = Base();
  objects.push_back(Object("r2", "route", {{"", Route("c-test"), "all"}}));
  auto base = Serve(objects);
  state_.SetSnapshot(base);
  Request(Sotw(kRds, {"r", "r2"}));
  Request(Sotw(kEds, {"c-prod", "c-test"}));
  Drain();
  // One derived snapshot changes one name of each type: both are decided in
  // the same pass, the endpoints go first, and the route waits.
  auto changed = objects;
  changed[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  changed[4] = Object("e-prod", "endpoint", {{"", Endpoints(5), "all"}});
  changed[6] = Object("r2", "route", {{"", Route("c-prod"), "all"}});
  auto other = Serve(changed);
  auto first = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      base->snapshot(),
      {other->snapshot().resources(RouteConfigurationType()).at("r"),
       other->snapshot().resources(ClusterLoadAssignmentType()).at("c-prod")},
      {}));
  state_.SetSnapshot(first);
  DiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state_.NextResponse(&response, &record));
  EXPECT_EQ(response.type_url(), kEds);
  EXPECT_THAT(Names(response), UnorderedElementsAre("c-prod"));
  // Before the route's response, another change to the other route: the
  // response carries "r" (re-examined in the earlier pass) and "r2" (in
  // this one), each with what this snapshot selects for it.
  auto second = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      first->snapshot(), {other->snapshot().resources(RouteConfigurationType()).at("r2")}, {}));
  state_.SetSnapshot(second);
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  EXPECT_EQ(responses[0].type_url(), kRds);
  std::map<std::string, std::string> clusters;
  for (const Item& item : Decode(responses[0])) clusters[item.name] = item.route_cluster;
  EXPECT_THAT(clusters, UnorderedElementsAre(Pair("r", "c-test"), Pair("r2", "c-prod")));
  // What the stream holds is what it sent: an ACK leaves nothing to send.
  Request(Sotw(kRds, {"r", "r2"}, responses[0].nonce()));
  EXPECT_THAT(Drain(), IsEmpty());
}

}  // namespace
}  // namespace facet::xds
