// Parses the spec of a gateway.networking.k8s.io/v1 GRPCRoute. Internal to
// the model: ParseGatewayObject is the entry point.
#ifndef FACET_CONTROLLER_GATEWAY_MODEL_GRPC_ROUTE_PARSER_H_
#define FACET_CONTROLLER_GATEWAY_MODEL_GRPC_ROUTE_PARSER_H_

#include "controller/gateway/model/api_fields.h"
#include "controller/gateway/model/gateway_object.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// Reads `spec` (a map) as the v1.4 standard CRD defines it, applying its
// defaults and checking its bounds, patterns and CEL rules, plus what the
// spec asks of implementations (unique rule names) and what Facet cannot
// honour (experimental fields, unknown enum values: UnsupportedValue).
// Regular expressions must be RE2. Stateless; thread-safe.
GrpcRoute ParseGrpcRouteSpec(const YAML::Node& spec, SpecReader& reader);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_MODEL_GRPC_ROUTE_PARSER_H_
