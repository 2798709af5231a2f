#include "controller/gateway/translate/xds_yaml.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/gateway/translate/service_port.h"

namespace facet::controller::gateway::internal {

YAML::Node String(absl::string_view value) {
  YAML::Node node(std::string{value});
  node.SetTag("!");
  return node;
}

YAML::Node Integer(int64_t value) { return YAML::Node(absl::StrCat(value)); }

YAML::Node EmptyMap() { return YAML::Node(YAML::NodeType::Map); }

YAML::Node AbortConfig(int grpc_status) {
  YAML::Node fault;
  fault["@type"] = String("type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault");
  fault["abort"]["grpc_status"] = Integer(grpc_status);
  // grpc-js-xds refuses an abort without a percentage.
  fault["abort"]["percentage"]["numerator"] = Integer(100);
  YAML::Node config;
  config[kFaultFilterName] = fault;
  return config;
}

xds::ResourceObject GeneratedObject(absl::string_view ns, absl::string_view alias,
                                    absl::string_view name, YAML::Node resource,
                                    std::string generated_from) {
  xds::ResourceObject object;
  object.ref = GeneratedRef(ns, alias, name);
  object.generation = 1;
  xds::ResourceSpec spec;
  spec.type = std::string(alias);
  spec.name = std::string(name);
  xds::VariantSpec variant;
  variant.label = "generated";
  variant.resource = std::move(resource);
  spec.variants.push_back(std::move(variant));
  object.spec = std::move(spec);
  object.generated_from = std::move(generated_from);
  return object;
}

}  // namespace facet::controller::gateway::internal
