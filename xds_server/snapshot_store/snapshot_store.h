// The one shared piece of state between configuration producers (manifest
// directory, Kubernetes reflector, relay upstream) and the ADS server.
#ifndef FACET_XDS_SERVER_SNAPSHOT_STORE_SNAPSHOT_STORE_H_
#define FACET_XDS_SERVER_SNAPSHOT_STORE_SNAPSHOT_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {

// Holds the current snapshot and tells watchers about new ones.
// Thread-safe.
class SnapshotStore {
 public:
  using Watcher = std::function<void(std::shared_ptr<const Snapshot>)>;

  // Cancels its watch on destruction: once the destructor (or a move
  // assignment over it) returns, the watcher is not running and is never
  // called again. A delivery to it in progress on another thread is waited
  // for; one on the destroying thread itself (a watcher dropping its own
  // handle) is not. Movable, not copyable.
  class WatchHandle {
   public:
    WatchHandle() = default;
    WatchHandle(WatchHandle&& other) noexcept;
    WatchHandle& operator=(WatchHandle&& other) noexcept;
    ~WatchHandle();

   private:
    friend class SnapshotStore;
    WatchHandle(SnapshotStore* store, uint64_t id) : store_(store), id_(id) {}
    SnapshotStore* store_ = nullptr;
    uint64_t id_ = 0;
  };

  SnapshotStore() : current_(std::make_shared<const Snapshot>()) {}

  // Makes `snapshot` current and calls every watcher with it, in order, on
  // the calling thread and outside the store's lock (a watcher whose handle
  // is destroyed meanwhile is skipped). Publishers call from one thread at a
  // time.
  void Publish(std::shared_ptr<const Snapshot> snapshot);

  // Returns the current snapshot (initially empty).
  std::shared_ptr<const Snapshot> Current() const;

  // Registers `watcher` for later publications. The store must outlive the
  // handle.
  [[nodiscard]] WatchHandle Watch(Watcher watcher);

 private:
  // A registered watcher. Its fields are guarded by the store's mu_.
  struct Entry {
    explicit Entry(Watcher w) : watcher(std::move(w)) {}
    const Watcher watcher;
    bool cancelled = false;  // Its handle is gone: never call it again.
    int deliveries = 0;      // Calls in progress.
    std::thread::id delivering_thread;
  };

  // Removes the watcher and waits until no call to it is in progress (but
  // one on this thread).
  void Unwatch(uint64_t id);

  mutable absl::Mutex mu_;
  std::shared_ptr<const Snapshot> current_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<Entry>> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_STORE_SNAPSHOT_STORE_H_
