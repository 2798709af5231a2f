#include "xds_server/snapshot_store/snapshot_store.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
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

// What a watcher's owner does: it drops the handle, then frees what the
// watcher uses. A delivery already running on the publisher's thread must be
// over by then, or it uses freed memory (ASan reports it; the flag below
// fails without a sanitizer).
TEST(SnapshotStoreTest, DestroyingAHandleWaitsForADeliveryInProgress) {
  SnapshotStore store;
  auto owned = std::make_unique<int>(0);
  int* used_by_watcher = owned.get();
  absl::Notification entered;
  absl::Notification release;
  std::atomic<bool> handle_destroyed{false};
  std::atomic<bool> destroyed_before_return{false};
  std::optional<SnapshotStore::WatchHandle> handle =
      store.Watch([&](std::shared_ptr<const Snapshot>) {
        entered.Notify();
        release.WaitForNotification();
        ++*used_by_watcher;
        destroyed_before_return = handle_destroyed.load();
      });
  std::thread publisher([&] { store.Publish(std::make_shared<const Snapshot>()); });
  entered.WaitForNotification();
  std::thread owner([&] {
    handle.reset();
    handle_destroyed = true;
    owned.reset();
  });
  // Give the owner time to reach the wait (it must not get past it).
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(handle_destroyed.load());
  release.Notify();
  publisher.join();
  owner.join();
  EXPECT_FALSE(destroyed_before_return.load());
  EXPECT_TRUE(handle_destroyed.load());
}

TEST(SnapshotStoreTest, AWatcherMayDropItsOwnHandle) {
  SnapshotStore store;
  int calls = 0;
  std::optional<SnapshotStore::WatchHandle> handle;
  handle = store.Watch([&](std::shared_ptr<const Snapshot>) {
    ++calls;
    handle.reset();  // Must not wait for this very call.
  });
  store.Publish(std::make_shared<const Snapshot>());
  store.Publish(std::make_shared<const Snapshot>());
  EXPECT_EQ(calls, 1);
}

TEST(SnapshotStoreTest, AWatcherDroppedDuringAPublicationIsNotCalled) {
  SnapshotStore store;
  int second_calls = 0;
  std::optional<SnapshotStore::WatchHandle> second;
  SnapshotStore::WatchHandle first =
      store.Watch([&](std::shared_ptr<const Snapshot>) { second.reset(); });
  second = store.Watch([&](std::shared_ptr<const Snapshot>) { ++second_calls; });
  store.Publish(std::make_shared<const Snapshot>());
  EXPECT_EQ(second_calls, 0);
}

}  // namespace
}  // namespace facet::xds
