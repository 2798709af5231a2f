// An immutable, validated, reference-complete set of served resources.
#ifndef FACET_XDS_SERVER_SNAPSHOT_SNAPSHOT_H_
#define FACET_XDS_SERVER_SNAPSHOT_SNAPSHOT_H_

#include <array>
#include <atomic>
#include <bitset>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/snapshot/client_access.h"
#include "xds_server/snapshot/objects.h"

namespace facet::xds {

// One variant of a served resource. Immutable once published; shared by
// snapshots and streams (thread-safe).
struct Variant {
  const ResourceType* type = nullptr;
  std::string name;  // The served (normalised) name of its resource.
  std::string label;
  Constraint constraints;
  // The resource message, serialized deterministically once and shared by
  // every stream that sends this variant (the decoded message is not kept).
  std::string serialized;
  // Content-derived: the same type, name, constraints and resource give the
  // same version on every replica.
  std::string version;
  std::vector<ResourceReference> references;
  // Set when the variant was compiled from conditional elements: see
  // VariantSpec::origin and VariantSpec::included.
  std::shared_ptr<const ConditionalOrigin> origin;
  std::vector<size_t> included;

  // Returns the variant as a serialized google.protobuf.Any of its type.
  // Encoded on first use, then shared by every stream that sends it.
  const std::string& EncodedAny() const;
  // Returns the serialized TP2 envoy.service.discovery.v3.Resource wrapper:
  // `name` (or, when `locator`, `resource_name` with the variant's
  // constraints), `version` and the resource. Encoded on first use, then
  // shared: a view into EncodedWrappedAny(locator).
  absl::string_view EncodedWrapper(bool locator) const;
  // Returns the wrapper as a serialized google.protobuf.Any (type URL
  // kResourceWrapperTypeUrl), as SotW responses carry it.
  const std::string& EncodedWrappedAny(bool locator) const;
  // Returns HeldVariantDigest(name, locator, version), computed on first use
  // and kept: a stream adds and subtracts it on every push.
  uint64_t HeldDigest(bool locator) const;

 private:
  // std::call_once (pthread_once), not absl::call_once: a thread that waits
  // for another to finish the encoding is ordered after it visibly to
  // ThreadSanitizer (absl waits in uninstrumented code).
  mutable std::once_flag any_once_;
  mutable std::string any_;
  mutable std::once_flag wrapper_once_[2];
  mutable std::string wrapper_[2];
  mutable size_t wrapper_offset_[2] = {0, 0};  // Where the wrapper starts in wrapper_.
  // HeldDigest(false) and HeldDigest(true); 0 until computed (a digest that
  // is 0 is computed every time). Relaxed: every thread computes the same.
  mutable std::atomic<uint64_t> held_digest_[2] = {};
};

// Returns Digest64OfParts({name, form + version}), the form "L" for a variant
// a client holds by its locator and "P" for one it holds by name: the
// variant's share of the SotW version_info of what a client holds of its type
// (the sum of the shares, mod 2^64), the same on every replica and build.
uint64_t HeldVariantDigest(absl::string_view name, bool locator, absl::string_view version);

// Which parameter sets a source that knows a resource only in part (the
// relay's cache) has an answer for: a variant, or that none exists.
// Immutable (thread-safe).
struct Resolution {
  // The keys the resource's variants constrain, once known (TP2: every
  // variant of a resource constrains the same keys): parameter sets are
  // projected onto them. Unset: parameter sets are taken whole.
  std::optional<std::set<std::string>> keys;
  // CanonicalParameters of the (projected) parameter sets answered.
  absl::flat_hash_set<std::string> known;

  // Returns whether the source has an answer for `params`.
  bool Knows(const ParameterSet& params) const;
};

// All variants of one (type, name). Immutable (thread-safe).
struct ServedResource {
  const ResourceType* type = nullptr;
  std::string name;  // Normalised served name.
  ObjectRef owner;
  int64_t generation = 0;
  std::vector<std::shared_ptr<const Variant>> variants;
  // Null: the variants are complete (a parameter set no variant matches
  // selects nothing). Set by partial sources: a parameter set no variant
  // matches and the resolution does not know is not answered yet.
  std::shared_ptr<const Resolution> resolution;

  // Returns the variant whose constraints match `params`, or null when none
  // does (for the client, the resource does not exist). Validation guarantees
  // at most one matches.
  const Variant* Select(const ParameterSet& params) const;
};

// The names of one type whose variants changed from one snapshot to the
// next, each list sorted.
struct TypeChanges {
  std::vector<std::string> added;    // Served now, not before.
  std::vector<std::string> changed;  // Served before and now, with other variant versions.
  std::vector<std::string> removed;  // Served before, not now.
  bool empty() const { return added.empty() && changed.empty() && removed.empty(); }
};

// What changed between two snapshots.
struct ChangeSet {
  // True when the base is unknown: anything may have changed.
  bool all = true;
  std::map<const ResourceType*, TypeChanges> by_type;  // Only types with changes.

  size_t size() const;  // Changed names over every type.
};

// Immutable once built: thread-safe.
class Snapshot {
 public:
  using ResourceMap = std::map<std::string, std::shared_ptr<const ServedResource>, std::less<>>;

  Snapshot() = default;

  // Returns an empty partial snapshot: in it and in every snapshot derived
  // from it, a name that is not held is not known yet (the relay's cache),
  // rather than absent.
  static std::shared_ptr<const Snapshot> EmptyPartial();
  // Makes a snapshot of `resources`, with the read restrictions `access`,
  // whose changes() are relative to `base` (every name counts as changed when
  // `base` is null; the names of authorities whose restrictions differ from
  // `base`'s count as changed).
  explicit Snapshot(std::vector<std::shared_ptr<const ServedResource>> resources,
                    const Snapshot* base = nullptr,
                    std::shared_ptr<const ClientAccess> access = nullptr);

  // Returns `base` with `upserts` replacing (or adding) the resources of the
  // same type and name and the resources of `removals` (type, name) removed.
  // Work is proportional to the size of the change, not of `base`, apart from
  // copying `base`'s indexes (pointers only). changes() says what differs.
  static std::shared_ptr<const Snapshot> Derive(
      const Snapshot& base, std::vector<std::shared_ptr<const ServedResource>> upserts,
      const std::vector<std::pair<const ResourceType*, std::string>>& removals);
  // The same, with `access` as the new snapshot's read restrictions (null:
  // none). The resources of every authority whose restrictions differ from
  // `base`'s count as changed, so that streams re-examine them.
  static std::shared_ptr<const Snapshot> Derive(
      const Snapshot& base, std::vector<std::shared_ptr<const ServedResource>> upserts,
      const std::vector<std::pair<const ResourceType*, std::string>>& removals,
      std::shared_ptr<const ClientAccess> access);

  // Returns the resource of `type` named `name` (normalised), or null.
  const ServedResource* Find(const ResourceType& type, absl::string_view name) const;
  // Returns the resources of one type, by name. The map is made on first
  // use per snapshot and type (O(resources of the type)); Find() is cheaper.
  const ResourceMap& resources(const ResourceType& type) const;
  // Returns the resource the object `owner` declares, or null.
  std::shared_ptr<const ServedResource> FindByOwner(const ObjectRef& owner) const;
  // Returns a digest of every served variant version and of the read
  // restrictions: equal for equal content, whatever the history, on every
  // replica.
  const std::string& version() const { return version_; }
  // Returns the version of the snapshot changes() are relative to ("" when
  // there is none).
  const std::string& base_version() const { return base_version_; }
  // Returns what changed from the base snapshot.
  const ChangeSet& changes() const { return changes_; }
  size_t size() const;
  // True for partial snapshots (see EmptyPartial).
  bool partial() const { return partial_; }
  // Returns who may read the resources of restricted authorities, or null
  // when every client may read everything.
  const ClientAccess* access() const { return access_.get(); }
  const std::shared_ptr<const ClientAccess>& shared_access() const { return access_; }

 private:
  void Insert(std::shared_ptr<const ServedResource> resource);
  void Erase(const ResourceType* type, absl::string_view name);
  void SetVersion();

  // A map split into copy-on-write shards by key hash: a derived snapshot
  // shares every shard its change does not touch.
  template <typename Key, typename Hash>
  class ShardedMap {
   public:
    using Shard = std::map<Key, std::shared_ptr<const ServedResource>, std::less<>>;
    ShardedMap() = default;
    // A copy shares every shard; it copies a shard the first time it
    // changes it, and changes that copy in place afterwards.
    ShardedMap(const ShardedMap& other) : shards_(other.shards_), size_(other.size_) {}
    ShardedMap& operator=(const ShardedMap& other) {
      shards_ = other.shards_;
      size_ = other.size_;
      owned_.reset();
      return *this;
    }
    template <typename K>
    const std::shared_ptr<const ServedResource>* Find(const K& key) const;
    void Set(const Key& key, std::shared_ptr<const ServedResource> value);
    bool Erase(const Key& key);
    size_t size() const { return size_; }
    void ForEach(
        const std::function<void(const Key&, const std::shared_ptr<const ServedResource>&)>& f)
        const;

   private:
    static constexpr size_t kShards = 256;
    template <typename K>
    static size_t ShardOf(const K& key) {
      return Hash()(key) % kShards;
    }
    // Shards are shared with other maps unless owned_ says this map made them.
    Shard& Own(size_t index);
    std::array<std::shared_ptr<Shard>, kShards> shards_;
    size_t size_ = 0;
    std::bitset<kShards> owned_;
  };
  struct RefHash {
    size_t operator()(const ObjectRef& ref) const;
  };
  struct NameHash {
    size_t operator()(absl::string_view name) const;
  };
  static size_t TypeIndex(const ResourceType* type);

  std::array<ShardedMap<std::string, NameHash>, 4> by_type_;
  ShardedMap<ObjectRef, RefHash> by_owner_;
  mutable std::array<std::once_flag, 4> sorted_once_;
  mutable std::array<ResourceMap, 4> sorted_;
  // The sum (mod 2^64) of a digest per served resource: order-independent,
  // so a derived snapshot updates it in O(change).
  uint64_t digest_sum_ = 0;
  std::string version_;
  std::string base_version_;
  ChangeSet changes_;
  bool partial_ = false;
  std::shared_ptr<const ClientAccess> access_;
};

// Returns the 64-bit content digest (xds_server/common/digest.h) of one
// served resource: its type, name and variant versions.
uint64_t ResourceDigest(const ServedResource& resource);

// Returns the version of a variant: 16 hex digits of the content digest of
// its type, served name, canonical constraints (deterministic bytes) and
// serialized resource. The same content gives the same version on every
// replica.
std::string VariantVersion(const ResourceType& type, absl::string_view name,
                           absl::string_view constraints, absl::string_view serialized);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_SNAPSHOT_H_
