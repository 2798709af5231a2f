// Field readers shared by the parsers of Kubernetes objects (Facet's own
// kinds and the Gateway API kinds): each problem becomes an xds::Finding
// naming the field path, never an exception.
#ifndef FACET_CONTROLLER_OBJECTS_FIELDS_H_
#define FACET_CONTROLLER_OBJECTS_FIELDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "re2/re2.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// Records an error with reason InvalidSpec at `field`.
void AddError(std::vector<xds::Finding>* findings, absl::string_view field,
              absl::string_view message);

// Whether `node` is a scalar that JSON reads as a string (quoted, or plain
// text that is not a number, boolean or null).
bool IsString(const YAML::Node& node);

// Reads an optional string field; records an error if present but not a
// string. Returns "" when absent, null or mistyped.
std::string StringField(const YAML::Node& parent, const char* key, const std::string& path,
                        std::vector<xds::Finding>* findings);

// Records an error for every key of `map` not in `known`, suggesting the
// nearest known name.
void CheckKnownFields(const YAML::Node& map, const std::string& path,
                      absl::Span<const absl::string_view> known,
                      std::vector<xds::Finding>* findings);

// A lower-case RFC 1123 subdomain (object names), without the length bound.
const RE2& DnsSubdomain();
// A lower-case RFC 1123 label (namespaces), without the length bound.
const RE2& DnsLabel();

// The readers of metadata take the object's metadata node
// (json::Child(document, "metadata"); undefined when absent), read once.

// Returns metadata.name when it is a string, else "".
std::string ObjectName(const YAML::Node& metadata);

// Records an error on metadata.name unless `name` is a lower-case RFC 1123
// subdomain of at most 253 characters.
void CheckObjectName(const std::string& name, std::vector<xds::Finding>* findings);

// Returns metadata.namespace, or `default_namespace` when it is unset;
// records an error on a namespace that is not a lower-case RFC 1123 label of
// at most 63 characters.
std::string ObjectNamespace(const YAML::Node& metadata, absl::string_view default_namespace,
                            std::vector<xds::Finding>* findings);

// Returns metadata.generation, or 0.
int64_t ObjectGeneration(const YAML::Node& metadata);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_OBJECTS_FIELDS_H_
