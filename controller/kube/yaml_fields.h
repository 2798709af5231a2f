// Non-throwing accessors for Kubernetes objects held as yaml-cpp nodes, and
// parsing of JSON/YAML text into nodes with exceptions converted to Status.
// yaml-cpp's operator[] inserts into non-const nodes and yields nodes that
// throw on const ones; these never do either, so they are safe on objects
// shared read-only between threads.
#ifndef FACET_CONTROLLER_KUBE_YAML_FIELDS_H_
#define FACET_CONTROLLER_KUBE_YAML_FIELDS_H_

#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::kube {

// Returns map[key], or an undefined node when `map` is not a map or lacks it.
YAML::Node Field(const YAML::Node& map, absl::string_view key);

// Follows `path` through nested maps; undefined when any step is missing.
YAML::Node FieldAt(const YAML::Node& node, std::initializer_list<absl::string_view> path);

// Returns the scalar at `path`, or "" when it is missing or not a scalar.
std::string StringAt(const YAML::Node& node, std::initializer_list<absl::string_view> path);

// Returns metadata.resourceVersion ("" when absent).
std::string ResourceVersionOf(const YAML::Node& object);

// Returns the cache key of an object as client-go's MetaNamespaceKeyFunc
// does: "namespace/name", or "name" for cluster-scoped objects. Fails with
// InvalidArgument when metadata.name is missing.
absl::StatusOr<std::string> ObjectKey(const YAML::Node& object);

// Parses one JSON (or YAML) document. Fails with InvalidArgument naming
// `what` and the position when the text does not parse.
absl::StatusOr<YAML::Node> ParseDocumentText(absl::string_view text, absl::string_view what);

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBE_YAML_FIELDS_H_
