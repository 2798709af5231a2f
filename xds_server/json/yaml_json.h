// Converts yaml-cpp documents (YAML or JSON text) to JSON text, following the
// YAML 1.2 core schema for plain scalars so that `port: 80` is a number and
// `name: "80"` is a string.
#ifndef FACET_XDS_SERVER_JSON_YAML_JSON_H_
#define FACET_XDS_SERVER_JSON_YAML_JSON_H_

#include <cstddef>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace facet::json {

// What a scalar node denotes in JSON terms.
enum class ScalarKind { kNull, kBool, kInteger, kFloat, kString };

// Classifies a scalar node: quoted scalars are strings; plain scalars follow
// the YAML 1.2 core schema (null/~, true/false, decimal/0x/0o integers,
// decimal floats, .inf/.nan). Requires node.IsScalar() or node.IsNull().
ScalarKind ClassifyScalar(const YAML::Node& node);

// Returns the JSON name of a scalar kind ("null", "a boolean", ...), for messages.
absl::string_view ScalarKindName(ScalarKind kind);

// Returns the JSON text of `node`. Fails with InvalidArgument (naming `path`)
// for YAML that has no JSON equivalent (non-string map keys) and for nesting
// deeper than 100 levels; with ResourceExhausted for JSON longer than
// `max_bytes`, stopping there (so the work is bounded by `max_bytes` even for
// a tree whose aliases repeat large subtrees).
absl::StatusOr<std::string> YamlToJson(
    const YAML::Node& node, absl::string_view path,
    size_t max_bytes = std::numeric_limits<size_t>::max());

// Returns map[key] when `map` is a map holding `key`, and an undefined node
// otherwise. Use it instead of yaml-cpp's operator[] on const nodes, whose
// result for a missing key throws on most accessors.
YAML::Node Child(const YAML::Node& map, absl::string_view key);

// Returns the node's kind in words: "a map", "a list", "a string", ...
std::string DescribeNode(const YAML::Node& node);

// Receives the nodes of a document from WalkYaml.
class YamlVisitor {
 public:
  virtual ~YamlVisitor() = default;
  virtual void Undefined() = 0;
  virtual void Null() = 0;
  virtual void Scalar(const std::string& tag, const std::string& text) = 0;
  // A list of `size` items, visited next.
  virtual void List(size_t size) = 0;
  // A map of `size` entries, visited next: each key, then its value.
  virtual void Map(size_t size) = 0;
};

// Visits `node` and every node below it, depth first in document order (an
// alias's node as often as it appears), reading the document in place rather
// than through a yaml-cpp Node per node; what it reports is what Type(),
// Tag(), Scalar(), size() and iteration report. Recursion is as deep as the
// document's nesting.
void WalkYaml(const YAML::Node& node, YamlVisitor& visitor);

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_JSON_YAML_JSON_H_
