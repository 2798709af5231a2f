// The resource types the test Kubernetes API server serves: the two Facet CRDs
// (as in crds/*.yaml), coordination.k8s.io/v1 Lease, apps/v1
// ControllerRevision, discovery.k8s.io/v1 EndpointSlice,
// admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and core/v1
// Namespace.
#ifndef FACET_TEST_KUBE_API_SERVER_RESOURCE_TYPES_H_
#define FACET_TEST_KUBE_API_SERVER_RESOURCE_TYPES_H_

#include <string>
#include <vector>

namespace facet::testing {

// One additionalPrinterColumn (or built-in table column) after "Name".
struct PrinterColumn {
  std::string name;
  std::string type;       // string, integer, number, boolean, date
  std::string json_path;  // .a.b or .a.list[?(@.key=="value")].field
  std::string description;
  int priority = 0;
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
  // merge patch, status stripped on create.
  bool custom = false;
  // PUT of a missing object creates it (Lease).
  bool allow_create_on_update = false;
  // PUT without metadata.resourceVersion is allowed (Namespace); otherwise 422.
  bool allow_unconditional_update = false;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;
  std::vector<PrinterColumn> columns;

  // "facet.dev/v1alpha1", or "v1" for the core group.
  std::string ApiVersion() const;
  // "/apis/facet.dev/v1alpha1", or "/api/v1".
  std::string PathPrefix() const;
  // "xdsresources.facet.dev", or "namespaces" for the core group (as in error messages).
  std::string QualifiedResource() const;
  // "XdsResource.facet.dev", or "Namespace" (as in 422 messages).
  std::string QualifiedKind() const;
};

// Returns every served type. The references stay valid for the process lifetime.
const std::vector<ResourceType>& ServedResourceTypes();

// Returns the type served at `group`/`version` with `plural`, or nullptr.
const ResourceType* FindResourceType(const std::string& group, const std::string& version,
                                     const std::string& plural);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_RESOURCE_TYPES_H_
