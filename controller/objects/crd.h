// What every reader and writer of Facet's custom resources shares: the API
// group and version, the kinds and their collections, and where an object
// lives in the Kubernetes API.
#ifndef FACET_CONTROLLER_OBJECTS_CRD_H_
#define FACET_CONTROLLER_OBJECTS_CRD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller {

inline constexpr char kApiGroup[] = "facet.dev";
inline constexpr char kApiVersion[] = "facet.dev/v1alpha1";

// The kinds. Their parsed forms (xds::ResourceObject, xds::AuthorityObject)
// are the snapshot builder's input, so they are declared beside it.
using xds::kXdsAuthorityKind;
using xds::kXdsResourceKind;

// The collections ("plural" names) of the kinds. XdsResources and
// XdsVariantPolicies are namespaced; XdsAuthorities are cluster-scoped.
inline constexpr char kXdsResourcePlural[] = "xdsresources";
inline constexpr char kXdsAuthorityPlural[] = "xdsauthorities";
inline constexpr char kXdsVariantPolicyPlural[] = "xdsvariantpolicies";

// The namespace of an XdsResource that does not set metadata.namespace, as
// with `kubectl apply` against the default namespace.
inline constexpr char kDefaultNamespace[] = "default";

// Returns the API path of a collection of Facet objects:
// "/apis/facet.dev/v1alpha1/<plural>" across namespaces when `ns` is empty
// (and for cluster-scoped kinds), ".../namespaces/<ns>/<plural>" otherwise.
std::string CollectionPath(absl::string_view plural, absl::string_view ns = "");

// Returns the API path of an object by its kind: Facet's kinds
// ("/apis/facet.dev/v1alpha1/..."), and the GRPCRoutes whose status Facet
// writes ("/apis/gateway.networking.k8s.io/v1/namespaces/N/grpcroutes/R").
std::string ObjectPath(const xds::ObjectRef& ref);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_OBJECTS_CRD_H_
