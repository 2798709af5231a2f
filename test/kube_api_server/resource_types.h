// The resource types the test Kubernetes API server knows: the three Facet
// CRDs (as in crds/*.yaml), the Gateway API's gateway.networking.k8s.io/v1
// GRPCRoute and v1beta1 ReferenceGrant (as in its v1.4 standard CRDs),
// coordination.k8s.io/v1 Lease, apps/v1 ControllerRevision,
// discovery.k8s.io/v1 EndpointSlice, admissionregistration.k8s.io/v1
// ValidatingWebhookConfiguration, and core/v1 Namespace and Service. One
// server serves all of them but the custom resources it is told to leave out
// (ResourceTypeSet), as a cluster serves only the CRDs installed in it.
#ifndef FACET_TEST_KUBE_API_SERVER_RESOURCE_TYPES_H_
#define FACET_TEST_KUBE_API_SERVER_RESOURCE_TYPES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "test/kube_api_server/json.h"

namespace facet::testing {

// One additionalPrinterColumn (or built-in table column) after "Name".
struct PrinterColumn {
  std::string name;
  std::string type;       // string, integer, number, boolean, date
  std::string json_path;  // The JSONPath subset of table.h's EvaluateJsonPath.
  std::string description;
  int priority = 0;
  // For a built-in type's column that no JSONPath gives (Service PORT(S)):
  // computes the cell from the object instead of `json_path`.
  Json (*compute)(const Json& object) = nullptr;
};

struct ResourceType {
  std::string group;  // "" for the core group.
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  bool namespaced = true;
  bool status_subresource = false;
  // Custom resource semantics: generation on spec changes, 415 for strategic
  // merge patch, status stripped on create. Only custom resources can be left
  // out of a server (ResourceTypeSet).
  bool custom = false;
  // PUT of a missing object creates it (Lease).
  bool allow_create_on_update = false;
  // PUT without metadata.resourceVersion is allowed (Namespace); otherwise 422.
  bool allow_unconditional_update = false;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;
  std::vector<PrinterColumn> columns;
  // For built-in types: the lists that a strategic merge patch merges by a key
  // (the Go types' patchMergeKey), as {dotted path from the object's root, key}.
  std::vector<std::pair<std::string, std::string>> merge_keys;

  // "facet.dev/v1alpha1", or "v1" for the core group.
  std::string ApiVersion() const;
  // "/apis/facet.dev/v1alpha1", or "/api/v1".
  std::string PathPrefix() const;
  // "xdsresources.facet.dev", or "namespaces" for the core group (as in error messages).
  std::string QualifiedResource() const;
  // "XdsResource.facet.dev", or "Namespace" (as in 422 messages).
  std::string QualifiedKind() const;
};

// Returns every known type. The references stay valid for the process lifetime.
const std::vector<ResourceType>& AllResourceTypes();

// Returns the known type at `group`/`version` with `plural`, or nullptr.
const ResourceType* FindResourceType(const std::string& group, const std::string& version,
                                     const std::string& plural);

// The types one server serves. Immutable, so thread-safe.
class ResourceTypeSet {
 public:
  // Every known type but the custom resources named in `omitted`, each as
  // "<plural>.<group>" (grpcroutes.gateway.networking.k8s.io) or as a group
  // (gateway.networking.k8s.io: all of its types). InvalidArgument for a
  // name that matches no custom resource.
  static absl::StatusOr<ResourceTypeSet> Make(const std::vector<std::string>& omitted);

  const std::vector<const ResourceType*>& types() const { return types_; }
  // Returns the served type at `group`/`version` with `plural`, or nullptr.
  const ResourceType* Find(const std::string& group, const std::string& version,
                           const std::string& plural) const;
  // The served API groups, sorted ("" for core excluded).
  std::vector<std::string> Groups() const;
  // The served versions of `group`, the preferred one first (GA before beta
  // before alpha, higher numbers first, as kube-apiserver orders them).
  std::vector<std::string> Versions(const std::string& group) const;

 private:
  std::vector<const ResourceType*> types_;
};

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_RESOURCE_TYPES_H_
