#include "controller/kubernetes/client/object_cache.h"

#include <utility>

#include "controller/kubernetes/client/yaml_fields.h"

namespace facet::controller::kube {

std::vector<ObjectDelta> ObjectCache::Replace(Objects objects) {
  std::vector<ObjectDelta> deltas;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, object] : objects) {
    const auto old = objects_.find(key);
    if (old == objects_.end()) {
      deltas.push_back({ObjectDelta::Type::kAdded, key, object});
    } else {
      const std::string old_version = ResourceVersionOf(old->second);
      if (old_version.empty() || old_version != ResourceVersionOf(object)) {
        deltas.push_back({ObjectDelta::Type::kUpdated, key, object});
      }
    }
  }
  for (const auto& [key, object] : objects_) {
    if (objects.count(key) == 0) {
      deltas.push_back({ObjectDelta::Type::kDeleted, key, object, /*final_state_unknown=*/true});
    }
  }
  objects_ = std::move(objects);
  if (!deltas.empty()) {
    ++generation_;
    snapshot_.reset();
  }
  return deltas;
}

ObjectDelta ObjectCache::Upsert(const std::string& key, YAML::Node object) {
  absl::MutexLock lock(&mu_);
  // Rebinds (json::SharedNode): snapshots may still hold the old object.
  const bool inserted = objects_.insert_or_assign(key, object).second;
  ++generation_;
  snapshot_.reset();
  return {inserted ? ObjectDelta::Type::kAdded : ObjectDelta::Type::kUpdated, key,
          std::move(object)};
}

std::optional<ObjectDelta> ObjectCache::Remove(const std::string& key, YAML::Node last_state) {
  absl::MutexLock lock(&mu_);
  if (objects_.erase(key) == 0) return std::nullopt;
  ++generation_;
  snapshot_.reset();
  return ObjectDelta{ObjectDelta::Type::kDeleted, key, std::move(last_state)};
}

std::shared_ptr<const ObjectCache::Objects> ObjectCache::Snapshot() const {
  absl::MutexLock lock(&mu_);
  if (snapshot_ == nullptr) snapshot_ = std::make_shared<const Objects>(objects_);
  return snapshot_;
}

int64_t ObjectCache::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

}  // namespace facet::controller::kube
