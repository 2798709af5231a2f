#include "controller/kube/yaml_fields.h"

#include <exception>

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

absl::StatusOr<YAML::Node> ParseDocumentText(absl::string_view text, absl::string_view what) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.msg));
    return absl::InvalidArgumentError(absl::StrCat(what, ": line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1, ": ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what()));
  }
}

}  // namespace facet::controller::kube
