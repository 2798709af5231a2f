// Keeps the validated state of every object and turns object-level changes
// into the next snapshot, re-validating only what changed and what depends
// on it.
#ifndef FACET_XDS_SERVER_SNAPSHOT_INCREMENTAL_BUILDER_H_
#define FACET_XDS_SERVER_SNAPSHOT_INCREMENTAL_BUILDER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/objects.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {

// Sources (the manifest directory, the Kubernetes reflectors) report each
// object they add, change or delete; Build() then validates just those
// objects, re-checks the references of the objects that refer to what
// changed, and derives the next snapshot from the last one by structural
// sharing: an unchanged object keeps its very variants (pointer-equal), and
// the snapshot's changes() list exactly the names whose variants changed.
//
// The result equals what BuildSnapshot() makes from the same objects, given
// the same history of accepted revisions. Thread-compatible: one worker owns
// it.
class IncrementalBuilder {
 public:
  explicit IncrementalBuilder(BuildOptions options);
  ~IncrementalBuilder();

  // Records a new or changed object, to take effect at the next Build(). An
  // object equal to the one held (same spec and findings) costs nothing
  // beyond the comparison; only a new generation or location is recorded.
  void Upsert(ResourceObject object);
  void Upsert(AuthorityObject object);
  // Records the deletion of an object (a no-op for an unknown one).
  void Remove(const ObjectRef& ref);
  // Returns the last revision of an XdsResource accepted anywhere (e.g. by
  // another replica, kept in the API server), or nullopt.
  using LastGoodLookup = std::function<std::optional<ResourceObject>(const ObjectRef&)>;
  // When an object's current revision is rejected and this builder serves
  // nothing of it, the revision `lookup` returns serves instead, with the
  // same content-derived versions. Called (from Build()) only for such
  // objects; its answer is validated once and kept until
  // LastGoodChanged(ref). An invalid one is ignored.
  void SetLastGoodLookup(LastGoodLookup lookup);
  // Says that `ref`'s last accepted revision changed; rebuilds only when the
  // object serves nothing now (cheap otherwise).
  void LastGoodChanged(const ObjectRef& ref);
  // Whether changes wait for Build().
  bool has_pending() const;

  struct Result {
    // The snapshot after this build: the previous one (the same pointer)
    // when nothing served changed.
    std::shared_ptr<const Snapshot> snapshot;
    bool snapshot_changed = false;
    // The statuses that are new or differ from the last build's.
    std::vector<std::shared_ptr<const ObjectStatus>> changed_statuses;
    // Objects deleted since the last build (their statuses are gone).
    std::vector<ObjectRef> removed_statuses;
    int64_t validated_objects = 0;   // Objects whose spec was validated anew.
    int64_t reference_checks = 0;    // Objects whose references were re-checked.
    // Variant sets decided by a search in this build; a set whose outcome is
    // held (the same constraints in any object, accepted or rejected) is
    // not searched again.
    int64_t variant_set_searches = 0;
    // Search steps the validated objects' own checks spent.
    int64_t search_steps = 0;
    // Changed objects left pending because this build's search budget
    // (ConstraintLimits::build_search_steps) ran out before their checks
    // finished. They keep their earlier state until a later Build() checks
    // them; has_pending() stays true.
    int64_t deferred_objects = 0;
  };

  // Lets objects seen for the first time at the next Build() fall back to
  // the revision `previous` served for them (for BuildSnapshot()). `previous`
  // must outlive that Build().
  void SeedFallbacks(const Snapshot* previous);

  // Applies the pending changes. Never fails as a whole: an object with
  // errors is left out, or its last served revision keeps serving.
  Result Build();
  // Build()s until no object is deferred, so that every pending object is
  // decided however many search-budgeted builds that takes; returns the
  // last build's result.
  Result BuildUntilDecided();

  // Returns the current status of every object, by reference.
  std::vector<std::shared_ptr<const ObjectStatus>> Statuses() const;
  // Returns the status of one object, or null.
  std::shared_ptr<const ObjectStatus> StatusOf(const ObjectRef& ref) const;
  // Returns the current snapshot (empty before the first Build()).
  const std::shared_ptr<const Snapshot>& snapshot() const { return snapshot_; }
  size_t object_count() const;
  int rejected_count() const { return rejected_; }

 private:
  class State;
  const BuildOptions options_;
  std::unique_ptr<State> state_;
  std::shared_ptr<const Snapshot> snapshot_;
  int rejected_ = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_INCREMENTAL_BUILDER_H_
