#include "xds_server/ads/snapshot_store.h"

#include <utility>
#include <vector>

namespace facet::xds {

SnapshotStore::WatchHandle::WatchHandle(WatchHandle&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)), id_(other.id_) {}

SnapshotStore::WatchHandle& SnapshotStore::WatchHandle::operator=(WatchHandle&& other) noexcept {
  if (this != &other) {
    if (store_ != nullptr) store_->Unwatch(id_);
    store_ = std::exchange(other.store_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

SnapshotStore::WatchHandle::~WatchHandle() {
  if (store_ != nullptr) store_->Unwatch(id_);
}

void SnapshotStore::Publish(std::shared_ptr<const Snapshot> snapshot) {
  std::vector<std::shared_ptr<Watcher>> watchers;
  {
    absl::MutexLock lock(&mu_);
    current_ = snapshot;
    for (const auto& [id, watcher] : watchers_) watchers.push_back(watcher);
  }
  for (const auto& watcher : watchers) (*watcher)(snapshot);
}

std::shared_ptr<const Snapshot> SnapshotStore::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

SnapshotStore::WatchHandle SnapshotStore::Watch(Watcher watcher) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  watchers_.emplace(id, std::make_shared<Watcher>(std::move(watcher)));
  return WatchHandle(this, id);
}

void SnapshotStore::Unwatch(uint64_t id) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(id);
}

}  // namespace facet::xds
