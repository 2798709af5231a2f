#include "controller/kube_source/kube_source.h"

#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "controller/kube/yaml_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::FakeKubeClient;

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
  FakeKubeClient client_;
  xds::SnapshotStore store_;
};

TEST_F(KubeSourceTest, ServesTheClusterStateAndWritesStatus) {
  ApplyExamples(client_);
  auto source = Start();
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  EXPECT_EQ(store_.Current()->size(), 22u);
  ASSERT_TRUE(Eventually([&] {
    return Condition(client_, "demo/greeter-routes", "Programmed", "status") == "True";
  }));
  EXPECT_EQ(Condition(client_, "demo/greeter-routes", "Accepted", "status"), "True");
  // Its own status writes come back as watch events, but change no spec:
  // they must not trigger rebuilds.
  absl::SleepFor(absl::Milliseconds(200));  // Several debounce and resync periods.
  EXPECT_EQ(source->stats().builds, 1);
  EXPECT_GE(source->stats().status_writes, 24);
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
  EXPECT_EQ(loaded, 22);
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
  auto first = Start();
  ASSERT_TRUE(Eventually([&] { return first->ready(); }));
  // The leader records every accepted object's spec.
  ASSERT_TRUE(Eventually([&] { return client_.Objects(kRevisions).size() == 22; }));
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
  KubeSource::Options options;
  options.debounce = absl::Milliseconds(5);
  KubeSource second(client_, fresh_store, nullptr, [] { return false; }, options);
  second.Start();
  ASSERT_TRUE(Eventually([&] { return second.ready(); }));
  const xds::ServedResource* served =
      fresh_store.Current()->Find(xds::RouteConfigurationType(), "greeter");
  ASSERT_NE(served, nullptr);
  EXPECT_EQ(served->variants[0]->version, version);
  EXPECT_EQ(fresh_store.Current()->version(), served_version);
  EXPECT_NE(fresh_store.Current()->Find(xds::ListenerType(), "greeter"), nullptr);

  // Deleting the object deletes its revisions.
  ASSERT_TRUE(client_.Delete(kResources, "demo", "greeter-routes"));
  for (const auto& [key, revision] : client_.Objects(kRevisions)) {
    EXPECT_NE(OwnerKeyOf(revision), "demo/greeter-routes") << key;
  }
  second.Stop();
}

TEST_F(KubeSourceTest, FollowersDoNotWriteStatus) {
  ApplyExamples(client_);
  auto source = Start([] { return false; });
  ASSERT_TRUE(Eventually([&] { return source->ready(); }));
  absl::SleepFor(absl::Milliseconds(200));  // Several resync periods: still nothing written.
  EXPECT_EQ(Condition(client_, "demo/greeter-routes", "Accepted", "status"), "");
  EXPECT_EQ(source->stats().status_writes, 0);
}

}  // namespace
}  // namespace facet::controller
