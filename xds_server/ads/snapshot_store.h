// The one shared piece of state between configuration producers (manifest
// directory, Kubernetes reflector, relay upstream) and the ADS server.
#ifndef FACET_XDS_SERVER_ADS_SNAPSHOT_STORE_H_
#define FACET_XDS_SERVER_ADS_SNAPSHOT_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {

// Holds the current snapshot and tells watchers about new ones.
// Thread-safe.
class SnapshotStore {
 public:
  using Watcher = std::function<void(std::shared_ptr<const Snapshot>)>;

  // Cancels its watch on destruction. Movable, not copyable.
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
  // the calling thread and outside the store's lock. Publishers call from one
  // thread at a time.
  void Publish(std::shared_ptr<const Snapshot> snapshot);

  // Returns the current snapshot (initially empty).
  std::shared_ptr<const Snapshot> Current() const;

  // Registers `watcher` for later publications. The store must outlive the
  // handle.
  [[nodiscard]] WatchHandle Watch(Watcher watcher);

 private:
  void Unwatch(uint64_t id);

  mutable absl::Mutex mu_;
  std::shared_ptr<const Snapshot> current_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_SNAPSHOT_STORE_H_
