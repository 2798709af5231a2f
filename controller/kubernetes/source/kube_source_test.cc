#include "controller/kubernetes/source/kube_source.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/sources/manifest/gateway_test_manifests.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_kube_client.h"
#include "test/support/log_capture.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::FakeKubeClient;
using ::facet::testing::LogCapture;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kResources[] = "/apis/facet.dev/v1alpha1/xdsresources";
constexpr char kAuthorities[] = "/apis/facet.dev/v1alpha1/xdsauthorities";

// Polls `predicate` until it holds (the fake and the worker run on their own
// threads; there is no single event to wait for).
bool Eventually(const std::function<bool()>& predicate) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (predicate()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return predicate();
}

void ApplyExamples(FakeKubeClient& client) {
  for (const auto& entry : std::filesystem::directory_iterator(FACET_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    for (const YAML::Node& document : YAML::LoadAllFromFile(entry.path().string())) {
      if (!document.IsMap()) continue;
      const std::string kind = kube::StringAt(document, {"kind"});
      client.Put(kind == "XdsAuthority" ? kAuthorities : kResources, document);
    }
  }
}

std::string Condition(FakeKubeClient& client, const std::string& key, const std::string& type,
                      const std::string& field) {
  YAML::Node object = client.Objects(kResources)[key];
  for (const YAML::Node& c : kube::FieldAt(object, {"status", "conditions"})) {
    if (kube::StringAt(c, {"type"}) == type) return kube::StringAt(c, {field});
  }
  return "";
}

class KubeSourceTest : public ::testing::Test {
 protected:
  std::unique_ptr<KubeSource> Start(std::function<bool()> is_leader = nullptr) {
    KubeSource::Options options;
    options.debounce = absl::Milliseconds(5);
    options.status_resync = absl::Milliseconds(50);
    auto source = std::make_unique<KubeSource>(client_, store_, nullptr, std::move(is_leader), options);
    source->Start();
    return source;
  }
  // Starts a replica that does not lead (writes no status) on `store`.
  std::unique_ptr<KubeSource> StartFollower(xds::SnapshotStore& store) {
    KubeSource::Options options;
    options.debounce = absl::Milliseconds(5);
    auto source =
        std::make_unique<KubeSource>(client_, store, nullptr, [] { return false; }, options);
    source->Start();
    return source;
  }
  // Applies the examples (26 objects) and starts a source whose passes write
  // at most 5 statuses and, after the first, come only when asked for;
  // returns once the first pass has written.
  std::unique_ptr<KubeSource> StartWithFiveWritesPerPass() {
    ApplyExamples(client_);
    KubeSource::Options options;
    options.debounce = absl::Milliseconds(5);
    options.status_resync = absl::Hours(1);
    options.max_status_writes_per_pass = 5;
    options.status_backlog_retry = absl::Hours(1);
    auto source = std::make_unique<KubeSource>(client_, store_, nullptr, nullptr, options);
    source->Start();
    EXPECT_TRUE(Eventually([&] { return source->stats().status_writes >= 5; }));
    return source;
  }
  FakeKubeClient client_;
  xds::SnapshotStore store_;
};

TEST_F(KubeSourceTest, ServesTheClusterStateAndWritesStatus) {
  ApplyExamples(client_);
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  EXPECT_EQ(store_.Current()->size(), 24u);
  ASSERT_TRUE(Eventually([&] {
    return Condition(client_, "demo/greeter-routes", "Programmed", "status") == "True";
  }));
  EXPECT_EQ(Condition(client_, "demo/greeter-routes", "Accepted", "status"), "True");
  // Its own status writes come back as watch events, but change no spec:
  // they must not trigger rebuilds.
  absl::SleepFor(absl::Milliseconds(200));  // Several debounce and resync periods.
  EXPECT_EQ(source->stats().builds, 1);
  EXPECT_GE(source->stats().status_writes, 26);
  YAML::Node authority = client_.Objects(kAuthorities)["a-example"];
  // examples/20-authority-a.yaml declares 8 XdsResources under a.example.
  EXPECT_EQ(kube::StringAt(authority, {"status", "resources"}), "8");
}

TEST_F(KubeSourceTest, RejectedEditKeepsServingAndIsReportedDeletionRemoves) {
  ApplyExamples(client_);
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  const auto* before = store_.Current()->Find(xds::RouteConfigurationType(), "greeter");
  ASSERT_NE(before, nullptr);
  const std::string version = before->variants[0]->version;
  // Make two route variants overlap.
  YAML::Node route = YAML::Clone(client_.Objects(kResources)["demo/greeter-routes"]);
  route["spec"]["variants"][1]["match"] = route["spec"]["variants"][0]["match"];
  client_.Put(kResources, route);
  ASSERT_TRUE(Eventually([&] {
    return Condition(client_, "demo/greeter-routes", "Accepted", "reason") == "OverlappingVariants";
  }));
  EXPECT_EQ(Condition(client_, "demo/greeter-routes", "Programmed", "reason"), "ServingPreviousRevision");
  EXPECT_EQ(store_.Current()->Find(xds::RouteConfigurationType(), "greeter")->variants[0]->version, version);
  // Deleting the listener removes it for clients.
  ASSERT_TRUE(client_.Delete(kResources, "demo", "greeter-listener"));
  ASSERT_TRUE(Eventually([&] { return store_.Current()->Find(xds::ListenerType(), "greeter") == nullptr; }));
}

TEST_F(KubeSourceTest, OneWatchEventValidatesOneObject) {
  ApplyExamples(client_);
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  const int64_t loaded = source->stats().validated_objects;
  EXPECT_EQ(loaded, 24);
  const auto before = store_.Current();
  YAML::Node endpoints = YAML::Clone(client_.Objects(kResources)["demo/greeter-prod-endpoints"]);
  ASSERT_TRUE(endpoints["spec"]["variants"][0]["resource"]["endpoints"][0].IsDefined());
  endpoints["spec"]["variants"][0]["resource"]["endpoints"][0]["load_balancing_weight"] = 7;
  client_.Put(kResources, endpoints);
  ASSERT_TRUE(Eventually([&] { return store_.Current() != before; }));
  EXPECT_EQ(source->stats().validated_objects, loaded + 1);
  const xds::ChangeSet& changes = store_.Current()->changes();
  EXPECT_FALSE(changes.all);
  EXPECT_EQ(changes.size(), 1u);
}

constexpr char kRevisions[] = "/apis/apps/v1/controllerrevisions";

TEST_F(KubeSourceTest, ReplicaStartedWhileAnObjectIsInvalidServesItsLastGoodRevision) {
  ApplyExamples(client_);
  // A newer revision of a GRPCRoute with the route's name: another history.
  client_.Put(kRevisions, YAML::Load(
      "{apiVersion: apps/v1, kind: ControllerRevision, metadata: {name: greeter-routes-0123456789, "
      "namespace: demo, labels: {facet.dev/revision-of: GRPCRoute, facet.dev/owner: "
      "greeter-routes}, ownerReferences: [{apiVersion: gateway.networking.k8s.io/v1, kind: "
      "GRPCRoute, name: greeter-routes, uid: uid-route, controller: true}]}, data: {spec: "
      "{parentRefs: [{group: '', kind: Service, name: greeter, port: 50051}]}}, revision: 99}"));
  auto first = Start();
  ASSERT_TRUE(Eventually([&] { return first->ready(); }));
  // The leader records every accepted object's spec.
  ASSERT_TRUE(Eventually([&] { return client_.Objects(kRevisions).size() == 25; }));
  const std::string version =
      store_.Current()->Find(xds::RouteConfigurationType(), "greeter")->variants[0]->version;
  const std::string served_version = store_.Current()->version();
  YAML::Node route = YAML::Clone(client_.Objects(kResources)["demo/greeter-routes"]);
  route["spec"]["variants"][1]["match"] = route["spec"]["variants"][0]["match"];
  client_.Put(kResources, route);
  ASSERT_TRUE(Eventually([&] {
    return Condition(client_, "demo/greeter-routes", "Accepted", "reason") == "OverlappingVariants";
  }));
  first.reset();

  // A replica starting now never saw the route valid.
  xds::SnapshotStore fresh_store;
  std::unique_ptr<KubeSource> second = StartFollower(fresh_store);
  ASSERT_TRUE(Eventually([&] { return second->ready(); }));
  const xds::ServedResource* served =
      fresh_store.Current()->Find(xds::RouteConfigurationType(), "greeter");
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->variants[0]->version, version);
  EXPECT_EQ(fresh_store.Current()->version(), served_version);
  EXPECT_NE(fresh_store.Current()->Find(xds::ListenerType(), "greeter"), nullptr);

  // Deleting the object deletes its revisions, not the GRPCRoute's.
  ASSERT_TRUE(client_.Delete(kResources, "demo", "greeter-routes"));
  for (const auto& [key, revision] : client_.Objects(kRevisions)) {
    EXPECT_NE(OwnerKeyOf(revision), "XdsResource/demo/greeter-routes") << key;
  }
  EXPECT_EQ(client_.Objects(kRevisions).count("demo/greeter-routes-0123456789"), 1u);
  second->Stop();
}

constexpr char kSlices[] = "/apis/discovery.k8s.io/v1/endpointslices";

YAML::Node GreeterSlice(const std::string& ns, const std::string& name,
                        const std::string& endpoints) {
  return YAML::Load("{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: " +
                    name + ", namespace: " + ns +
                    ", labels: {kubernetes.io/service-name: greeter}}, addressType: IPv4, "
                    "ports: [{name: grpc, port: 50051}], endpoints: " + endpoints + "}");
}

std::vector<std::string> Addresses(const xds::SnapshotStore& store) {
  std::vector<std::string> out;
  const xds::ServedResource* served =
      store.Current()->Find(xds::ClusterLoadAssignmentType(), "greeter-live");
  if (served == nullptr) return {"(not served)"};
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.ParseFromString(served->variants[0]->serialized);
  for (const auto& locality : cla.endpoints()) {
    for (const auto& endpoint : locality.lb_endpoints()) {
      out.push_back(absl::StrCat(locality.locality().zone(), "/",
                                 endpoint.endpoint().address().socket_address().address(), ":",
                                 endpoint.endpoint().address().socket_address().port_value()));
    }
  }
  return out;
}

TEST_F(KubeSourceTest, EndpointsFollowTheServicesSlices) {
  client_.Put(kResources, YAML::Load(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: greeter-live, "
      "namespace: demo}, spec: {type: endpoint, name: greeter-live, variants: [{endpointsFrom: "
      "{service: greeter, port: grpc}}]}}"));
  client_.Put(kSlices, GreeterSlice("demo", "greeter-abc",
                                    "[{addresses: [10.0.0.1], zone: a}, {addresses: [10.0.0.2], "
                                    "zone: a, conditions: {ready: false}}]"));
  // Same Service name in another namespace: never used.
  client_.Put(kSlices, GreeterSlice("other", "greeter-xyz", "[{addresses: [10.9.9.9]}]"));
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  EXPECT_THAT(Addresses(store_), ::testing::ElementsAre("a/10.0.0.1:50051"));

  // A new pod turns ready in a second slice: one object rebuilt.
  const int64_t validated = source->stats().validated_objects;
  client_.Put(kSlices, GreeterSlice("demo", "greeter-def", "[{addresses: [10.0.0.3], zone: b}]"));
  ASSERT_TRUE(Eventually([&] { return Addresses(store_).size() == 2; }));
  EXPECT_THAT(Addresses(store_), ::testing::ElementsAre("a/10.0.0.1:50051", "b/10.0.0.3:50051"));
  EXPECT_EQ(source->stats().validated_objects, validated + 1);

  // A rolling update: 100 slice changes paced over about 200 ms (as pods
  // turn ready one by one) make a few builds, not one per change.
  const int64_t builds = source->stats().builds;
  for (int i = 0; i < 100; ++i) {
    client_.Put(kSlices, GreeterSlice("demo", "greeter-def",
                                      "[{addresses: [10.0.1." + std::to_string(i) + "], zone: b}]"));
    absl::SleepFor(absl::Milliseconds(2));  // The pace of the rollout, not a wait.
  }
  ASSERT_TRUE(Eventually([&] {
    return Addresses(store_) ==
           std::vector<std::string>{"a/10.0.0.1:50051", "b/10.0.1.99:50051"};
  }));
  EXPECT_LE(source->stats().builds - builds, 6) << "builds: " << source->stats().builds - builds;

  // Every slice gone: no endpoints, and a warning in status.
  ASSERT_TRUE(client_.Delete(kSlices, "demo", "greeter-abc"));
  ASSERT_TRUE(client_.Delete(kSlices, "demo", "greeter-def"));
  ASSERT_TRUE(Eventually([&] { return Addresses(store_).empty(); }));
  bool warned = false;
  for (const auto& status : source->statuses()) {
    for (const auto& finding : status.findings) {
      warned = warned || absl::StrContains(finding.message, "no ready endpoints");
    }
  }
  EXPECT_TRUE(warned);
}

TEST_F(KubeSourceTest, StatusWritesPerPassAreBounded) {
  std::unique_ptr<KubeSource> source = StartWithFiveWritesPerPass();
  absl::SleepFor(absl::Milliseconds(200));  // Nothing more may be written meanwhile.
  EXPECT_EQ(source->stats().status_writes, 5);  // 26 objects need writing; 5 per pass.
  source->RequestStatusSync();
  ASSERT_TRUE(Eventually([&] { return source->stats().status_writes >= 10; }));
  source->Stop();
}

// The collection paths and keys of the objects whose stored status is set.
std::set<std::pair<std::string, std::string>> WithStatus(FakeKubeClient& client) {
  std::set<std::pair<std::string, std::string>> keys;
  for (const char* collection : {kResources, kAuthorities}) {
    for (const auto& [key, object] : client.Objects(collection)) {
      if (kube::FieldAt(object, {"status"}).IsDefined()) keys.insert({collection, key});
    }
  }
  return keys;
}

TEST_F(KubeSourceTest, AStatusPassGoesOnWhereThePreviousStoppedAtItsBudget) {
  std::unique_ptr<KubeSource> source = StartWithFiveWritesPerPass();
  absl::SleepFor(absl::Milliseconds(200));
  const std::set<std::pair<std::string, std::string>> first = WithStatus(client_);
  ASSERT_EQ(first.size(), 5u);
  // Their statuses differ from what Facet wants again (as client counts do
  // under churn): the next pass must still reach the objects after them.
  for (const auto& [collection, key] : first) {
    YAML::Node object = client_.Objects(collection)[key];
    object.remove("status");
    client_.Put(collection, object);
  }
  ASSERT_TRUE(Eventually([&] { return WithStatus(client_).empty(); }));
  source->RequestStatusSync();
  ASSERT_TRUE(Eventually([&] { return source->stats().status_writes >= 10; }));
  const std::set<std::pair<std::string, std::string>> second = WithStatus(client_);
  EXPECT_EQ(second.size(), 5u);
  for (const auto& written : second) {
    EXPECT_EQ(first.count(written), 0u) << written.second << " written again";
  }
  source->Stop();
}

TEST_F(KubeSourceTest, BuildsStartNoStatusPassSoonerThanTheIntervalAfterThePrevious) {
  std::unique_ptr<KubeSource> source = StartWithFiveWritesPerPass();
  const int64_t builds = source->stats().builds;
  // A spec change changes a status; its build must not start a pass (with a
  // fresh budget) within the interval.
  YAML::Node routes = client_.Objects(kResources)["demo/greeter-routes"];
  routes["spec"]["variants"].remove(0);
  client_.Put(kResources, routes);
  ASSERT_TRUE(Eventually([&] { return source->stats().builds > builds; }));
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(source->stats().status_writes, 5);
  // Asked for (a new leader): at once.
  source->RequestStatusSync();
  ASSERT_TRUE(Eventually([&] { return source->stats().status_writes >= 10; }));
  source->Stop();
}

TEST_F(KubeSourceTest, FollowersDoNotWriteStatus) {
  ApplyExamples(client_);
  auto source = Start([] { return false; });
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  absl::SleepFor(absl::Milliseconds(200));  // Several resync periods: still nothing written.
  EXPECT_EQ(Condition(client_, "demo/greeter-routes", "Accepted", "status"), "");
  EXPECT_EQ(source->stats().status_writes, 0);
}

// Forwards to a FakeKubeClient, but fails every status write with
// `message` (an API server's error may quote what an object's author wrote).
class FailingStatusWrites final : public kube::KubeClient {
 public:
  FailingStatusWrites(FakeKubeClient& fake, std::string message)
      : fake_(fake), message_(std::move(message)) {}
  absl::StatusOr<kube::ListResult> List(const std::string& collection_path,
                                        const kube::ListOptions& options) override {
    return fake_.List(collection_path, options);
  }
  absl::StatusOr<std::unique_ptr<kube::WatchHandle>> Watch(
      const std::string& collection_path, const kube::WatchOptions& options,
      std::function<void(kube::WatchEvent)> on_event,
      std::function<void(absl::Status)> on_end) override {
    return fake_.Watch(collection_path, options, std::move(on_event), std::move(on_end));
  }
  absl::StatusOr<YAML::Node> Get(const std::string& path) override { return fake_.Get(path); }
  absl::StatusOr<YAML::Node> Create(const std::string& collection_path,
                                    const std::string& json) override {
    return fake_.Create(collection_path, json);
  }
  absl::StatusOr<YAML::Node> Update(const std::string& path, const std::string& json) override {
    if (absl::EndsWith(path, "/status")) return absl::InvalidArgumentError(message_);
    return fake_.Update(path, json);
  }
  absl::Status Delete(const std::string& path) override { return fake_.Delete(path); }

 private:
  FakeKubeClient& fake_;
  const std::string message_;
};

// What a build finds is logged as `facet serve` logs it (one publisher for
// both sources): errors at error level, warnings, a rejected revision whose
// predecessor keeps serving; and whatever the objects' authors control, in
// findings and in the API server's answers to status writes, is escaped.
TEST_F(KubeSourceTest, LogsFindingsAsTheManifestSourceDoesWithAuthorsTextEscaped) {
  const std::string endpoints =
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: web-endpoints, "
      "namespace: demo}, spec: {type: endpoint, name: web, variants: [{resource: RESOURCE}]}}";
  auto with = [&](const std::string& resource) {
    std::string text = endpoints;
    text.replace(text.find("RESOURCE"), 8, resource);
    return YAML::Load(text);
  };
  client_.Put(kResources, with("{endpoints: []}"));
  client_.Put(kResources, YAML::Load(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: live-endpoints, "
      "namespace: demo}, spec: {type: endpoint, name: live, variants: [{endpointsFrom: "
      "{service: \"svc\\n[warning] forged\", port: grpc}}]}}"));
  FailingStatusWrites client(client_, "status is invalid: \"x\n[error] forged\"");
  LogCapture log;
  KubeSource::Options options;
  options.debounce = absl::Milliseconds(5);
  auto source = std::make_unique<KubeSource>(client, store_, nullptr, nullptr, options);
  source->Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  client_.Put(kResources, with("{\"bad\\n[error] forged\": 1}"));
  ASSERT_TRUE(Eventually([&] { return source->stats().rejected_objects == 1; }));
  ASSERT_TRUE(Eventually([&] { return source->stats().status_errors >= 2; }));
  source->Stop();

  const std::string text = log.text();
  // Findings, reported by the publisher as for manifests (its tests have
  // the details).
  EXPECT_THAT(text, HasSubstr("[error] demo/web-endpoints: spec.variants[0].resource.bad\\n"
                              "[error] forged: unknown field"));
  EXPECT_THAT(text, HasSubstr("demo/web-endpoints: rejected; its previous revision keeps serving"));
  EXPECT_THAT(text, HasSubstr("[warning] demo/live-endpoints: spec.variants[0].endpointsFrom: "
                              "warning: Service svc\\n[warning] forged has no ready endpoints"));
  // The source's own status writes.
  EXPECT_THAT(text, HasSubstr("[warning] demo/web-endpoints: writing status: status is invalid: "
                              "\"x\\n[error] forged\""));
  EXPECT_THAT(text, Not(HasSubstr("\n[error] forged")));
  EXPECT_THAT(text, Not(HasSubstr("\n[warning] forged")));
}

TEST_F(KubeSourceTest, ReportsTheTimeFromAWatchEventToItsPublication) {
  ApplyExamples(client_);
  absl::Mutex mu;
  std::vector<PublishTiming> timings;
  KubeSource::Options options;
  options.debounce = absl::Milliseconds(50);
  options.on_published = [&](const PublishTiming& timing) {
    absl::MutexLock lock(&mu);
    timings.push_back(timing);
  };
  auto source = std::make_unique<KubeSource>(client_, store_, nullptr, [] { return false; },
                                             options);
  source->Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  const auto before = store_.Current();
  YAML::Node endpoints = YAML::Clone(client_.Objects(kResources)["demo/greeter-prod-endpoints"]);
  endpoints["spec"]["variants"][0]["resource"]["endpoints"][0]["load_balancing_weight"] = 7;
  client_.Put(kResources, endpoints);
  ASSERT_TRUE(Eventually([&] { return store_.Current() != before; }));
  source->Stop();  // The worker reports after publishing: wait for it.
  absl::MutexLock lock(&mu);
  ASSERT_EQ(timings.size(), 2u);  // The first snapshot, then the edit's.
  // Measured from the watch event, not from the build: the worker waited
  // out the debounce first.
  EXPECT_GE(timings[1].since_change, absl::Milliseconds(50));
  EXPECT_GE(timings[1].since_change, timings[1].build);
}


// --- Gateway API objects ------------------------------------------------------

constexpr char kServices[] = "/api/v1/services";
constexpr char kRoutes[] = "/apis/gateway.networking.k8s.io/v1/grpcroutes";
constexpr char kGrants[] = "/apis/gateway.networking.k8s.io/v1beta1/referencegrants";
constexpr char kPolicies[] = "/apis/facet.dev/v1alpha1/xdsvariantpolicies";
using ::facet::controller::testing::GreeterManifests;
using ::facet::controller::testing::kGreeterName;

// Puts GreeterManifests(`method`) (Service, EndpointSlice, GRPCRoute
// demo/greeter) into the fake's collections.
void ApplyGreeter(FakeKubeClient& client, const std::string& method = "{service: Echo}") {
  for (const YAML::Node& document : YAML::LoadAll(GreeterManifests(method))) {
    const std::string kind = kube::StringAt(document, {"kind"});
    client.Put(kind == "Service" ? kServices : kind == "GRPCRoute" ? kRoutes : kSlices, document);
  }
}

// The entries of the route's status.parents as "controllerName name Accepted=status@generation".
std::vector<std::string> RouteParents(FakeKubeClient& client) {
  std::vector<std::string> out;
  YAML::Node route = client.Objects(kRoutes)["demo/greeter"];
  for (const YAML::Node& parent : kube::FieldAt(route, {"status", "parents"})) {
    std::string accepted = "none";
    for (const YAML::Node& c : kube::FieldAt(parent, {"conditions"})) {
      if (kube::StringAt(c, {"type"}) == "Accepted") {
        accepted = kube::StringAt(c, {"status"}) + "@" + kube::StringAt(c, {"observedGeneration"});
      }
    }
    out.push_back(absl::StrCat(kube::StringAt(parent, {"controllerName"}), " ",
                               kube::StringAt(parent, {"parentRef", "name"}), " Accepted=",
                               accepted));
  }
  return out;
}

const xds::ServedResource* Greeter(const xds::SnapshotStore& store, const xds::ResourceType& type) {
  return store.Current() == nullptr ? nullptr : store.Current()->Find(type, kGreeterName);
}

size_t ListCallsTo(const FakeKubeClient& client, const std::string& collection) {
  size_t calls = 0;
  for (const auto& call : client.list_calls()) calls += call.path == collection ? 1 : 0;
  return calls;
}

TEST_F(KubeSourceTest, GrpcRoutesAreServedAndTheirStatusWrittenBesideOtherControllers) {
  ApplyGreeter(client_);
  // Another controller's entry, written before Facet's.
  YAML::Node route = client_.Objects(kRoutes)["demo/greeter"];
  route["status"] = YAML::Load(
      "{parents: [{parentRef: {group: '', kind: Service, name: greeter}, controllerName: "
      "istio.io/gateway-controller, conditions: [{type: Accepted, status: 'False', reason: "
      "NoMatchingParent, message: m, observedGeneration: 1, lastTransitionTime: "
      "'2026-01-01T00:00:00Z'}]}]}");
  client_.Put(kRoutes, route);
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  EXPECT_NE(Greeter(store_, xds::ListenerType()), nullptr);
  EXPECT_NE(Greeter(store_, xds::RouteConfigurationType()), nullptr);
  EXPECT_NE(Greeter(store_, xds::ClusterLoadAssignmentType()), nullptr);
  ASSERT_TRUE(Eventually([&] { return RouteParents(client_).size() == 2; }));
  EXPECT_THAT(RouteParents(client_),
              ::testing::ElementsAre("istio.io/gateway-controller greeter Accepted=False@1",
                                     "facet.dev/gateway-controller greeter Accepted=True@1"));
  // Its accepted spec is recorded, as a GRPCRoute's revision.
  ASSERT_TRUE(Eventually([&] { return client_.Objects(kRevisions).size() == 1; }));
  EXPECT_EQ(OwnerKeyOf(client_.Objects(kRevisions).begin()->second), "GRPCRoute/demo/greeter");
  // The status write comes back as a watch event of the same generation:
  // nothing is handed to the front end, translated or built again.
  EXPECT_EQ(source->stats().gateway_upserts, 3);  // Service, slice, route.
  absl::SleepFor(absl::Milliseconds(200));  // Several debounce and resync periods.
  EXPECT_EQ(source->stats().gateway_upserts, 3);
  EXPECT_EQ(source->stats().builds, 1);
  EXPECT_EQ(source->stats().gateway_kinds,
            (std::map<std::string, bool>{
                {"GRPCRoute", true}, {"ReferenceGrant", true}, {"XdsVariantPolicy", true}}));
}

TEST_F(KubeSourceTest, AnEndpointSliceEditReachesTheGeneratedAssignment) {
  ApplyGreeter(client_);
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  const xds::ServedResource* before = Greeter(store_, xds::ClusterLoadAssignmentType());
  ASSERT_NE(before, nullptr);
  const std::string version = before->variants[0]->version;
  const std::string route_version =
      Greeter(store_, xds::RouteConfigurationType())->variants[0]->version;
  YAML::Node slice = client_.Objects(kSlices)["demo/greeter-1"];
  slice["endpoints"][0]["addresses"][0] = "10.0.0.2";
  client_.Put(kSlices, slice);
  ASSERT_TRUE(Eventually([&] {
    return Greeter(store_, xds::ClusterLoadAssignmentType())->variants[0]->version != version;
  }));
  EXPECT_EQ(Greeter(store_, xds::RouteConfigurationType())->variants[0]->version, route_version);
  EXPECT_EQ(store_.Current()->changes().size(), 1u);
}

TEST_F(KubeSourceTest, AbsentGatewayKindsDoNotBlockPublishingAndAreWatchedOnceServed) {
  for (const char* collection : {kRoutes, kGrants, kPolicies}) client_.SetServed(collection, false);
  ApplyGreeter(client_);
  ApplyExamples(client_);
  LogCapture log;
  KubeSource::Options options;
  options.debounce = absl::Milliseconds(5);
  options.status_resync = absl::Milliseconds(50);
  options.gateway_discovery_interval = absl::Milliseconds(100);
  auto source = std::make_unique<KubeSource>(client_, store_, nullptr, nullptr, options);
  source->Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  // XdsResources and the Service's own routes are served; no GRPCRoute.
  EXPECT_NE(store_.Current()->Find(xds::RouteConfigurationType(), "greeter"), nullptr);
  ASSERT_NE(Greeter(store_, xds::RouteConfigurationType()), nullptr);
  EXPECT_EQ(ListCallsTo(client_, kRoutes), 0u);
  EXPECT_EQ(source->stats().gateway_kinds,
            (std::map<std::string, bool>{
                {"GRPCRoute", false}, {"ReferenceGrant", false}, {"XdsVariantPolicy", false}}));
  // Looked for again, the warning is not repeated.
  const size_t lists = client_.list_calls().size();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(client_.list_calls().size(), lists);
  EXPECT_EQ(source->stats().builds, 1);
  const std::string text = log.text();
  const std::string warning = "Gateway API kind GRPCRoute: the API server's discovery does not list";
  ASSERT_THAT(text, HasSubstr(warning));
  EXPECT_EQ(text.find(warning), text.rfind(warning));

  // The CRD is installed: its objects are watched and served.
  client_.SetServed(kRoutes, true);
  ASSERT_TRUE(Eventually([&] { return RouteParents(client_).size() == 1; }));
  EXPECT_THAT(RouteParents(client_),
              ::testing::ElementsAre("facet.dev/gateway-controller greeter Accepted=True@1"));
  EXPECT_EQ(source->stats().gateway_kinds.at("GRPCRoute"), true);
  EXPECT_EQ(source->stats().gateway_kinds.at("ReferenceGrant"), false);
  source->Stop();
}

// Discovery that fails says nothing about the kind: the first snapshot waits
// for an answer (asked again within a second), which never happens for a
// kind discovery says is absent.
TEST_F(KubeSourceTest, FailedDiscoveryIsAskedAgainBeforeTheFirstSnapshot) {
  ApplyGreeter(client_);
  for (int i = 0; i < 3; ++i) client_.FailNextGet(FakeKubeClient::ConnectionRefusedError());
  LogCapture log;
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  ASSERT_TRUE(Eventually([&] { return RouteParents(client_).size() == 1; }));
  EXPECT_EQ(source->stats().gateway_kinds.at("GRPCRoute"), true);
  EXPECT_THAT(log.text(), HasSubstr("Gateway API kind GRPCRoute: asking discovery "
                                    "(/apis/gateway.networking.k8s.io/v1) failed, retrying"));
  // Its first snapshot has the route: it waited for discovery.
  EXPECT_EQ(source->stats().builds, 1);
  source->Stop();
}

TEST_F(KubeSourceTest, GatewayApiOffWatchesAndGeneratesNothing) {
  ApplyGreeter(client_);
  ApplyExamples(client_);
  KubeSource::Options options;
  options.debounce = absl::Milliseconds(5);
  options.gateway_api = false;
  auto source = std::make_unique<KubeSource>(client_, store_, nullptr, nullptr, options);
  source->Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  EXPECT_EQ(store_.Current()->size(), 24u);
  EXPECT_EQ(Greeter(store_, xds::ListenerType()), nullptr);
  for (const char* collection : {kServices, kRoutes, kGrants, kPolicies}) {
    EXPECT_EQ(ListCallsTo(client_, collection), 0u) << collection;
  }
  EXPECT_TRUE(source->stats().gateway_kinds.empty());
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(kube::FieldAt(client_.Objects(kRoutes)["demo/greeter"], {"status"}).IsDefined());
}

// Routes' statuses go through the pass that writes XdsResources': only
// while leading, at most max_status_writes_per_pass per pass, the next pass
// going on where the budget ran out.
TEST_F(KubeSourceTest, RouteStatusesShareTheLeaderGateAndTheWriteBudget) {
  ApplyGreeter(client_);
  const YAML::Node route = client_.Objects(kRoutes)["demo/greeter"];
  for (int i = 0; i < 7; ++i) {
    YAML::Node copy = YAML::Clone(route);
    copy["metadata"]["name"] = absl::StrCat("greeter-", i);
    copy["metadata"].remove("uid");
    client_.Put(kRoutes, copy);
  }
  std::atomic<bool> leading{false};
  KubeSource::Options options;
  options.debounce = absl::Milliseconds(5);
  options.status_resync = absl::Hours(1);
  options.max_status_writes_per_pass = 5;
  options.status_backlog_retry = absl::Hours(1);
  auto source = std::make_unique<KubeSource>(client_, store_, nullptr,
                                             [&leading] { return leading.load(); }, options);
  source->Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  auto with_status = [&] {
    int count = 0;
    for (const auto& [key, object] : client_.Objects(kRoutes)) {
      count += kube::FieldAt(object, {"status"}).IsDefined() ? 1 : 0;
    }
    return count;
  };
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(with_status(), 0);  // A follower writes nothing.
  leading = true;
  source->RequestStatusSync();
  ASSERT_TRUE(Eventually([&] { return source->stats().status_writes >= 5; }));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(with_status(), 5);
  source->RequestStatusSync();
  // The pass counts its writes once it ends, after the objects show them.
  ASSERT_TRUE(Eventually([&] { return source->stats().status_writes >= 8; }));
  EXPECT_EQ(with_status(), 8);
  EXPECT_EQ(source->stats().status_writes, 8);
  source->Stop();
}

TEST_F(KubeSourceTest, ReplicaStartedWhileAGrpcRouteIsInvalidServesItsLastGoodRevision) {
  ApplyGreeter(client_);
  auto first = Start();
  ASSERT_TRUE(Eventually([&] { return first->ready(); }));
  ASSERT_TRUE(Eventually([&] { return client_.Objects(kRevisions).size() == 1; }));
  const std::string version = Greeter(store_, xds::RouteConfigurationType())->variants[0]->version;
  // An edit no rule of which is valid.
  YAML::Node route = client_.Objects(kRoutes)["demo/greeter"];
  route["metadata"]["generation"] = 2;
  route["spec"]["rules"][0]["matches"][0]["method"] =
      YAML::Load("{type: RegularExpression, service: '('}");
  client_.Put(kRoutes, route);
  ASSERT_TRUE(Eventually([&] {
    return RouteParents(client_) ==
           std::vector<std::string>{"facet.dev/gateway-controller greeter Accepted=False@2"};
  }));
  // The last accepted generation keeps serving, and no revision of the
  // invalid one is written.
  EXPECT_EQ(Greeter(store_, xds::RouteConfigurationType())->variants[0]->version, version);
  EXPECT_EQ(client_.Objects(kRevisions).size(), 1u);
  first.reset();

  // A replica starting now never saw the route valid: the revision says
  // what served.
  xds::SnapshotStore fresh_store;
  std::unique_ptr<KubeSource> second = StartFollower(fresh_store);
  ASSERT_TRUE(Eventually([&] { return second->ready(); }));
  ASSERT_NE(Greeter(fresh_store, xds::RouteConfigurationType()), nullptr);
  EXPECT_EQ(Greeter(fresh_store, xds::RouteConfigurationType())->variants[0]->version, version);
  second->Stop();
}

}  // namespace
}  // namespace facet::controller
