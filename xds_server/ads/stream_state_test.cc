// StreamState: bounds, partial snapshots, demand and read restrictions, in
// either protocol.
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
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/ads/stream_state_test_support.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/names/names.h"
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
using stream_state_testing::Base;
using stream_state_testing::kCds;
using stream_state_testing::kEds;
using stream_state_testing::kLds;
using stream_state_testing::kRds;
using stream_state_testing::Names;
using stream_state_testing::NodeWith;
using stream_state_testing::Object;
using stream_state_testing::Serve;
using stream_state_testing::Sotw;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

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

// A request's outcome names its type without a copy: a served type by its
// ResourceType's URL, any other by the stream's own copy, which stays put as
// the stream takes more types.
TEST(StreamStateTest, OutcomesNameTheirTypeWhileTheStreamLives) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  state.SetSnapshot(Serve(Base()));
  RequestOutcome unserved;
  ASSERT_THAT(state.OnRequest(Sotw("t/u", {"x"}), &unserved), IsOk());
  RequestOutcome served;
  ASSERT_THAT(state.OnRequest(Sotw(kRds, {"r"}), &served), IsOk());
  for (const std::string& type : {kLds, kCds, kEds, std::string("type.example/b")}) {
    RequestOutcome outcome;
    ASSERT_THAT(state.OnRequest(Sotw(type, {"x"}), &outcome), IsOk());
  }
  EXPECT_EQ(unserved.type_url, "t/u");
  EXPECT_EQ(served.type_url.data(), RouteConfigurationType().type_url().data());
}

// Reports list the stream's types by URL, whatever order responses go in.
TEST(StreamStateTest, WatchesAreReportedInTypeUrlOrder) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  RequestOutcome outcome;
  for (const std::string& type : {kEds, kCds, kRds, kLds}) {
    ASSERT_THAT(state.OnRequest(Sotw(type, {"x"}), &outcome), IsOk());
  }
  std::vector<std::string> urls;
  for (const WatchChange& watch : state.Watches()) urls.push_back(watch.type_url);
  std::vector<std::string> sorted = urls;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(urls.size(), 4u);
  EXPECT_EQ(urls, sorted);
}

// The node of the first request that names one is the stream's, in node()
// and in the client's status, whatever later requests carry.
TEST(StreamStateTest, KeepsTheFirstNodeForReports) {
  StreamState state(Protocol::kSotw, std::make_shared<ParameterMapping>());
  state.SetSnapshot(Serve(Base()));
  EXPECT_FALSE(state.has_node());
  DiscoveryRequest first = Sotw(kRds, {"r"});
  first.mutable_node()->set_id("client-1");
  (*first.mutable_node()->mutable_metadata()->mutable_fields())["env"].set_string_value("prod");
  first.mutable_node()->add_client_features("feature-a");
  RequestOutcome outcome;
  ASSERT_THAT(state.OnRequest(first, &outcome), IsOk());
  DiscoveryRequest second = Sotw(kRds, {"r"});
  second.mutable_node()->set_id("client-2");
  ASSERT_THAT(state.OnRequest(second, &outcome), IsOk());

  ASSERT_TRUE(state.has_node());
  EXPECT_EQ(state.node().SerializeAsString(), first.node().SerializeAsString());
  ClientStatus status;
  size_t budget = 1 << 20;
  ASSERT_TRUE(state.DescribeClient(&status, &budget));
  EXPECT_EQ(status.node.id(), "client-1");
  EXPECT_EQ(status.node.metadata().fields().at("env").string_value(), "prod");
  EXPECT_EQ(status.parameters, (ParameterSet{{"env", "prod"}}));
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
  EXPECT_THAT(
      sotw.OnRequest(Sotw(std::string(StreamState::kMaxTypeUrlBytes + 1, 't'), {"x"}), &outcome),
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
  EXPECT_EQ(
      Constraint::Compile(response.resources(0).resource_name().dynamic_parameter_constraints())
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
  auto listener =
      std::make_shared<ServedResource>(*full->snapshot().Find(ListenerType(), "greeter"));
  auto resolution = std::make_shared<Resolution>();
  resolution->keys = std::set<std::string>{};
  resolution->known.insert(CanonicalParameters({}));
  listener->resolution = std::move(resolution);
  state.SetSnapshot(
      std::make_shared<ServingSnapshot>(Snapshot::Derive(partial->snapshot(), {listener}, {})));
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
  EXPECT_THAT(DemandText(state.TakeDemandChanges()), ElementsAre("+r {env=prod}", "+r {env=qa}"));
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
const std::string kSecureMissing = "xdstp://secure.example/envoy.config.cluster.v3.Cluster/missing";
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
      ResourceObject object =
          Object(ref, "cluster",
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
    Restrict("secure.example",
             std::vector<AllowedClient>{{AllowedClient::Kind::kSpiffeId, kAllowedId}});
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
    auto responses =
        Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(*state, DeltaSubscribe("*"));
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
    auto responses =
        Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(*state, DeltaSubscribe(kSecure));
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
  auto served =
      Exchange<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(*allowed, DeltaSubscribe(kSecure));
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

  Restrict("secure.example",
           std::vector<AllowedClient>{{AllowedClient::Kind::kSpiffeId, "spiffe://td/*"}});
  state->SetSnapshot(Build());
  DeltaDiscoveryResponse response;
  PushRecord record;
  ASSERT_TRUE(state->NextResponse(&response, &record));
  ASSERT_EQ(response.resources_size(), 1);
  EXPECT_EQ(response.resources(0).name(), kSecure);

  Restrict("secure.example",
           std::vector<AllowedClient>{{AllowedClient::Kind::kDnsName, "allowed.example"}});
  state->SetSnapshot(Build());
  ASSERT_TRUE(state->NextResponse(&response, &record));
  EXPECT_EQ(response.resources_size(), 0);
  EXPECT_THAT(response.removed_resources(), ElementsAre(kSecure));
  EXPECT_FALSE(state->NextResponse(&response, &record));
}

}  // namespace
}  // namespace facet::xds
