// Small builders for the proto3 JSON (as YAML) of the generated xDS
// resources. Internal to the translation.
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_XDS_YAML_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_XDS_YAML_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway::internal {

// The name of gRPC's fault-injection filter in every generated Listener, and
// the key of its per-route overrides.
inline constexpr char kFaultFilterName[] = "envoy.filters.http.fault";

// Returns a string scalar that stays a string in JSON whatever it looks
// like ("80", "true").
YAML::Node String(absl::string_view value);

// Returns an integer scalar.
YAML::Node Integer(int64_t value);

// Returns an empty map.
YAML::Node EmptyMap();

// Returns a typed_per_filter_config map that makes the fault filter fail
// every call with gRPC status `grpc_status` before any pick (gRFC A33).
YAML::Node AbortConfig(int grpc_status);

// Returns a generated object serving `resource` as the xDS resource of
// spec.type `alias` named `name`: one unconstrained variant.
xds::ResourceObject GeneratedObject(absl::string_view ns, absl::string_view alias,
                                    absl::string_view name, YAML::Node resource,
                                    std::string generated_from);

}  // namespace facet::controller::gateway::internal

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_XDS_YAML_H_
