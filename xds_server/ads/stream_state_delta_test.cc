// StreamState with delta requests and responses.
#include <memory>
#include <string>
#include <vector>

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
using stream_state_testing::Base;
using stream_state_testing::Cluster;
using stream_state_testing::kCds;
using stream_state_testing::kEds;
using stream_state_testing::kRds;
using stream_state_testing::Listener;
using stream_state_testing::NodeWith;
using stream_state_testing::Object;
using stream_state_testing::Route;
using stream_state_testing::Serve;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class DeltaTest : public ::testing::Test {
 protected:
  DeltaTest() : state_(Protocol::kDelta, std::make_shared<ParameterMapping>()) {
    state_.SetSnapshot(Serve(Base()));
  }
  RequestOutcome Request(DeltaDiscoveryRequest request) {
    if (first_) *request.mutable_node() = NodeWith("prod");
    first_ = false;
    RequestOutcome outcome;
    EXPECT_THAT(state_.OnRequest(request, &outcome), IsOk());
    return outcome;
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
  objects[1] =
      Object("r", "route",
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
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
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

// Whether a response is due does not depend on the record listing what it
// carries: with the list off, an upsert and a "does not exist" still go out.
TEST_F(DeltaTest, ResponsesAreDecidedAlikeWhenTheRecordListsNoItems) {
  DeltaDiscoveryRequest request = Locators(kRds, "r", {{{"env", "prod"}}});
  request.add_resource_names_subscribe("missing");
  Request(request);
  DeltaDiscoveryResponse response;
  PushRecord record;
  record.with_items = false;
  ASSERT_TRUE(state_.NextResponse(&response, &record));
  EXPECT_THAT(record.items, IsEmpty());
  EXPECT_EQ(response.resources_size(), 1);
  EXPECT_THAT(response.removed_resources(), ElementsAre("missing"));
  EXPECT_EQ(record.nonce, response.nonce());
  // The version is the response's, not the record's (copied only for a
  // listing): 16 hex digits of what the stream holds.
  EXPECT_THAT(record.version_info, IsEmpty());
  EXPECT_EQ(response.system_version_info().size(), 16u);
  EXPECT_FALSE(state_.NextResponse(&response, &record));  // Nothing else is due.
}

// A request carrying error_detail is a NACK even when its message is empty
// (the field's presence is what the protocol defines); without it, an ACK.
TEST_F(DeltaTest, ErrorDetailWithoutAMessageIsANack) {
  DeltaDiscoveryRequest subscribe;
  subscribe.set_type_url(kRds);
  subscribe.add_resource_names_subscribe("r");
  Request(subscribe);
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  DeltaDiscoveryRequest nack;
  nack.set_type_url(kRds);
  nack.set_response_nonce(responses[0].nonce());
  nack.mutable_error_detail()->set_code(3);
  RequestOutcome outcome = Request(nack);
  EXPECT_EQ(outcome.kind, RequestOutcome::Kind::kNack);
  EXPECT_EQ(outcome.error_detail, "(NACK without a message)");

  state_.SetSnapshot(Serve(Base()));
  DeltaDiscoveryRequest again;
  again.set_type_url(kRds);
  again.add_resource_names_subscribe("r2");
  Request(again);
  responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  DeltaDiscoveryRequest ack;
  ack.set_type_url(kRds);
  ack.set_response_nonce(responses[0].nonce());
  EXPECT_EQ(Request(ack).kind, RequestOutcome::Kind::kAck);
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
  (*request.mutable_initial_resource_versions())["c-prod"] = current;     // Equal: not resent.
  (*request.mutable_initial_resource_versions())["c-test"] = "old";       // Differs: resent.
  (*request.mutable_initial_resource_versions())["c-gone"] = "whatever";  // Gone: removed.
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

TEST_F(DeltaTest, WorkArrivingAfterACheckThatFoundNoneIsFound) {
  // As SotwTest's of the same name, through the delta request and the
  // delta response, which settles the check as it is decided.
  DeltaDiscoveryRequest request;
  request.set_type_url(kRds);
  request.add_resource_names_subscribe("r");
  Request(request);
  EXPECT_TRUE(state_.ResponseMayBeDue());
  DeltaDiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state_.NextResponse(&response, &record));
  EXPECT_FALSE(state_.ResponseMayBeDue());
  EXPECT_FALSE(state_.NextResponse(&response, &record));
  // A change to the name.
  auto objects = Base();
  objects[1] = Object(
      "r", "route",
      {{"{env: prod}", Route("c-test"), "prod"}, {"{env: {not: prod}}", Route("c-test"), "other"}});
  state_.AdoptSnapshot(Serve(objects));
  state_.MarkDirty(RouteConfigurationType(), "r");
  EXPECT_TRUE(state_.ResponseMayBeDue());
  auto responses = Drain();
  ASSERT_EQ(responses.size(), 1u);
  ASSERT_EQ(responses[0].resources_size(), 1);
  EXPECT_EQ(responses[0].resources(0).name(), "r");
  EXPECT_FALSE(state_.ResponseMayBeDue());
  // A request subscribing another name.
  DeltaDiscoveryRequest more;
  more.set_type_url(kRds);
  more.add_resource_names_subscribe("unknown");
  Request(more);
  EXPECT_TRUE(state_.ResponseMayBeDue());
  Drain();
  EXPECT_FALSE(state_.ResponseMayBeDue());
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
    forms.push_back(resource.has_resource_name()
                        ? "locator:" + ConstraintsOf(resource.resource_name())
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

}  // namespace
}  // namespace facet::xds
