// Reads YAML (or JSON) text into yaml-cpp documents in one linear pass over
// yaml-cpp's parser events, enforcing bounds before anything is expanded:
// node count (aliases counted as the nodes they repeat), scalar bytes (the
// same), nesting depth, and no duplicate map keys (rejected as the Kubernetes
// API server's YAML reader does). Aliases are allowed within these bounds;
// an alias shares its anchor's node, so memory stays linear in the text and
// every later walk of the tree is bounded by the node limit.
//
// The documents of one text are built in one yaml-cpp memory pool, and a map
// key is one node shared by every map of the text that holds it (the same
// scalar and tag), as an alias shares its anchor: the documents are to be
// read, not changed. Assigning to a yaml-cpp Node that refers into them
// writes into the tree (rebind with Node::reset instead); a node of the
// pool stays alive while any document or node of the text is held.
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

// Bounds on one object inside a text (see YamlLimits::object_paths).
struct YamlObjectLimits {
  size_t max_nodes = kMaxYamlNodes;
  size_t max_scalar_bytes = kMaxYamlScalarBytes;
  int max_depth = kMaxYamlDepth;  // Counted from the object's own top level.
};

// Matches any element of a list in a YamlLimits::object_paths entry.
inline constexpr absl::string_view kEachElement = "*";

struct YamlLimits {
  // Bounds on the whole text.
  size_t max_nodes = kMaxYamlNodes;
  size_t max_scalar_bytes = kMaxYamlScalarBytes;
  int max_depth = kMaxYamlDepth;
  // In messages: what the bounds above are the limit per ("that is the limit
  // per file"), and what to do about it ("split it"; may be empty).
  absl::string_view unit = "file";
  absl::string_view advice = "split it";
  // Where a text wraps objects that must each stay within `per_object`
  // besides the bounds above: paths of map keys from a document's root, with
  // kEachElement for every element of a list. {"items", kEachElement} is each
  // item of a `kind: List`; {"object"} the object of a watch event. Empty:
  // no per-object bounds.
  std::vector<std::vector<absl::string_view>> object_paths;
  YamlObjectLimits per_object;
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
  // When `error` is a bound exceeded, a duplicate key or another problem
  // found in the events (not invalid YAML): what was read of the document
  // with the problem, up to it, to find an identifier to answer with. Null
  // otherwise.
  YAML::Node partial;
};

// Reads every document of `text`. Stops at the first problem: invalid YAML,
// a bound in `limits` exceeded, a duplicate key in a map, a map key that is
// not a string, an alias inside the node it refers to. Time and memory are
// linear in the size of `text`. Stateless; thread-safe.
// Parsed with libyaml; a text libyaml refuses is read again by yaml-cpp,
// whose acceptance and messages decide.
YamlDocuments ReadYamlDocuments(absl::string_view text, const YamlLimits& limits = {});

namespace internal {
// ReadYamlDocuments with yaml-cpp's parser only (for the texts libyaml
// refuses, and for tests that compare the two).
YamlDocuments ReadYamlDocumentsWithYamlCpp(absl::string_view text, const YamlLimits& limits = {});
}  // namespace internal

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_JSON_YAML_READER_H_
