// Parses Facet custom-resource documents (as written in manifests or returned
// by the Kubernetes API) into the source-independent objects the snapshot
// builder validates.
#ifndef FACET_CONTROLLER_OBJECTS_OBJECT_PARSER_H_
#define FACET_CONTROLLER_OBJECTS_OBJECT_PARSER_H_

#include <string>
#include <variant>

#include "absl/strings/string_view.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/objects/crd.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// A document that is a Kubernetes object of another kind; Facet ignores it.
struct ForeignObject {
  std::string kind;
  std::string name;
};

// A document that is not a Kubernetes object at all, or a Facet object so
// malformed that it cannot be identified (no name).
struct UnusableDocument {
  std::string message;
};

using ParsedDocument = std::variant<xds::ResourceObject, xds::AuthorityObject,
                                    gateway::GatewayObject, ForeignObject, UnusableDocument>;

// Parses one document. Problems in an identifiable Facet object become
// findings on that object (with `spec` unset when the spec is unusable), so
// the object is reported by name. The Gateway API kinds Facet reads
// (gateway::IsGatewayKind) become a gateway::GatewayObject. `default_namespace`
// applies to namespaced objects without metadata.namespace. Stateless;
// thread-safe.
ParsedDocument ParseDocument(const YAML::Node& document, absl::string_view location,
                             absl::string_view default_namespace);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_OBJECTS_OBJECT_PARSER_H_
