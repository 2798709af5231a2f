#include "controller/manifest/manifest_dir_source.h"

#include <filesystem>
#include <fstream>

#include "absl/synchronization/mutex.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

namespace fs = std::filesystem;

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
  std::unique_ptr<ManifestDirSource> Start(xds::SnapshotStore& store) {
    ManifestDirSource::Options options;
    options.directory = dir_.string();
    options.poll_interval = std::chrono::milliseconds(10);
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
    if (status.ref.name == "a") a_rejected_but_serving = !status.accepted && status.serving_previous;
  }
  EXPECT_TRUE(a_rejected_but_serving);
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

}  // namespace
}  // namespace facet::controller
