#include "xds_server/ads/snapshot_store.h"

#include "gtest/gtest.h"

namespace facet::xds {
namespace {

TEST(SnapshotStoreTest, PublishesToWatchersUntilTheHandleIsGone) {
  SnapshotStore store;
  EXPECT_EQ(store.Current()->size(), 0u);
  int calls = 0;
  {
    SnapshotStore::WatchHandle handle = store.Watch([&](std::shared_ptr<const Snapshot>) { ++calls; });
    auto snapshot = std::make_shared<const Snapshot>();
    store.Publish(snapshot);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(store.Current(), snapshot);
    SnapshotStore::WatchHandle moved = std::move(handle);
    store.Publish(std::make_shared<const Snapshot>());
    EXPECT_EQ(calls, 2);
  }
  store.Publish(std::make_shared<const Snapshot>());
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace facet::xds
