// What a client with given dynamic parameters would see for one xDS target:
// the variant each resource selects and the graph Listener ->
// RouteConfiguration -> Cluster -> ClusterLoadAssignment, or where and why
// it breaks. Computed from a Snapshot (offline from manifests, or by a
// running server from the one it serves).
#ifndef FACET_XDS_SERVER_EXPLAIN_EXPLAIN_H_
#define FACET_XDS_SERVER_EXPLAIN_EXPLAIN_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {

struct ExplainRequest {
  // The xDS target: the name a gRPC client dials as xds:///NAME, or a full
  // xdstp:// listener name.
  std::string target;
  // The bootstrap authority the client resolves the target with: the
  // listener is then xdstp://AUTHORITY/envoy.config.listener.v3.Listener/NAME
  // (gRPC's default template). Empty: the old-style name NAME. Must be empty
  // for an xdstp:// target.
  std::string authority;
  ParameterSet params;
  // Objects the source rejected, by (type alias, served name): a missing
  // resource that one of them declares says so ("rejected: WHY").
  std::map<std::pair<std::string, std::string>, std::string> rejected;
};

// One resource of the graph, as the client would resolve it.
struct ExplainNode {
  enum class Status {
    kSelected,      // A variant is selected: `variant` and the rest are set.
    kMissing,       // No object serves the name.
    kNoVariant,     // Served, but no variant matches the parameters.
    kNotCached,     // A partial source (the relay) has not learned it yet.
    kInvalidName,   // The reference is not a valid resource name.
    kShownAbove,    // Already expanded earlier in the graph.
  };
  std::string type;   // Alias: listener, route, cluster, endpoint.
  std::string name;   // Served (normalised) name, or as written when invalid.
  std::string field;  // The referencing field in the parent ("" for the root).
  Status status = Status::kSelected;
  std::string object;       // Owning object, "namespace/name".
  std::string variant;      // Label.
  std::string version;
  std::string constraints;  // Canonical text; "" for an unconstrained variant.
  // What the client does with it (virtual host chosen, endpoint addresses).
  std::vector<std::string> details;
  // Why the graph breaks here ("" when it does not).
  std::string problem;
  std::vector<ExplainNode> children;
};

struct ExplainResult {
  std::string target;
  std::string authority;
  std::string listener_name;
  ParameterSet params;
  bool partial = false;  // Computed from a partial source's cache.
  ExplainNode root;
  // "type name: problem" for every node with a problem, in graph order.
  std::vector<std::string> problems;
  bool complete() const { return problems.empty(); }
};

// Returns the listener name a gRPC client resolves `request` to.
// InvalidArgument for an authority with an xdstp target, or a name that is
// not a valid resource name.
absl::StatusOr<std::string> ListenerNameFor(const ExplainRequest& request);

// Resolves the graph of `request` in `snapshot`. InvalidArgument as
// ListenerNameFor; everything else, a missing listener included, is a
// result with problems. Thread-compatible; the snapshot is immutable.
absl::StatusOr<ExplainResult> Explain(const Snapshot& snapshot, const ExplainRequest& request);

// Renders a result as indented text, one resource per line.
std::string ExplainToText(const ExplainResult& result);
// Renders a result as JSON: {"target", "authority", "listener_name",
// "parameters", "partial", "complete", "problems", "graph": node}, a node
// being {"type", "name", "field", "status", "object", "variant", "version",
// "constraints", "details", "problem", "children"}.
std::string ExplainToJson(const ExplainResult& result);
// Reads what ExplainToJson wrote. InvalidArgument when it does not parse.
absl::StatusOr<ExplainResult> ExplainFromJson(absl::string_view json);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_EXPLAIN_EXPLAIN_H_
