// Test helper: Gateway API objects as a manifest file holds them.
#ifndef FACET_CONTROLLER_SOURCES_MANIFEST_GATEWAY_TEST_MANIFESTS_H_
#define FACET_CONTROLLER_SOURCES_MANIFEST_GATEWAY_TEST_MANIFESTS_H_

#include <string>

#include "absl/strings/str_cat.h"

namespace facet::controller::testing {

// The name of every xDS resource GreeterManifests' Service port serves.
inline constexpr char kGreeterName[] = "greeter.demo.svc.cluster.local:7070";

// Returns documents (each starting "---"): Service demo/greeter (port grpc
// 7070), an EndpointSlice of it (10.0.0.1, slice port grpc 9000) and a
// GRPCRoute on it sending calls of `method` (a method match, flow YAML) to
// it.
inline std::string GreeterManifests(const std::string& method = "{service: Echo}") {
  return absl::StrCat(R"(---
apiVersion: v1
kind: Service
metadata: {name: greeter, namespace: demo}
spec: {ports: [{name: grpc, port: 7070}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: greeter-1, namespace: demo, labels: {kubernetes.io/service-name: greeter}}
addressType: IPv4
ports: [{name: grpc, port: 9000}]
endpoints: [{addresses: [10.0.0.1]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: greeter, namespace: demo}
spec:
  parentRefs: [{group: "", kind: Service, name: greeter}]
  rules: [{matches: [{method: )",
                      method, R"(}], backendRefs: [{name: greeter, port: 7070}]}]
)");
}

// An XdsVariantPolicy demo/prod-only (a document starting "---") making
// GreeterManifests' route conditional as a whole: only for env=prod.
inline constexpr char kGreeterPolicy[] = R"(---
apiVersion: facet.dev/v1alpha1
kind: XdsVariantPolicy
metadata: {name: prod-only, namespace: demo}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: greeter}]
  when: {env: prod}
)";

}  // namespace facet::controller::testing

#endif  // FACET_CONTROLLER_SOURCES_MANIFEST_GATEWAY_TEST_MANIFESTS_H_
