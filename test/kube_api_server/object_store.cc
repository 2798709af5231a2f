#include "test/kube_api_server/object_store.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

void StampResourceVersion(Json* object, int64_t resource_version) {
  Member((*object)["metadata"], "resourceVersion") = absl::StrCat(resource_version);
}

}  // namespace

const char* EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "UNKNOWN";
}

ObjectStore::ObjectStore(size_t history_limit) : history_limit_(history_limit) {}

const Json* ObjectStore::Get(const std::string& key) const {
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : &it->second;
}

const Json& ObjectStore::Put(const std::string& key, Json object) {
  const int64_t resource_version = ++resource_version_;
  StampResourceVersion(&object, resource_version);
  auto it = objects_.find(key);
  StoredEvent event{resource_version, EventType::kAdded, key, object, std::nullopt};
  if (it != objects_.end()) {
    event.type = EventType::kModified;
    event.previous = std::move(it->second);
    it->second = std::move(object);
  } else {
    it = objects_.emplace(key, std::move(object)).first;
  }
  Record(std::move(event));
  return it->second;
}

Json ObjectStore::Remove(const std::string& key) {
  auto it = objects_.find(key);
  const int64_t resource_version = ++resource_version_;
  Json last = std::move(it->second);
  objects_.erase(it);
  Json stamped = last;
  StampResourceVersion(&stamped, resource_version);
  Record({resource_version, EventType::kDeleted, key, stamped, std::move(last)});
  return stamped;
}

void ObjectStore::Record(StoredEvent event) {
  history_.push_back(std::move(event));
  while (history_.size() > history_limit_) {
    compacted_ = history_.front().resource_version;
    history_.pop_front();
  }
  if (history_limit_ == 0) compacted_ = resource_version_;
}

absl::StatusOr<std::map<std::string, Json>> ObjectStore::ListAt(const std::string& prefix,
                                                                int64_t resource_version) const {
  if (resource_version != 0 && resource_version < compacted_) {
    return absl::OutOfRangeError(
        absl::StrCat("too old resource version: ", resource_version, " (", compacted_, ")"));
  }
  std::map<std::string, Json> result;
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && absl::StartsWith(it->first, prefix); ++it) {
    result.emplace(it->first, it->second);
  }
  if (resource_version == 0 || resource_version >= resource_version_) return result;
  // Undo the events after `resource_version`, newest first.
  for (auto it = history_.rbegin();
       it != history_.rend() && it->resource_version > resource_version; ++it) {
    if (!absl::StartsWith(it->key, prefix)) continue;
    if (it->previous.has_value()) {
      result[it->key] = *it->previous;
    } else {
      result.erase(it->key);
    }
  }
  return result;
}

std::vector<StoredEvent> ObjectStore::EventsAfter(int64_t resource_version) const {
  std::vector<StoredEvent> events;
  for (auto it = history_.rbegin();
       it != history_.rend() && it->resource_version > resource_version; ++it) {
    events.push_back(*it);
  }
  return {std::make_move_iterator(events.rbegin()), std::make_move_iterator(events.rend())};
}

void ObjectStore::Compact() {
  history_.clear();
  compacted_ = resource_version_;
}

}  // namespace facet::testing
