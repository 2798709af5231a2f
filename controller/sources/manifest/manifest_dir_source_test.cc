#include "controller/sources/manifest/manifest_dir_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/sources/manifest/gateway_test_manifests.h"
#include "controller/sources/manifest/manifest_build.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;
using ::facet::controller::testing::GreeterManifests;
using ::facet::controller::testing::kGreeterName;
using ::facet::controller::testing::kGreeterPolicy;

constexpr char kEndpoints[] = R"(apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: NAME, namespace: demo}
spec:
  type: endpoint
  name: NAME
  variants:
  - resource: {endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: PORT}}}}]}]}
)";

std::string Endpoints(const std::string& name, int port) {
  std::string text = kEndpoints;
  for (size_t pos; (pos = text.find("NAME")) != std::string::npos;) text.replace(pos, 4, name);
  text.replace(text.find("PORT"), 4, std::to_string(port));
  return text;
}

// Collects published snapshots; waits on a condition, not a sleep.
class Published {
 public:
  explicit Published(xds::SnapshotStore& store)
      : handle_(store.Watch([this](std::shared_ptr<const xds::Snapshot> s) {
          absl::MutexLock lock(&mu_);
          snapshots_.push_back(std::move(s));
        })) {}

  // Waits until a snapshot satisfying `predicate` is published.
  bool WaitFor(std::function<bool(const xds::Snapshot&)> predicate) {
    absl::MutexLock lock(&mu_);
    auto ready = [&] {
      mu_.AssertHeld();
      for (const auto& s : snapshots_) {
        if (predicate(*s)) return true;
      }
      return false;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(10));
  }
  size_t count() {
    absl::MutexLock lock(&mu_);
    return snapshots_.size();
  }
  std::vector<std::shared_ptr<const xds::Snapshot>> all() {
    absl::MutexLock lock(&mu_);
    return snapshots_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::shared_ptr<const xds::Snapshot>> snapshots_ ABSL_GUARDED_BY(mu_);
  xds::SnapshotStore::WatchHandle handle_;
};

uint32_t PortOf(const xds::Snapshot& snapshot, const std::string& name) {
  const xds::ServedResource* resource =
      snapshot.Find(xds::ClusterLoadAssignmentType(), name);
  if (resource == nullptr) return 0;
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.ParseFromString(resource->variants[0]->serialized);
  return cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value();
}

class ManifestDirSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    // Write then rename, as editors do, so the source never sees half a file.
    std::ofstream(dir_ / (name + ".tmp")) << text;
    fs::rename(dir_ / (name + ".tmp"), dir_ / name);
  }
  // Options that poll every 10 ms instead of using inotify.
  ManifestDirSource::Options Polling() {
    ManifestDirSource::Options options;
    options.directory = dir_.string();
    options.poll_interval = std::chrono::milliseconds(10);
    options.force_poll = true;
    return options;
  }
  // Options that rely on inotify alone: no poll or rescan within a test.
  ManifestDirSource::Options InotifyOnly() {
    ManifestDirSource::Options options;
    options.directory = dir_.string();
    options.poll_interval = std::chrono::hours(1);
    options.rescan_interval = std::chrono::hours(1);
    return options;
  }
  // InotifyOnly, building a burst of events once it is `quiet`, at the
  // latest `coalesce` after its first event.
  ManifestDirSource::Options Batching(std::chrono::milliseconds quiet,
                                      std::chrono::milliseconds coalesce) {
    ManifestDirSource::Options options = InotifyOnly();
    options.quiet = quiet;
    options.coalesce = coalesce;
    return options;
  }
  std::unique_ptr<ManifestDirSource> Start(xds::SnapshotStore& store) {
    return Start(store, Polling());
  }
  std::unique_ptr<ManifestDirSource> Start(xds::SnapshotStore& store,
                                           ManifestDirSource::Options options) {
    auto source = std::make_unique<ManifestDirSource>(options, store);
    source->Start();
    return source;
  }
  fs::path dir_;
};

TEST_F(ManifestDirSourceTest, PublishesOnStartAndFollowsEditsAdditionsAndDeletions) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store);
  EXPECT_EQ(PortOf(*store.Current(), "a"), 1u);
  Write("a.yaml", Endpoints("a", 2) + "# a longer file\n");
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  Write("b.yaml", Endpoints("b", 3));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "b") == 3; }));
  fs::remove(dir_ / "b.yaml");
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return s.Find(xds::ClusterLoadAssignmentType(), "b") == nullptr && PortOf(s, "a") == 2;
  }));
}

// The names of the routes of the RouteConfiguration `name` serves.
std::vector<std::string> RouteNames(const xds::Snapshot& snapshot, const std::string& name) {
  const xds::ServedResource* resource = snapshot.Find(xds::RouteConfigurationType(), name);
  if (resource == nullptr) return {};
  envoy::config::route::v3::RouteConfiguration config;
  config.ParseFromString(resource->variants[0]->serialized);
  std::vector<std::string> out;
  for (const auto& route : config.virtual_hosts(0).routes()) out.push_back(route.name());
  return out;
}

TEST_F(ManifestDirSourceTest, ServesGatewayObjectsThroughTheFrontEnd) {
  Write("a.yaml", Endpoints("a", 1) + GreeterManifests());
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store);
  EXPECT_EQ(PortOf(*store.Current(), "a"), 1u);
  EXPECT_EQ(PortOf(*store.Current(), kGreeterName), 9000u);
  EXPECT_THAT(RouteNames(*store.Current(), kGreeterName),
              ::testing::ElementsAre("demo/greeter/rules[0]", "facet/no-route"));
  std::vector<ManifestDirSource::GatewayObjectReport> objects = source->gateway_objects();
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[0].ref.kind, "EndpointSlice");
  EXPECT_EQ(objects[1].ref.kind, "GRPCRoute");
  EXPECT_EQ(objects[2].ref.kind, "Service");
  ASSERT_NE(objects[1].status, nullptr);
  EXPECT_EQ(objects[1].status->parents.at(0).conditions.at(0).status, gateway::kStatusTrue);
  EXPECT_EQ(objects[0].status, nullptr);

  // An invalid edit: the last accepted route keeps serving, and says so.
  Write("a.yaml", Endpoints("a", 2) + GreeterManifests("{type: RegularExpression, service: '('}"));
  ASSERT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  EXPECT_THAT(RouteNames(*store.Current(), kGreeterName),
              ::testing::ElementsAre("demo/greeter/rules[0]", "facet/no-route"));
  objects = source->gateway_objects();
  const gateway::Condition& accepted = objects[1].status->parents.at(0).conditions.at(0);
  EXPECT_EQ(accepted.status, gateway::kStatusFalse);
  EXPECT_THAT(accepted.message, ::testing::HasSubstr("last accepted revision keeps serving"));

  // The file gone: everything it generated goes.
  fs::remove(dir_ / "a.yaml");
  ASSERT_TRUE(published.WaitFor(
      [](const xds::Snapshot& s) { return s.Find(xds::ListenerType(), kGreeterName) == nullptr; }));
  EXPECT_TRUE(source->gateway_objects().empty());
  EXPECT_TRUE(source->statuses().empty());
}

TEST_F(ManifestDirSourceTest, FirstSnapshotIsWhatValidateBuilds) {
  Write("a.yaml", Endpoints("a", 1) + GreeterManifests());
  Write("b.yaml", Endpoints("b", 2));
  xds::SnapshotStore store;
  auto source = Start(store);
  const ManifestBuild offline =
      BuildManifests(LoadManifests({dir_.string()}), ManifestDirSource::Options().build);
  EXPECT_EQ(store.Current()->version(), offline.builder->snapshot()->version());
}

TEST_F(ManifestDirSourceTest, DroppingAPolicyHoldsTheFileAsAnyServedObject) {
  // It makes its target's routes conditional: a read without it may be a
  // file cut short. Its status is listed while it is defined.
  Write("a.yaml", Endpoints("a", 1) + GreeterManifests() + kGreeterPolicy);
  xds::SnapshotStore store;
  Published published(store);
  ManifestDirSource::Options options =
      Batching(std::chrono::milliseconds(1), std::chrono::milliseconds(5));
  options.removal_settle = std::chrono::milliseconds(300);
  auto source = Start(store, options);
  ASSERT_EQ(PortOf(*store.Current(), "a"), 1u);
  bool listed = false;
  for (const auto& report : source->gateway_objects()) {
    if (report.ref.kind != "XdsVariantPolicy") continue;
    listed = true;
    ASSERT_NE(report.status, nullptr);
    ASSERT_EQ(report.status->ancestors.size(), 1u);
    EXPECT_EQ(report.status->ancestors[0].conditions[0].status, "True");
  }
  EXPECT_TRUE(listed);
  const absl::Time written = absl::Now();
  Write("a.yaml", Endpoints("a", 2) + GreeterManifests());
  ASSERT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  EXPECT_GE(absl::Now() - written, absl::Milliseconds(300));
  EXPECT_EQ(source->stats().held_removals, 1);
}

TEST_F(ManifestDirSourceTest, DroppingAServiceHoldsTheFileAsAnyServedObject) {
  // The Service serves its ports: a read without it may be a file cut short.
  Write("a.yaml", Endpoints("a", 1) + GreeterManifests());
  xds::SnapshotStore store;
  Published published(store);
  ManifestDirSource::Options options =
      Batching(std::chrono::milliseconds(1), std::chrono::milliseconds(5));
  options.removal_settle = std::chrono::milliseconds(300);
  auto source = Start(store, options);
  ASSERT_EQ(PortOf(*store.Current(), kGreeterName), 9000u);
  const absl::Time written = absl::Now();
  Write("a.yaml", Endpoints("a", 2));
  ASSERT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  EXPECT_GE(absl::Now() - written, absl::Milliseconds(300));
  EXPECT_EQ(source->stats().held_removals, 1);
  EXPECT_EQ(store.Current()->Find(xds::ListenerType(), kGreeterName), nullptr);
}

TEST_F(ManifestDirSourceTest, InvalidEditsKeepTheLastGoodVersion) {
  Write("a.yaml", Endpoints("a", 1));
  Write("b.yaml", Endpoints("b", 5));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store);
  // An object that fails validation keeps its previous revision ...
  std::string bad = Endpoints("a", 1);
  bad.replace(bad.find("port_value"), 10, "port_valu");
  Write("a.yaml", bad);
  // ... a file that is not YAML keeps its last good objects ...
  Write("b.yaml", "a: [unclosed\n");
  // ... and a valid edit elsewhere still goes out with both intact.
  Write("c.yaml", Endpoints("c", 7));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return PortOf(s, "c") == 7 && PortOf(s, "a") == 1 && PortOf(s, "b") == 5;
  }));
  bool a_rejected_but_serving = false;
  for (const auto& status : source->statuses()) {
    if (status->ref.name == "a") {
      a_rejected_but_serving = !status->accepted && status->serving_previous;
    }
  }
  EXPECT_TRUE(a_rejected_but_serving);
  // The file that does not parse is listed, where and why, until it does.
  const std::map<std::string, ManifestDirSource::UnparsedFile> unparsed =
      source->unparsed_files();
  ASSERT_EQ(unparsed.size(), 1u);
  const ManifestDirSource::UnparsedFile& b = unparsed.begin()->second;
  EXPECT_EQ(unparsed.begin()->first, (dir_ / "b.yaml").string());
  EXPECT_EQ(b.path, (dir_ / "b.yaml").string());
  EXPECT_GT(b.line, 0);
  EXPECT_GT(b.column, 0);
  EXPECT_FALSE(b.message.empty());
  Write("b.yaml", Endpoints("b", 6));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "b") == 6; }));
  EXPECT_THAT(source->unparsed_files(), ::testing::IsEmpty());
}

TEST_F(ManifestDirSourceTest, FilesOverAnInputBoundKeepTheirLastGoodObjects) {
  Write("a.yaml", Endpoints("a", 1));
  Write("b.yaml", Endpoints("b", 5));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store);
  // A duplicate key, and a file of more YAML nodes than a file may hold.
  std::string duplicate = Endpoints("a", 2);
  duplicate.replace(duplicate.find("namespace: demo"), 15, "namespace: demo, name: a");
  Write("a.yaml", duplicate);
  std::string big = Endpoints("b", 6) + "---\n";
  for (int i = 0; i < 300'000; ++i) big.append("- 1\n");
  Write("b.yaml", big);
  Write("c.yaml", Endpoints("c", 7));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return PortOf(s, "c") == 7 && PortOf(s, "a") == 1 && PortOf(s, "b") == 5;
  }));
  EXPECT_EQ(PortOf(*store.Current(), "a"), 1u);
  EXPECT_EQ(PortOf(*store.Current(), "b"), 5u);
}

TEST_F(ManifestDirSourceTest, UnlistableDirectoryKeepsServing) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  auto source = Start(store);
  const auto first = store.Current();
  const fs::path moved = dir_.string() + ".moved";
  fs::rename(dir_, moved);
  // Let the worker poll the missing directory a few times.
  const int64_t builds = source->builds();
  absl::SleepFor(absl::Milliseconds(100));  // No signal exists for "nothing happened".
  EXPECT_EQ(store.Current(), first);
  EXPECT_EQ(source->builds(), builds);
  fs::rename(moved, dir_);
}

// One service as six documents: a listener, its route, two clusters and
// their endpoints; `port` goes into the last document.
std::vector<std::string> ServiceDocuments(const std::string& s, int port) {
  auto object = [](const std::string& name, const std::string& type, const std::string& served,
                   const std::string& resource) {
    return absl::StrCat("apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: ",
                        name, ", namespace: demo}\nspec:\n  type: ", type, "\n  name: ", served,
                        "\n  variants:\n  - resource: ", resource, "\n");
  };
  const std::string hcm =
      absl::StrCat("{api_listener: {api_listener: {\"@type\": type.googleapis.com/"
                   "envoy.extensions.filters.network.http_connection_manager.v3."
                   "HttpConnectionManager, rds: {route_config_name: ",
                   s, ", config_source: {ads: {}, resource_api_version: V3}}, http_filters: [{name: "
                   "envoy.filters.http.router, typed_config: {\"@type\": type.googleapis.com/"
                   "envoy.extensions.filters.http.router.v3.Router}}]}}}");
  const std::string cluster =
      "{type: EDS, eds_cluster_config: {eds_config: {ads: {}, resource_api_version: V3}}}";
  auto endpoints = [](int p) {
    return absl::StrCat("{endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: "
                        "[{endpoint: {address: {socket_address: {address: 127.0.0.1, "
                        "port_value: ",
                        p, "}}}}]}]}");
  };
  return {
      object(s + "-listener", "listener", s, hcm),
      object(s + "-routes", "route", s,
             absl::StrCat("{virtual_hosts: [{name: ", s, ", domains: [", s,
                          "], routes: [{match: {prefix: /}, route: {cluster: ", s, "-a}}]}]}")),
      object(s + "-a-cluster", "cluster", s + "-a", cluster),
      object(s + "-b-cluster", "cluster", s + "-b", cluster),
      object(s + "-a", "endpoint", s + "-a", endpoints(1000)),
      object(s + "-b", "endpoint", s + "-b", endpoints(port)),
  };
}

std::string Join(const std::vector<std::string>& documents) {
  return absl::StrJoin(documents, "---\n");
}

bool ServesService(const xds::Snapshot& s, const std::string& name) {
  return s.Find(xds::ListenerType(), name) != nullptr &&
         s.Find(xds::RouteConfigurationType(), name) != nullptr &&
         s.Find(xds::ClusterType(), name + "-a") != nullptr &&
         s.Find(xds::ClusterType(), name + "-b") != nullptr && PortOf(s, name + "-a") == 1000 &&
         PortOf(s, name + "-b") != 0;
}

// A listener and the route it needs, routing clients with env=prod and the
// others by two variants; `port` goes into the endpoints svc-b.
std::vector<std::string> RoutedServiceDocuments(int port) {
  std::vector<std::string> documents = ServiceDocuments("svc", port);
  // Listener, clusters and endpoints first; the route, whose second variant
  // a cut loses, last.
  std::string route = documents[1];
  documents.erase(documents.begin() + 1);
  const std::string variant = route.substr(route.find("  - resource: "));
  route.replace(
      route.find("  - resource: "), variant.size(),
      absl::StrCat("  - name: prod\n    match: {env: prod}\n    resource: ", variant.substr(14),
                   "  - name: others\n    match: {env: {not: prod}}\n",
                   "    resource: ", variant.substr(14)));
  documents.push_back(route);
  return documents;
}

size_t RouteVariants(const xds::Snapshot& s) {
  const xds::ServedResource* route = s.Find(xds::RouteConfigurationType(), "svc");
  return route == nullptr ? 0 : route->variants.size();
}

TEST_F(ManifestDirSourceTest, FileCaughtMidWriteWithdrawsNothingUntilQuiet) {
  Write("svc.yaml", Join(RoutedServiceDocuments(2001)));
  xds::SnapshotStore store;
  Published published(store);
  ManifestDirSource::Options options = InotifyOnly();
  options.removal_settle = std::chrono::seconds(30);  // Longer than the test.
  auto source = Start(store, options);
  ASSERT_TRUE(ServesService(*store.Current(), "svc"));
  ASSERT_EQ(RouteVariants(*store.Current()), 2u);
  const int64_t held = source->stats().held_removals;
  // The new text in two writes: the first ends inside the route, after its
  // first variant, a prefix that parses (the listener would then lose the
  // clients without env=prod).
  const std::string text = Join(RoutedServiceDocuments(2002));
  const size_t cut = text.find("  - name: others");
  ASSERT_NE(cut, std::string::npos);
  const int fd = open((dir_ / "svc.yaml").c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, text.data(), cut), static_cast<ssize_t>(cut));
  close(fd);  // IN_CLOSE_WRITE: the prefix is read.
  for (int i = 0; i < 2000 && source->stats().held_removals == held; ++i) {
    absl::SleepFor(absl::Milliseconds(5));  // Polls a counter: no signal exists for it.
  }
  EXPECT_GT(source->stats().held_removals, held) << "the prefix was never read";
  std::ofstream(dir_ / "svc.yaml", std::ios::app) << text.substr(cut);
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "svc-b") == 2002; }));
  for (const auto& snapshot : published.all()) {
    EXPECT_TRUE(ServesService(*snapshot, "svc")) << "published without the listener";
    EXPECT_EQ(RouteVariants(*snapshot), 2u) << "published a cut route";
  }
  EXPECT_EQ(RouteVariants(*store.Current()), 2u);
}

TEST_F(ManifestDirSourceTest, PrefixMissingObjectsChangesNothingUntilQuiet) {
  const std::vector<std::string> before = ServiceDocuments("svc", 2001);
  Write("svc.yaml", Join(before));
  xds::SnapshotStore store;
  Published published(store);
  ManifestDirSource::Options options = InotifyOnly();
  options.removal_settle = std::chrono::seconds(30);
  auto source = Start(store, options);
  const auto first = store.Current();
  const int64_t held = source->stats().held_removals;
  // A prefix whose first object changed and whose last ones are missing.
  std::vector<std::string> prefix = ServiceDocuments("svc", 2001);
  prefix.resize(2);
  prefix[1].replace(prefix[1].find("prefix: /"), 9, "prefix: /v2");
  Write("svc.yaml", Join(prefix));
  for (int i = 0; i < 2000 && source->stats().held_removals == held; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_GT(source->stats().held_removals, held);
  Write("other.yaml", Endpoints("other", 5));  // A change after it, to wait for.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "other") == 5; }));
  // The route kept its served revision: the prefix changed nothing.
  EXPECT_EQ(store.Current()->Find(xds::RouteConfigurationType(), "svc")->variants[0],
            first->Find(xds::RouteConfigurationType(), "svc")->variants[0]);
}

// Rewrites `path` in place as a slow writer does: truncate, then one document
// at a time, each followed by fsync and a pause, then close.
void SlowRewrite(const fs::path& path, const std::vector<std::string>& documents) {
  const int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
  ASSERT_GE(fd, 0);
  for (size_t i = 0; i < documents.size(); ++i) {
    const std::string text = (i == 0 ? "" : "---\n") + documents[i];
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    fsync(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));  // The writer's pace.
  }
  close(fd);
}

// A rescan that finds nothing changed must not leave the worker spinning: it
// wakes for rescans (every 50 ms here) and events, not continuously.
TEST_F(ManifestDirSourceTest, IdleWorkerWakesOnlyForRescans) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  ManifestDirSource::Options options = InotifyOnly();
  options.rescan_interval = std::chrono::milliseconds(50);
  auto source = Start(store, options);
  const int64_t before = source->stats().wakeups;
  absl::SleepFor(absl::Milliseconds(500));
  const int64_t wakeups = source->stats().wakeups - before;
  // About 10 rescans; a spin makes hundreds of thousands of wakeups.
  EXPECT_LE(wakeups, 40);
  EXPECT_GE(wakeups, 2) << "the rescan timer never fired";
  EXPECT_EQ(source->stats().published, 1);
}

TEST_F(ManifestDirSourceTest, InotifyPicksUpCompletedWritesAndRenamesWithoutPolling) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, InotifyOnly());
  ASSERT_TRUE(source->stats().inotify);
  Write("a.yaml", Endpoints("a", 2));  // Renamed into place.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  std::ofstream(dir_ / "a.yaml") << Endpoints("a", 3);  // Written in place, then closed.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 3; }));
  std::ofstream(dir_ / "b.yaml") << Endpoints("b", 4);  // A new file.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "b") == 4; }));
  fs::rename(dir_ / "b.yaml", dir_ / "b.yaml.bak");  // Renamed away: withdrawn.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return s.Find(xds::ClusterLoadAssignmentType(), "b") == nullptr && PortOf(s, "a") == 3;
  }));
}

TEST_F(ManifestDirSourceTest, LoneEditIsBuiltOnceQuietNotAtTheCap) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, Batching(std::chrono::milliseconds(1), std::chrono::minutes(1)));
  Write("a.yaml", Endpoints("a", 2));
  // WaitFor gives up after 10 s: long before the cap.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
}

TEST_F(ManifestDirSourceTest, BurstOfEditsIsOneBuild) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, Batching(std::chrono::milliseconds(500), std::chrono::minutes(1)));
  const int64_t builds = source->stats().builds;
  Write("a.yaml", Endpoints("a", 2));
  Write("b.yaml", Endpoints("b", 3));
  Write("c.yaml", Endpoints("c", 4));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return PortOf(s, "a") == 2 && PortOf(s, "b") == 3 && PortOf(s, "c") == 4;
  }));
  EXPECT_EQ(source->stats().builds - builds, 1);
  EXPECT_EQ(published.count(), 2u);  // The first snapshot, then the burst's.
}

TEST_F(ManifestDirSourceTest, ReportsTheTimeFromAnEditToItsPublication) {
  Write("a.yaml", Endpoints("a", 1));
  ManifestDirSource::Options options =
      Batching(std::chrono::milliseconds(50), std::chrono::minutes(1));
  absl::Mutex mu;
  std::vector<PublishTiming> timings;
  options.on_published = [&](const PublishTiming& timing) {
    absl::MutexLock lock(&mu);
    timings.push_back(timing);
  };
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, options);
  Write("a.yaml", Endpoints("a", 2));
  ASSERT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  source.reset();  // The worker reports after publishing: wait for it.
  absl::MutexLock lock(&mu);
  ASSERT_EQ(timings.size(), 2u);  // The first snapshot, then the edit's.
  // Measured from the edit, not from the build: the batch waited to be
  // quiet first.
  EXPECT_GE(timings[1].since_change, absl::Milliseconds(50));
  EXPECT_GE(timings[1].since_change, timings[1].build);
}

TEST_F(ManifestDirSourceTest, SteadyEditsAreBuiltAtTheCap) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, Batching(std::chrono::minutes(1), std::chrono::milliseconds(100)));
  // Never quiet for `quiet`: without the cap nothing would be built.
  bool built = false;
  for (int port = 2; port < 500 && !built; ++port) {
    Write("a.yaml", Endpoints("a", port));
    absl::SleepFor(absl::Milliseconds(10));
    built = published.count() > 1;
  }
  EXPECT_TRUE(built);
}

void ExpectSlowRewriteKeepsServing(xds::SnapshotStore& store, Published& published,
                                   const fs::path& path) {
  EXPECT_TRUE(ServesService(*store.Current(), "svc"));
  SlowRewrite(path, ServiceDocuments("svc", 2002));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "svc-b") == 2002; }));
  for (const auto& snapshot : published.all()) {
    EXPECT_TRUE(ServesService(*snapshot, "svc")) << "published without the file's objects";
  }
}

TEST_F(ManifestDirSourceTest, SlowInPlaceRewriteNeverPublishesWithoutTheFilesObjects) {
  Write("svc.yaml", Join(ServiceDocuments("svc", 2001)));
  xds::SnapshotStore store;
  Published published(store);
  // Polling every 10 ms reads the file many times while it is being written.
  auto source = Start(store, Polling());
  ExpectSlowRewriteKeepsServing(store, published, dir_ / "svc.yaml");
  EXPECT_GT(source->stats().held_removals, 0);
}

TEST_F(ManifestDirSourceTest, SlowInPlaceRewriteUnderInotifyNeverPublishesWithoutIt) {
  Write("svc.yaml", Join(ServiceDocuments("svc", 2001)));
  xds::SnapshotStore store;
  Published published(store);
  ManifestDirSource::Options options = InotifyOnly();
  options.rescan_interval = std::chrono::milliseconds(10);  // The safety net reads mid-write.
  auto source = Start(store, options);
  ExpectSlowRewriteKeepsServing(store, published, dir_ / "svc.yaml");
}

TEST_F(ManifestDirSourceTest, ObjectsDroppedFromAFileAreRemovedOnceItIsQuiet) {
  Write("svc.yaml", Join(ServiceDocuments("svc", 2001)));
  xds::SnapshotStore store;
  Published published(store);
  ManifestDirSource::Options options = InotifyOnly();
  options.removal_settle = std::chrono::milliseconds(50);
  auto source = Start(store, options);
  std::vector<std::string> documents = ServiceDocuments("svc", 2001);
  documents.pop_back();                      // Drops the endpoints svc-b ...
  documents.erase(documents.begin() + 3);    // ... and the cluster svc-b.
  Write("svc.yaml", Join(documents));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return s.Find(xds::ClusterLoadAssignmentType(), "svc-b") == nullptr &&
           s.Find(xds::ClusterType(), "svc-b") == nullptr &&
           s.Find(xds::ClusterType(), "svc-a") != nullptr;
  }));
  EXPECT_GT(source->stats().held_removals, 0);
  // An emptied file withdraws everything, after the same wait.
  Write("svc.yaml", "");
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return s.size() == 0; }));
}

TEST_F(ManifestDirSourceTest, ObjectDefinedInTwoFilesIsTakenFromTheFirstByName) {
  Write("a.yaml", Endpoints("x", 1));
  Write("b.yaml", Endpoints("x", 2));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, InotifyOnly());
  EXPECT_EQ(PortOf(*store.Current(), "x"), 1u);
  Write("b.yaml", Endpoints("x", 3));  // The second definition changes: nothing to serve.
  Write("c.yaml", Endpoints("c", 9));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "c") == 9; }));
  EXPECT_EQ(PortOf(*store.Current(), "x"), 1u);
  fs::remove(dir_ / "a.yaml");  // The next definition takes over.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "x") == 3; }));
  fs::remove(dir_ / "b.yaml");
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return s.Find(xds::ClusterLoadAssignmentType(), "x") == nullptr && PortOf(s, "c") == 9;
  }));
}

TEST_F(ManifestDirSourceTest, SameContentRewritePublishesNothing) {
  const std::string text = Join(ServiceDocuments("svc", 2001));
  Write("svc.yaml", text);
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, InotifyOnly());
  const ManifestDirSource::Stats before = source->stats();
  const size_t published_before = published.count();
  Write("svc.yaml", text);
  std::ofstream(dir_ / "svc.yaml") << text;
  Write("other.yaml", Endpoints("other", 5));  // A change after them, to wait for.
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "other") == 5; }));
  EXPECT_EQ(published.count(), published_before + 1);
  EXPECT_EQ(source->stats().upserts, before.upserts + 1);
}

TEST_F(ManifestDirSourceTest, OnlyChangedObjectsReachTheBuilder) {
  Write("svc.yaml", Join(ServiceDocuments("svc", 2001)));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, InotifyOnly());
  const auto first = store.Current();
  const ManifestDirSource::Stats before = source->stats();
  Write("svc.yaml", Join(ServiceDocuments("svc", 2002)));
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "svc-b") == 2002; }));
  const ManifestDirSource::Stats after = source->stats();
  EXPECT_EQ(after.upserts - before.upserts, 1);
  EXPECT_EQ(after.validated_objects - before.validated_objects, 1);
  const auto now = store.Current();
  // Unchanged objects keep their very variants.
  EXPECT_EQ(now->Find(xds::ListenerType(), "svc")->variants[0],
            first->Find(xds::ListenerType(), "svc")->variants[0]);
  EXPECT_EQ(now->Find(xds::ClusterLoadAssignmentType(), "svc-a")->variants[0],
            first->Find(xds::ClusterLoadAssignmentType(), "svc-a")->variants[0]);
}

TEST_F(ManifestDirSourceTest, PollingFallbackFollowsEdits) {
  Write("a.yaml", Endpoints("a", 1));
  xds::SnapshotStore store;
  Published published(store);
  auto source = Start(store, Polling());
  EXPECT_FALSE(source->stats().inotify);
  Write("a.yaml", Endpoints("a", 2) + "# longer\n");
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) { return PortOf(s, "a") == 2; }));
  fs::remove(dir_ / "a.yaml");
  EXPECT_TRUE(published.WaitFor([](const xds::Snapshot& s) {
    return s.Find(xds::ClusterLoadAssignmentType(), "a") == nullptr;
  }));
}

}  // namespace
}  // namespace facet::controller
