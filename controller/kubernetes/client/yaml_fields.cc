#include "controller/kubernetes/client/yaml_fields.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace facet::controller::kube {

YAML::Node Field(const YAML::Node& map, absl::string_view key) {
  if (map.IsDefined() && map.IsMap()) {
    for (const auto& entry : map) {
      if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node FieldAt(const YAML::Node& node, std::initializer_list<absl::string_view> path) {
  // Node::operator= would write through to the tree; reset() rebinds.
  YAML::Node current = node;
  for (absl::string_view key : path) {
    current.reset(Field(current, key));
    if (!current.IsDefined()) break;
  }
  return current;
}

std::string StringAt(const YAML::Node& node, std::initializer_list<absl::string_view> path) {
  const YAML::Node value = FieldAt(node, path);
  return value.IsDefined() && value.IsScalar() ? value.Scalar() : std::string();
}

std::string ResourceVersionOf(const YAML::Node& object) {
  return StringAt(object, {"metadata", "resourceVersion"});
}

absl::StatusOr<std::string> ObjectKey(const YAML::Node& object) {
  const std::string name = StringAt(object, {"metadata", "name"});
  if (name.empty()) return absl::InvalidArgumentError("object has no metadata.name");
  const std::string ns = StringAt(object, {"metadata", "namespace"});
  return ns.empty() ? name : absl::StrCat(ns, "/", name);
}

json::YamlLimits ObjectLimits(absl::string_view unit) {
  json::YamlLimits limits;
  limits.unit = unit;
  limits.advice = "";
  return limits;
}

json::YamlLimits ListLimits() {
  json::YamlLimits limits = ObjectLimits("list response");
  limits.max_nodes = kMaxListNodes;
  limits.max_scalar_bytes = kMaxListScalarBytes;
  limits.max_depth = json::kMaxYamlDepth + 2;  // The list's map and its items.
  limits.object_paths = {{"items", json::kEachElement}};
  return limits;
}

json::YamlLimits WatchEventLimits() {
  json::YamlLimits limits = ObjectLimits("watch event");
  limits.max_nodes = json::kMaxYamlNodes + kMaxEnvelopeNodes;
  limits.max_scalar_bytes = json::kMaxYamlScalarBytes + kMaxEnvelopeScalarBytes;
  limits.max_depth = json::kMaxYamlDepth + 1;  // The event's map.
  limits.object_paths = {{"object"}};
  return limits;
}

absl::StatusOr<YAML::Node> ParseDocumentText(absl::string_view text, absl::string_view what,
                                             const json::YamlLimits& limits, YAML::Node* partial) {
  json::YamlDocuments read = json::ReadYamlDocuments(text, limits);
  if (read.error.has_value()) {
    if (partial != nullptr) partial->reset(read.partial);
    const json::YamlPosition& at = read.error->position;
    if (at.line <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", read.error->message));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": line ", at.line, ", column ", at.column, ": ", read.error->message));
  }
  if (read.documents.empty()) return YAML::Node(YAML::NodeType::Null);
  return read.documents.front().node;
}

}  // namespace facet::controller::kube
