// Builds a validated, reference-complete Snapshot from a whole set of objects.
#ifndef FACET_XDS_SERVER_SNAPSHOT_BUILDER_H_
#define FACET_XDS_SERVER_SNAPSHOT_BUILDER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/snapshot/objects.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {

struct BuildOptions {
  ConstraintLimits limits;
  // How spec.authority is checked against XdsAuthority objects:
  // kEnforce: an authority must be declared by an XdsAuthority that admits the
  //   object's namespace (error AuthorityNotAllowed otherwise);
  // kWarnUndeclared: authorities are not enforced; an authority no XdsAuthority
  //   declares gets a warning (for linting manifests without authorities);
  // kEnforceWhenDeclared: kEnforce when the input holds any XdsAuthority
  //   object, kWarnUndeclared otherwise (a manifest directory).
  enum class AuthorityPolicy { kEnforce, kWarnUndeclared, kEnforceWhenDeclared };
  AuthorityPolicy authority_policy = AuthorityPolicy::kEnforce;
  // Whether objects may publish old-style (non-xdstp) names.
  bool allow_old_style_names = true;
};

// What became of one object.
struct ObjectStatus {
  ObjectRef ref;
  int64_t generation = 0;
  std::string location;
  std::string served_name;  // Empty when the spec gives none.
  // Whether this revision is served. When false, `serving_previous` says
  // whether an earlier accepted revision still serves in its place.
  bool accepted = false;
  bool serving_previous = false;
  std::vector<Finding> findings;  // Errors and warnings, in field order.
  // The variants served for this object: this revision's when accepted, the
  // previous revision's when serving_previous, none otherwise.
  std::vector<std::shared_ptr<const Variant>> variants;

  bool has_errors() const;
  // Equal content (variants compared by version).
  friend bool operator==(const ObjectStatus& a, const ObjectStatus& b);
};

struct BuildResult {
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<ObjectStatus> statuses;  // One per input object, sorted by ref.
};

// Validates every object and builds the snapshot. Never fails as a whole: an
// object with errors is left out (or, when `previous` served an earlier
// revision of it, that revision keeps serving) and the rest is served.
// Deterministic: the same inputs give the same snapshot and versions. Every
// object is checked, however many of IncrementalBuilder's search-budgeted
// builds that takes (only the first falls back to `previous`).
// A pure function: thread-compatible, call it from one worker.
BuildResult BuildSnapshot(absl::Span<const ResourceObject> resources,
                          absl::Span<const AuthorityObject> authorities, const Snapshot* previous,
                          const BuildOptions& options);

// Returns pointers to `statuses` in their order, except that an object with
// a finding caused by another object (Finding::cause: a reference to a
// rejected object) comes after that object, so that reports show the
// primary error first. Cycles keep the order in which they are met.
std::vector<const ObjectStatus*> CausesFirst(absl::Span<const ObjectStatus> statuses);
// The same for statuses held by pointer (IncrementalBuilder::Statuses()).
std::vector<const ObjectStatus*> CausesFirst(
    absl::Span<const std::shared_ptr<const ObjectStatus>> statuses);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_BUILDER_H_
