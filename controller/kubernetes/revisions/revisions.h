// Keeps each XdsResource's last accepted spec in the API server, in apps/v1
// ControllerRevisions the object owns (as StatefulSets and DaemonSets keep
// their history), so that every replica, whenever it starts, serves the
// same last good revision of an object whose current generation is invalid.
#ifndef FACET_CONTROLLER_KUBERNETES_REVISIONS_REVISIONS_H_
#define FACET_CONTROLLER_KUBERNETES_REVISIONS_REVISIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/kubernetes/client/kube_client.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// Every revision Facet writes carries this label (value "XdsResource"), and
// kRevisionOwnerLabel naming its owner.
inline constexpr char kRevisionOfLabel[] = "facet.dev/revision-of";
inline constexpr char kRevisionOwnerLabel[] = "facet.dev/owner";
// The label selector that finds them.
inline constexpr char kRevisionSelector[] = "facet.dev/revision-of=XdsResource";

// Returns the name of the revision holding `owner`'s current spec:
// "<owner name>-<10 hex digits of the spec's digest>" (the same on every
// replica). Fails when the spec cannot be rendered as JSON.
absl::StatusOr<std::string> RevisionName(const YAML::Node& owner);

// Returns the JSON of a ControllerRevision for `owner` (an XdsResource as
// the API returns it, with uid and generation): data.spec is the owner's
// spec, revision its generation, ownerReferences the owner.
absl::StatusOr<std::string> RevisionJson(const YAML::Node& owner);

// Returns the accepted object a revision holds (name and namespace of its
// owner, generation = revision), or nullopt when it is not one of Facet's.
std::optional<xds::ResourceObject> LastGoodOf(const YAML::Node& revision);

// Returns "namespace/name" of the revision's owner, "" when it has none.
std::string OwnerKeyOf(const YAML::Node& revision);

// Writes revisions and prunes old ones. Thread-compatible (the controller's
// worker calls it while it leads).
class RevisionWriter {
 public:
  // `client` must outlive the writer. Keeps `keep` revisions per object.
  explicit RevisionWriter(kube::KubeClient& client, int keep = 2) : client_(client), keep_(keep) {}

  // Records `owner`'s current spec as accepted, unless `existing` (the
  // revisions of this owner Facet already has, e.g. from a reflector's
  // cache) holds it; then deletes all but the newest `keep`. Returns whether
  // it wrote anything.
  absl::StatusOr<bool> Record(const YAML::Node& owner, const std::vector<YAML::Node>& existing);

 private:
  kube::KubeClient& client_;
  const int keep_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_REVISIONS_REVISIONS_H_
