// An immutable, validated, reference-complete set of served resources.
#ifndef FACET_XDS_SERVER_SNAPSHOT_SNAPSHOT_H_
#define FACET_XDS_SERVER_SNAPSHOT_SNAPSHOT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/snapshot/objects.h"

namespace facet::xds {

// One variant of a served resource. Immutable; shared by snapshots and
// streams (thread-safe).
struct Variant {
  std::string label;
  Constraint constraints;
  std::shared_ptr<const google::protobuf::Message> resource;
  // Deterministic serialization of `resource`, made once and shared by every
  // stream that sends this variant.
  std::string serialized;
  // Content-derived: the same type, name, constraints and resource give the
  // same version on every replica.
  std::string version;
  std::vector<ResourceReference> references;
};

// All variants of one (type, name). Immutable (thread-safe).
struct ServedResource {
  const ResourceType* type = nullptr;
  std::string name;  // Normalised served name.
  ObjectRef owner;
  int64_t generation = 0;
  std::vector<std::shared_ptr<const Variant>> variants;

  // Returns the variant whose constraints match `params`, or null when none
  // does (for the client, the resource does not exist). Validation guarantees
  // at most one matches.
  const Variant* Select(const ParameterSet& params) const;
};

// Immutable once built: thread-safe.
class Snapshot {
 public:
  using ResourceMap = std::map<std::string, std::shared_ptr<const ServedResource>, std::less<>>;

  Snapshot() = default;
  explicit Snapshot(std::vector<std::shared_ptr<const ServedResource>> resources);

  // Returns the resource of `type` named `name` (normalised), or null.
  const ServedResource* Find(const ResourceType& type, absl::string_view name) const;
  // Returns the resources of one type, by name.
  const ResourceMap& resources(const ResourceType& type) const;
  // Returns the resource the object `owner` declares, or null.
  std::shared_ptr<const ServedResource> FindByOwner(const ObjectRef& owner) const;
  // Returns a digest of every served variant version.
  const std::string& version() const { return version_; }
  size_t size() const;

 private:
  std::map<const ResourceType*, ResourceMap> by_type_;
  std::map<ObjectRef, std::shared_ptr<const ServedResource>> by_owner_;
  std::string version_;
};

// Returns a short hex digest (SHA-256, 16 hex digits) of `data`.
std::string ContentDigest(absl::string_view data);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_SNAPSHOT_H_
