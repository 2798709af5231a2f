// Reads YAML (or JSON) text into yaml-cpp documents in one linear pass over
// yaml-cpp's parser events, enforcing bounds before anything is expanded:
// node count (aliases counted as the nodes they repeat), scalar bytes (the
// same), nesting depth, and no duplicate map keys (rejected as the Kubernetes
// API server's YAML reader does). Aliases are allowed within these bounds;
// an alias shares its anchor's node, so memory stays linear in the text and
// every later walk of the tree is bounded by the node limit.
#ifndef FACET_XDS_SERVER_JSON_YAML_READER_H_
#define FACET_XDS_SERVER_JSON_YAML_READER_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace facet::json {

// Most YAML nodes (scalars, keys, lists, maps) in one text, counting every
// alias as the number of nodes it repeats.
inline constexpr size_t kMaxYamlNodes = 250'000;
// Most bytes of scalars (keys and values) in one text, counting every alias
// as the bytes it repeats.
inline constexpr size_t kMaxYamlScalarBytes = 16 * 1024 * 1024;
// Deepest nesting of lists and maps.
inline constexpr int kMaxYamlDepth = 100;

struct YamlLimits {
  size_t max_nodes = kMaxYamlNodes;
  size_t max_scalar_bytes = kMaxYamlScalarBytes;
  int max_depth = kMaxYamlDepth;
};

// A position in the text, 1-based.
struct YamlPosition {
  int line = 0;
  int column = 0;
};

struct YamlDocument {
  YAML::Node node;  // Null for an empty document.
  YamlPosition position;
  // When `node` is a map with an `items` list (a `kind: List`): where each
  // item starts, in order.
  std::vector<YamlPosition> item_positions;
};

struct YamlReadError {
  YamlPosition position;
  std::string message;  // Names the limit or the offending key; no position.
};

struct YamlDocuments {
  std::vector<YamlDocument> documents;  // Empty when `error` is set.
  std::optional<YamlReadError> error;
};

// Reads every document of `text`. Stops at the first problem: invalid YAML,
// a bound in `limits` exceeded, a duplicate key in a map, a map key that is
// not a string, an alias inside the node it refers to. Time and memory are
// linear in the size of `text`. Stateless; thread-safe.
YamlDocuments ReadYamlDocuments(absl::string_view text, const YamlLimits& limits = {});

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_JSON_YAML_READER_H_
