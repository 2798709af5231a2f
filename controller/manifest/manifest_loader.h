// Reads manifest files and directories (the objects a user would
// `kubectl apply -f`) into Facet objects.
#ifndef FACET_CONTROLLER_MANIFEST_MANIFEST_LOADER_H_
#define FACET_CONTROLLER_MANIFEST_MANIFEST_LOADER_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller {

// A problem with a file or a document rather than with a named object.
struct ManifestProblem {
  enum class Kind {
    kUnreadable,  // The path cannot be read, or is not valid YAML.
    kError,       // A document is unusable, or an object is defined twice.
    kWarning,     // A document Facet ignores (another kind of object).
  };
  Kind kind;
  std::string location;  // "path" or "path:line".
  std::string message;
};

struct ManifestSet {
  std::vector<xds::ResourceObject> resources;
  std::vector<xds::AuthorityObject> authorities;
  std::vector<ManifestProblem> problems;
  std::vector<std::string> files;  // Every file read, in order.
};

// The namespace of XdsResources that do not set metadata.namespace, as with
// `kubectl apply` against the default namespace.
inline constexpr char kDefaultNamespace[] = "default";

// Reads each path: a file, or a directory whose *.yaml, *.yml and *.json
// files are read in name order (not recursively, as `kubectl apply -f DIR`).
// Multi-document YAML and `kind: List` are supported. Never fails as a whole:
// problems are collected and every usable object is returned.
// Stateless; thread-safe.
ManifestSet LoadManifests(absl::Span<const std::string> paths);

// Returns the files LoadManifests would read for `paths` (for watching).
std::vector<std::string> ListManifestFiles(absl::Span<const std::string> paths,
                                           std::vector<ManifestProblem>* problems);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_MANIFEST_MANIFEST_LOADER_H_
