// Parses the documents of the Gateway API kinds Facet reads, and of
// XdsVariantPolicy, into GatewayObjects.
#ifndef FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_PARSER_H_
#define FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_PARSER_H_

#include "absl/strings/string_view.h"
#include "controller/gateway/model/gateway_object.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// Whether a document of this apiVersion and kind is one of the kinds a
// GatewayObject holds: GRPCRoute and ReferenceGrant in
// gateway.networking.k8s.io, core Service, discovery.k8s.io EndpointSlice,
// facet.dev XdsVariantPolicy. Any version of the group counts (an
// unsupported one is then a finding). Thread-safe.
bool IsGatewayKind(absl::string_view api_version, absl::string_view kind);

// Parses a document for which IsGatewayKind holds and that has a
// metadata.name. Supported versions: GRPCRoute gateway.networking.k8s.io/v1,
// ReferenceGrant .../v1beta1 and .../v1, Service v1, EndpointSlice
// discovery.k8s.io/v1, XdsVariantPolicy facet.dev/v1alpha1. Applies the
// CRDs' defaults and checks their schema and CEL rules, as neither manifests
// nor a test API server run them; every problem is a finding naming its
// field. Unknown fields are findings for the CRD kinds (not for the built-in
// Service, whose spec has many fields Facet does not read).
// `default_namespace` applies when metadata.namespace is unset. Stateless;
// thread-safe for distinct documents.
GatewayObject ParseGatewayObject(const YAML::Node& document, absl::string_view location,
                                 absl::string_view default_namespace);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_PARSER_H_
