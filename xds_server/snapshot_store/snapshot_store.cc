#include "xds_server/snapshot_store/snapshot_store.h"

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
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::MutexLock lock(&mu_);
    current_ = snapshot;
    entries.reserve(watchers_.size());
    for (const auto& [id, entry] : watchers_) entries.push_back(entry);
  }
  const std::thread::id self = std::this_thread::get_id();
  for (const std::shared_ptr<Entry>& entry : entries) {
    {
      absl::MutexLock lock(&mu_);
      if (entry->cancelled) continue;
      ++entry->deliveries;
      entry->delivering_thread = self;
    }
    entry->watcher(snapshot);
    absl::MutexLock lock(&mu_);
    --entry->deliveries;
  }
}

std::shared_ptr<const Snapshot> SnapshotStore::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

SnapshotStore::WatchHandle SnapshotStore::Watch(Watcher watcher) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  watchers_.emplace(id, std::make_shared<Entry>(std::move(watcher)));
  return WatchHandle(this, id);
}

void SnapshotStore::Unwatch(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return;
  std::shared_ptr<Entry> entry = std::move(it->second);
  watchers_.erase(it);
  entry->cancelled = true;
  // A watcher that drops its own handle while being called must not wait
  // for itself; it returns to Publish, which calls it no more.
  if (entry->deliveries > 0 && entry->delivering_thread == std::this_thread::get_id()) return;
  mu_.Await(absl::Condition(
      +[](Entry* e) { return e->deliveries == 0; }, entry.get()));
}

}  // namespace facet::xds
