// Non-throwing accessors for Kubernetes objects held as yaml-cpp nodes, and
// bounded parsing of JSON/YAML text from the Kubernetes API into nodes.
// yaml-cpp's operator[] inserts into non-const nodes and yields nodes that
// throw on const ones; these never do either, so they are safe on objects
// shared read-only between threads.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_YAML_FIELDS_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_YAML_FIELDS_H_

#include <cstddef>
#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xds_server/json/yaml_reader.h"
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

// Bounds on what is read from the Kubernetes API. One object (in a reply of
// its own, a list item, a watch event, an AdmissionReview) has those of a
// manifest file, so whatever `facet validate` reads from a file is read from
// the API too: json::kMaxYamlNodes nodes, json::kMaxYamlScalarBytes bytes of
// keys and values, json::kMaxYamlDepth levels. A list reply holds many
// objects (the first list of a collection is served whole from the API
// server's cache, whatever the page size), so its whole body has looser
// bounds: the benchmark world's 12,000 XdsResources (docs/performance.md),
// with the metadata and status the API server adds, are a 13.5 MB list of
// 1.7 million nodes that yaml-cpp holds in about 0.8 GB; these allow 4.7
// times that (about 4 GB).
inline constexpr size_t kMaxListNodes = 8'000'000;
inline constexpr size_t kMaxListScalarBytes = size_t{512} << 20;
// What a reply may hold around its objects (a watch event's type, an
// AdmissionReview's request fields).
inline constexpr size_t kMaxEnvelopeNodes = 10'000;
inline constexpr size_t kMaxEnvelopeScalarBytes = size_t{1} << 20;

// Returns the bounds for a text that is one object (a GET, create or update
// reply, a Status, a kubeconfig); `unit` names it in messages ("object",
// "kubeconfig file"; a string literal).
json::YamlLimits ObjectLimits(absl::string_view unit = "object");
// Returns the bounds for a list reply: each item within ObjectLimits; the
// body within kMaxListNodes and kMaxListScalarBytes.
json::YamlLimits ListLimits();
// Returns the bounds for one watch event: its object within ObjectLimits;
// the event within those plus the envelope's.
json::YamlLimits WatchEventLimits();

// Parses the first JSON (or YAML) document of `text` in one linear pass
// within `limits` (json::ReadYamlDocuments). Fails with InvalidArgument
// naming `what`, the line and column, and the problem (the limit exceeded,
// with the object it applies to, such as items[3]) when the text does not
// parse or exceeds a limit. A map key may appear once: the API server never
// sends duplicate keys (it encodes Go structs and maps), so refusing them
// refuses nothing it produces, and a kubeconfig with one is ambiguous
// (client-go keeps the last, yaml-cpp the first). When the text exceeds a
// limit and `partial` is not null, it receives what was read before the
// problem (json::YamlDocuments::partial). Thread-safe.
absl::StatusOr<YAML::Node> ParseDocumentText(absl::string_view text, absl::string_view what,
                                             const json::YamlLimits& limits = ObjectLimits(),
                                             YAML::Node* partial = nullptr);

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_YAML_FIELDS_H_
