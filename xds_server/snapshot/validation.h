// The checks of one object on its own, of authority admission and of
// references: the pieces the snapshot builders are made of. Internal to
// xds_server/snapshot.
#ifndef FACET_XDS_SERVER_SNAPSHOT_VALIDATION_H_
#define FACET_XDS_SERVER_SNAPSHOT_VALIDATION_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "xds_server/constraints/variant_set.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/objects.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds::internal {

// Which namespaces each declared authority admits, and whether admission is
// enforced.
struct AuthorityTable {
  std::map<std::string, std::set<std::string>> admitted;
  bool enforce = true;
  // The read restrictions of the accepted declarations (null: none).
  std::shared_ptr<const ClientAccess> access;

  friend bool operator==(const AuthorityTable& a, const AuthorityTable& b) {
    return a.enforce == b.enforce && a.admitted == b.admitted &&
           ClientAccess::Differences(a.access.get(), b.access.get()).empty();
  }
};

// Checks XdsAuthority objects in order (the first valid declaration of an
// authority claims it) and fills `table`. Returns one status per object.
std::vector<ObjectStatus> CheckAuthorities(absl::Span<const AuthorityObject* const> objects,
                                           const BuildOptions& options, AuthorityTable* table);

// The outcome of CheckVariantSet for one variant set.
using VariantSetOutcome = absl::StatusOr<VariantSetReport>;

// Remembers CheckVariantSet's outcome by the content of a variant set (its
// variants' constraints, in order), so that a set already decided, accepted
// or rejected, is never searched again while an object holds its outcome.
// The cache keeps outcomes only as long as some OwnValidation holds them (it
// never grows beyond the objects' distinct variant sets, plus expired slots
// swept as it grows). Thread-safe.
class VariantSetCache {
 public:
  // Returns the outcome held for `key`, or null.
  std::shared_ptr<const VariantSetOutcome> Find(const std::string& key) const;
  // Records `outcome` for `key`.
  void Insert(const std::string& key, const std::shared_ptr<const VariantSetOutcome>& outcome);
  // Returns how many keys are held (live or not yet swept).
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<const VariantSetOutcome>> outcomes_
      ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 64;
};

// The outcome of checking one XdsResource on its own.
struct OwnValidation {
  std::vector<Finding> findings;  // The source's findings first, then the checks'.
  std::string served_name;        // Empty when the name is unusable.
  // Where admission findings belong in `findings` (right after the name's).
  size_t admission_at = 0;
  // Set when every own check passed. Its variants carry their type, name,
  // serialized bytes and content-derived versions.
  std::shared_ptr<const ServedResource> resource;
  // The variant-set check's outcome, when the object got that far; holding
  // it keeps it in the VariantSetCache.
  std::shared_ptr<const VariantSetOutcome> variant_set;
  bool variant_set_searched = false;  // Decided anew, not taken from the cache.
  // The type spec.type names, when known; with served_name, what the object
  // declares even when it is rejected.
  const ResourceType* type = nullptr;
  // Set when the build's search budget ran out before the checks finished:
  // nothing else here is meaningful and the object is to be validated again.
  bool deferred = false;
  int64_t search_steps = 0;  // Search steps spent.
};

// Validates everything about `object` that depends on nothing else: spec,
// name, variants, constraints (key sets, overlaps, gaps), resource JSON.
// Takes the variant-set outcome from `cache` when it holds one for the same
// constraints and records a new one there; `cache` may be null. When
// `build_budget` is given, the object's search budget is at most what is
// left of it (limits.build_search_steps for the whole build), the steps spent
// are taken from it, and an object whose budget that cut short is deferred.
OwnValidation ValidateResourceObject(const ResourceObject& object, const BuildOptions& options,
                                     VariantSetCache* cache = nullptr,
                                     std::atomic<int64_t>* build_budget = nullptr);

// Appends the authority-admission findings for `served_name`.
void CheckAdmission(const ObjectRef& ref, absl::string_view served_name,
                    const AuthorityTable& table, const BuildOptions& options,
                    std::vector<Finding>* findings);

// Finds a served resource by type and normalised name, or null.
using ReferenceLookup =
    absl::FunctionRef<const ServedResource*(const ResourceType*, absl::string_view)>;

// Finds the object that declares a resource by type and normalised name but
// is rejected (serves nothing), or null.
using RejectedLookup =
    absl::FunctionRef<const ObjectRef*(const ResourceType*, absl::string_view)>;

// Returns DanglingReference (or TooComplex) findings for every reference of
// every variant of `resource` that does not resolve, for every parameter set
// that selects the variant, against `lookup`. Empty when complete. A
// reference to a resource that is not served but that `*rejected` finds
// declared by a rejected object says so and names that object as the
// finding's cause; `rejected` may be null.
std::vector<Finding> CheckReferences(const ServedResource& resource, ReferenceLookup lookup,
                                     const BuildOptions& options,
                                     const RejectedLookup* rejected = nullptr);

bool HasErrors(const std::vector<Finding>& findings);

}  // namespace facet::xds::internal

#endif  // FACET_XDS_SERVER_SNAPSHOT_VALIDATION_H_
