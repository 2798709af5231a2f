// The reflector's cache of one collection: key ("namespace/name" or "name")
// to the latest object, with the deltas each change makes, snapshots and a
// change counter.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_OBJECT_CACHE_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_OBJECT_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "xds_server/json/shared_node.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::kube {

struct ObjectDelta {
  enum class Type { kAdded, kUpdated, kDeleted };
  Type type = Type::kAdded;
  std::string key;
  // The new state; for kDeleted the last state known. Shared with the
  // cache and every other holder: replacing it rebinds (json::SharedNode).
  json::SharedNode object;
  // A deletion found by diffing a relist against the cache rather than seen
  // as a DELETED event (client-go's DeletedFinalStateUnknown).
  bool final_state_unknown = false;
};

// Objects are stored and handed out as yaml-cpp nodes, which share their
// memory when copied: treat every node from the cache as immutable, read it
// through const accessors (yaml_fields.h), and YAML::Clone it before changing
// anything. Beware that `node = other` on an existing YAML::Node writes
// through to the tree it refers to: hold them as json::SharedNode, whose
// assignment rebinds.
// Thread-safe.
class ObjectCache {
 public:
  using Objects = std::map<std::string, json::SharedNode>;

  // Replaces the whole contents with a fresh list. Returns kAdded for new
  // keys, kUpdated for keys whose metadata.resourceVersion changed, and
  // kDeleted (final_state_unknown) for every cached key the list lacks.
  std::vector<ObjectDelta> Replace(Objects objects);

  // Stores an ADDED/MODIFIED object: kAdded for a new key, else kUpdated.
  ObjectDelta Upsert(const std::string& key, YAML::Node object);

  // Removes a DELETED object; nullopt when the key was not cached.
  std::optional<ObjectDelta> Remove(const std::string& key, YAML::Node last_state);

  // Returns the current contents; copied at most once per change.
  std::shared_ptr<const Objects> Snapshot() const;

  // Returns how many changes (calls that produced deltas) there have been.
  int64_t generation() const;

 private:
  mutable absl::Mutex mu_;
  Objects objects_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::shared_ptr<const Objects> snapshot_ ABSL_GUARDED_BY(mu_);
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_OBJECT_CACHE_H_
