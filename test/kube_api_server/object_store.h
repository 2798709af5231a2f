// The storage behind the test Kubernetes API server: objects keyed like etcd
// keys, one global resourceVersion counter, and a bounded event history from
// which watches replay and consistent snapshots at past resourceVersions are
// rebuilt (for paginated lists).
#ifndef FACET_TEST_KUBE_API_SERVER_OBJECT_STORE_H_
#define FACET_TEST_KUBE_API_SERVER_OBJECT_STORE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "test/kube_api_server/json.h"

namespace facet::testing {

enum class EventType { kAdded, kModified, kDeleted };

// Returns "ADDED", "MODIFIED" or "DELETED".
const char* EventTypeName(EventType type);

struct StoredEvent {
  int64_t resource_version;
  EventType type;
  std::string key;
  Json object;                   // New state; for kDeleted the last state at the deletion RV.
  std::optional<Json> previous;  // State before the event (absent for kAdded).
};

// Thread-compatible: the server serializes access with its own mutex.
class ObjectStore {
 public:
  // Keeps at most `history_limit` events.
  explicit ObjectStore(size_t history_limit);

  // Returns the current (latest) resourceVersion.
  int64_t resource_version() const { return resource_version_; }
  // Every event with a resourceVersion above this is still in the history.
  int64_t compacted_resource_version() const { return compacted_; }

  // Returns the object at `key`, or nullptr.
  const Json* Get(const std::string& key) const;

  // Stores `object` at `key` with the next resourceVersion (written into
  // metadata.resourceVersion) and records ADDED or MODIFIED. Returns the stored object.
  const Json& Put(const std::string& key, Json object);
  // Removes `key` (which must exist), recording DELETED with the last state
  // stamped with the deletion's resourceVersion. Returns that state.
  Json Remove(const std::string& key);

  // Returns the objects whose keys start with `prefix` as they were at
  // `resource_version` (0 = now), in key order. OutOfRange when that version
  // is older than the kept history (compacted).
  absl::StatusOr<std::map<std::string, Json>> ListAt(const std::string& prefix,
                                                     int64_t resource_version) const;

  // Returns the events after `resource_version`. Requires
  // `resource_version >= compacted_resource_version()`.
  std::vector<StoredEvent> EventsAfter(int64_t resource_version) const;

  // Forgets every event: versions before now become too old.
  void Compact();

 private:
  void Record(StoredEvent event);

  const size_t history_limit_;
  int64_t resource_version_ = 1;
  int64_t compacted_ = 1;
  std::map<std::string, Json> objects_;
  std::deque<StoredEvent> history_;
};

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_OBJECT_STORE_H_
