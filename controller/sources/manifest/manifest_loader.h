// Reads manifest files and directories (the objects a user would
// `kubectl apply -f`) into Facet objects.
#ifndef FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_LOADER_H_
#define FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_LOADER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "controller/gateway/model/gateway_object.h"
#include "xds_server/common/digest.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller {

// A problem with a file or a document rather than with a named object.
struct ManifestProblem {
  enum class Kind {
    kUnreadable,  // The path cannot be read, or is not valid YAML.
    kError,       // A document is unusable, or an object is defined twice.
    kWarning,     // A document Facet ignores (another kind of object), or a
                  // Service, EndpointSlice or ReferenceGrant defined twice.
  };
  Kind kind;
  std::string location;  // "path", "path:line" or "path:line:column".
  std::string message;
  // Where in the file, when known (1-based; 0: not known).
  int line = 0;
  int column = 0;
};

struct ManifestSet {
  std::vector<xds::ResourceObject> resources;
  std::vector<xds::AuthorityObject> authorities;
  // GRPCRoutes, Services, EndpointSlices, ReferenceGrants and
  // XdsVariantPolicies, for the Gateway API front end.
  std::vector<gateway::GatewayObject> gateway_objects;
  std::vector<ManifestProblem> problems;
  std::vector<std::string> files;  // Every file read, in order.
};

// Reads each path: a file, or a directory whose *.yaml, *.yml and *.json
// files are read in name order (not recursively, as `kubectl apply -f DIR`).
// Multi-document YAML and `kind: List` are supported. Never fails as a whole:
// problems are collected and every usable object is returned.
// Stateless; thread-safe.
ManifestSet LoadManifests(absl::Span<const std::string> paths);

// One Facet object (or Gateway API object) read from a file.
struct FileObject {
  std::variant<xds::ResourceObject, xds::AuthorityObject, gateway::GatewayObject> object;
  // A digest of the object's document (as JSON: formatting does not count)
  // and location (set when asked for): equal digests mean an equal object,
  // so a re-read can skip it.
  xds::Digest128 fingerprint;

  const xds::ObjectRef& ref() const;
};
// Files of thousands of objects: growing the vector must move them.
static_assert(std::is_nothrow_move_constructible_v<FileObject>);

// What one read of one file found.
struct ManifestFile {
  bool opened = false;      // The file could be opened.
  bool unreadable = false;  // Not readable, or not valid YAML (see problems).
  std::vector<FileObject> objects;  // In file order; repeats within the file dropped.
  std::vector<ManifestProblem> problems;
  // The text read (ReadManifestFile only; empty when unreadable).
  std::string text;
};

// Largest manifest file Facet reads, in bytes. A larger file is refused
// (unreadable) before it is read.
inline constexpr size_t kMaxManifestFileBytes = 8 * 1024 * 1024;

// Reads one manifest file (multi-document YAML, `kind: List`, JSON) of at
// most kMaxManifestFileBytes, as ParseManifestText does. With `fingerprints`,
// sets each object's fingerprint. Stateless; thread-safe.
ManifestFile ReadManifestFile(const std::string& path, bool fingerprints);

// Parses the text of one manifest file read from `path` (which only names it
// in locations and problems). The YAML is read within json::YamlLimits
// (nodes, bytes, depth; aliases counted expanded; duplicate keys rejected);
// any problem there makes the whole text unreadable, with a problem located
// at "path:line:column". Stateless; thread-safe.
ManifestFile ParseManifestText(absl::string_view text, const std::string& path,
                               bool fingerprints);

// Reads each file as ReadManifestFile does, spreading many files over the
// cores; results in the order of `paths`. Thread-safe.
std::vector<ManifestFile> ReadManifestFiles(absl::Span<const std::string> paths,
                                            bool fingerprints);

// While alive, glibc's malloc keeps no fastbins (mallopt M_MXFAST 0): a
// large load allocates and frees millions of small yaml-cpp nodes, and
// consolidating fastbins took about a quarter of the loading thread's time
// (12,000 objects). It also grows its heaps 64 MiB at a time (M_TOP_PAD):
// otherwise a thread's arena grows by what each allocation lacks, one
// mprotect call at a time (about 7,000 for that load, besides 3,000 brk
// calls), each taking the process's memory map lock that the other
// threads' page faults wait for. Pages are still only taken when first
// written. Destruction restores glibc's
// defaults, so serving allocates as it always did. The settings are
// process-wide: one at a time, on the thread that loads, before serving
// starts.
class BulkLoadAllocation {
 public:
  BulkLoadAllocation();
  ~BulkLoadAllocation();
  BulkLoadAllocation(const BulkLoadAllocation&) = delete;
  BulkLoadAllocation& operator=(const BulkLoadAllocation&) = delete;
};

// Whether LoadManifests reads a directory entry with this file name:
// *.yaml, *.yml or *.json, and not a dot-file.
bool IsManifestFileName(absl::string_view name);

// Returns the files LoadManifests would read for `paths` (for watching).
std::vector<std::string> ListManifestFiles(absl::Span<const std::string> paths,
                                           std::vector<ManifestProblem>* problems);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SOURCES_MANIFEST_MANIFEST_LOADER_H_
