// What a GRPCRoute's references lead to: its parentRefs (GAMMA: a Service
// and its ports) and its backendRefs (a Service port, permitted across
// namespaces by a ReferenceGrant).
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_REFERENCES_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_REFERENCES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/translate/service_port.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller::gateway {

// How the translation finds the objects a GRPCRoute refers to. The front
// end answers from its indexes (and may record what was asked, to know
// what a translation depends on); tests from a few objects.
struct GatewayLookup {
  // Returns the Service `ns`/`name` (a GatewayObject holding a ServiceInfo,
  // without errors), or null when there is none.
  std::function<const GatewayObject*(absl::string_view ns, absl::string_view name)> service;
  // Returns the ReferenceGrants (without errors) in namespace `ns`.
  std::function<std::vector<const ReferenceGrant*>(absl::string_view ns)> grants;
};

// What a parentRef of a GRPCRoute leads to.
struct ParentResolution {
  enum class Outcome {
    kNotFacets,  // Another controller's parent (a Gateway): no status, no effect.
    kAttached,   // Attached to `ports` of `service`.
    kRejected,   // Facet's, but attached to nothing: `reason`, `message`.
  };
  Outcome outcome = Outcome::kNotFacets;
  xds::ObjectRef service;  // {Service, namespace, name} unless kNotFacets.
  std::vector<int> ports;  // kAttached: the Service ports, in the Service's order.
  std::string reason;      // kRejected: NoMatchingParent or ConsumerRoutesDisabled.
  std::string message;
};

// Resolves `parent` (a parentRef of a GRPCRoute in namespace `route_ns`).
// Facet's parents are core Services (group "", kind Service): `port`
// selects that port, `sectionName` the port of that name, both must agree,
// neither selects every port (GEP-1294); only served ports count
// (IsServedPort). A Service that does not exist, or is headless or
// ExternalName, is NoMatchingParent, and so is kind Service in the Gateway
// API's group (the default), with a hint to set group "". A Service in
// another namespace (a consumer route, GEP-1294) is attached unless
// `options.client_namespace_param` is empty (ConsumerRoutesDisabled). Pure.
ParentResolution ResolveParentRef(absl::string_view route_ns, const ObjectReference& parent,
                                  const GatewayLookup& lookup,
                                  const TranslateOptions& options = TranslateOptions());

// What a backendRef leads to.
struct BackendResolution {
  std::string cluster;  // The Cluster name (ServicePortName); empty when invalid.
  // When invalid: the ResolvedRefs reason (BackendNotFound, RefNotPermitted,
  // InvalidKind, UnsupportedProtocol) and the cause, in words.
  std::string reason;
  std::string message;
};

// Resolves `backend` (a backendRef of a GRPCRoute in namespace `route_ns`):
// a port of a core Service that Facet serves. A Service in another
// namespace needs a ReferenceGrant there from GRPCRoutes in `route_ns` to
// Services (all, or this one by name). Pure.
BackendResolution ResolveBackendRef(absl::string_view route_ns, const ObjectReference& backend,
                                    const GatewayLookup& lookup, const TranslateOptions& options);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_REFERENCES_H_
