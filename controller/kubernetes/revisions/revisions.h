// Keeps the last accepted spec of Facet's objects in the API server, in
// apps/v1 ControllerRevisions the object owns (as StatefulSets and
// DaemonSets keep their history), so that every replica, whenever it
// starts, serves the same last good revision of an object whose current
// generation is invalid. XdsResources, GRPCRoutes and XdsVariantPolicies
// keep revisions; an owner is known by its kind, namespace and name, so
// objects of different kinds with one name never share a history.
#ifndef FACET_CONTROLLER_KUBERNETES_REVISIONS_REVISIONS_H_
#define FACET_CONTROLLER_KUBERNETES_REVISIONS_REVISIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/kubernetes/client/kube_client.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// Every revision Facet writes carries this label, whose value is its owner's
// kind ("XdsResource", "GRPCRoute", "XdsVariantPolicy"), and
// kRevisionOwnerLabel naming its owner.
inline constexpr char kRevisionOfLabel[] = "facet.dev/revision-of";
inline constexpr char kRevisionOwnerLabel[] = "facet.dev/owner";
// The label selector that finds them, of every kind (the label's existence).
inline constexpr char kRevisionSelector[] = "facet.dev/revision-of";

// Returns whether Facet keeps revisions of objects of `kind`.
bool KeepsRevisionsOf(absl::string_view kind);

// Returns the key of an owner's revisions, "<Kind>/<namespace>/<name>" (the
// same as OwnerKeyOf of each of them).
std::string RevisionOwnerKey(const xds::ObjectRef& owner);

// Returns the name of the revision holding `owner`'s current spec:
// "<owner name>-<10 hex digits of a digest>" (the same on every replica).
// The digest is the spec's for an XdsResource (as revisions were named
// before other kinds kept any), and that of the kind and the spec for the
// other kinds, so that same-named owners of two kinds never write the same
// name. Fails when the spec cannot be rendered as JSON.
absl::StatusOr<std::string> RevisionName(const YAML::Node& owner);

// Returns the JSON of a ControllerRevision for `owner` (an object of a kind
// that keeps revisions, as the API returns it, with uid and generation; one
// without `kind` is an XdsResource): data.spec is the owner's spec, revision
// its generation, ownerReferences the owner. Fails with InvalidArgument for
// other kinds.
absl::StatusOr<std::string> RevisionJson(const YAML::Node& owner);

// Returns the object a revision of Facet's holds, as a document of its
// owner's kind (apiVersion, kind, metadata.name, namespace and generation =
// revision, spec), or nullopt when it is not one of Facet's.
std::optional<YAML::Node> RecordedObject(const YAML::Node& revision);

// Returns the accepted XdsResource a revision holds, or nullopt when it is
// not a revision of an XdsResource.
std::optional<xds::ResourceObject> LastGoodOf(const YAML::Node& revision);

// Returns the accepted GRPCRoute or XdsVariantPolicy a revision holds, or
// nullopt when it is not a revision of one.
std::optional<gateway::GatewayObject> LastGoodGatewayObjectOf(const YAML::Node& revision);

// Returns RevisionOwnerKey of the revision's owner ("<Kind>/<namespace>/<name>"),
// "" when it is not one of Facet's.
std::string OwnerKeyOf(const YAML::Node& revision);

// Writes revisions and prunes old ones. Thread-compatible (the controller's
// worker calls it while it leads).
class RevisionWriter {
 public:
  // `client` must outlive the writer. Keeps `keep` revisions per object.
  explicit RevisionWriter(kube::KubeClient& client, int keep = 2) : client_(client), keep_(keep) {}

  // Records `owner`'s current spec as accepted, unless `existing` (the
  // revisions of this owner Facet already has, e.g. from a reflector's
  // cache, all with its RevisionOwnerKey) holds it; then deletes all but the
  // newest `keep`. Returns whether it wrote anything.
  absl::StatusOr<bool> Record(const YAML::Node& owner, const std::vector<YAML::Node>& existing);

 private:
  kube::KubeClient& client_;
  const int keep_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_REVISIONS_REVISIONS_H_
