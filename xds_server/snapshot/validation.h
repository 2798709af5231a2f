// The checks of one object on its own, of authority admission and of
// references: the pieces the snapshot builders are made of. Internal to
// xds_server/snapshot.
#ifndef FACET_XDS_SERVER_SNAPSHOT_VALIDATION_H_
#define FACET_XDS_SERVER_SNAPSHOT_VALIDATION_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/objects.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds::internal {

// Which namespaces each declared authority admits, and whether admission is
// enforced.
struct AuthorityTable {
  std::map<std::string, std::set<std::string>> admitted;
  bool enforce = true;

  friend bool operator==(const AuthorityTable& a, const AuthorityTable& b) {
    return a.enforce == b.enforce && a.admitted == b.admitted;
  }
};

// Checks XdsAuthority objects in order (the first valid declaration of an
// authority claims it) and fills `table`. Returns one status per object.
std::vector<ObjectStatus> CheckAuthorities(absl::Span<const AuthorityObject* const> objects,
                                           const BuildOptions& options, AuthorityTable* table);

// The outcome of checking one XdsResource on its own.
struct OwnValidation {
  std::vector<Finding> findings;  // The source's findings first, then the checks'.
  std::string served_name;        // Empty when the name is unusable.
  // Where admission findings belong in `findings` (right after the name's).
  size_t admission_at = 0;
  // Set when every own check passed. Its variants carry their type, name,
  // serialized bytes and content-derived versions.
  std::shared_ptr<const ServedResource> resource;
};

// Validates everything about `object` that depends on nothing else: spec,
// name, variants, constraints (key sets, overlaps, gaps), resource JSON.
OwnValidation ValidateResourceObject(const ResourceObject& object, const BuildOptions& options);

// Appends the authority-admission findings for `served_name`.
void CheckAdmission(const ObjectRef& ref, absl::string_view served_name,
                    const AuthorityTable& table, const BuildOptions& options,
                    std::vector<Finding>* findings);

// Finds a served resource by type and normalised name, or null.
using ReferenceLookup =
    absl::FunctionRef<const ServedResource*(const ResourceType*, absl::string_view)>;

// Returns DanglingReference (or TooComplex) findings for every reference of
// every variant of `resource` that does not resolve, for every parameter set
// that selects the variant, against `lookup`. Empty when complete.
std::vector<Finding> CheckReferences(const ServedResource& resource, ReferenceLookup lookup,
                                     const BuildOptions& options);

bool HasErrors(const std::vector<Finding>& findings);

}  // namespace facet::xds::internal

#endif  // FACET_XDS_SERVER_SNAPSHOT_VALIDATION_H_
