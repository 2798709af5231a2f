// What a client with given dynamic parameters would see for one xDS target:
// the variant each resource selects and the graph Listener ->
// RouteConfiguration -> Cluster -> ClusterLoadAssignment, or where and why
// it breaks. Computed from a Snapshot (offline from manifests, or by a
// running server from the one it serves).
#ifndef FACET_XDS_SERVER_EXPLAIN_EXPLAIN_H_
#define FACET_XDS_SERVER_EXPLAIN_EXPLAIN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {

struct ExplainRequest {
  // The xDS target: NAME as a gRPC client dials it (xds:///NAME), the whole
  // URI xds:///NAME or xds://AUTHORITY/NAME, or a full xdstp:// listener
  // name.
  std::string target;
  // The bootstrap authority the client resolves the target with: the
  // listener is then xdstp://AUTHORITY/envoy.config.listener.v3.Listener/NAME
  // (gRPC's default template). Empty: the old-style name NAME, or the
  // authority an xds://AUTHORITY/NAME target names. Must be empty for an
  // xdstp:// target, and the same as an xds://AUTHORITY/NAME target's.
  std::string authority;
  ParameterSet params;
  // Objects the source rejected, by (type alias, served name): a missing
  // resource that one of them declares says so ("rejected: WHY").
  std::map<std::pair<std::string, std::string>, std::string> rejected;
  // Objects whose latest revision the source rejected while their previous
  // accepted revision keeps serving, with why ("FIELD: MESSAGE"): a
  // resource they serve says so.
  std::map<ObjectRef, std::string> serving_previous;
};

// The route rule through which a RouteConfiguration (or a listener's inline
// route_config) references a cluster: what the client matches and, for
// weighted_clusters, the share of RPCs it sends there.
struct ExplainRouteRule {
  std::string virtual_host;  // Name of the route's virtual host.
  int index = 0;             // Of the route in its virtual host.
  std::string field;         // The route, e.g. "virtual_hosts[0].routes[2]".
  std::string name;          // The route's name; "" when it has none.
  std::string match;         // In words: `prefix "/"`, `path "/a.B/C", header x == "y"`.
  // For weighted_clusters: this cluster's weight and the sum of the route's
  // weights (what gRPC divides by); both 0 for a route naming one cluster.
  uint32_t weight = 0;
  uint64_t total_weight = 0;
  bool weighted() const { return total_weight > 0; }
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
  // Set when `object` serves its previous revision because the latest is
  // rejected: why it is ("FIELD: MESSAGE").
  std::string serving_previous;
  // The name of the virtual host the client chooses in it ("" when none is
  // chosen, or for other types).
  std::string virtual_host;
  // For a cluster referenced by a route: the route's rule (at most 64 per
  // parent, like the route lines; nullopt past them and for other references).
  std::optional<ExplainRouteRule> route_rule;
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

// What a target names, as a gRPC client reads it.
struct ExplainTarget {
  // The name virtual hosts are matched against (xds:///NAME: NAME); empty
  // for an xdstp:// listener name, which chooses no virtual host.
  std::string host;
  // The authority the client resolves it with ("" for old-style names).
  std::string authority;
  std::string listener_name;
};

// Reads the target of `request` as a gRPC client does (NAME, xds:///NAME,
// xds://AUTHORITY/NAME, or an xdstp:// listener name). InvalidArgument,
// naming --target or --authority, for an authority with an xdstp target, two
// different authorities, an xds: URI of another form, or a name that is not a
// valid resource name.
absl::StatusOr<ExplainTarget> ParseExplainTarget(const ExplainRequest& request);

// Returns the listener name a gRPC client resolves `request` to
// (ParseExplainTarget's), with its errors.
absl::StatusOr<std::string> ListenerNameFor(const ExplainRequest& request);

// Returns why an object is rejected: its first error finding,
// "FIELD: MESSAGE" (or "MESSAGE" without a field); "" when it has none.
std::string RejectionReason(const ObjectStatus& status);

// Adds to `request` what a source's object statuses tell a client's graph:
// the objects that serve their previous revision (serving_previous).
void AddSourceStatuses(absl::Span<const std::shared_ptr<const ObjectStatus>> statuses,
                       ExplainRequest* request);

// Resolves the graph of `request` in `snapshot`. InvalidArgument as
// ListenerNameFor; everything else, a missing listener included, is a
// result with problems. Where the snapshot's variants carry no references (a
// relay's cache), they are read from the resources, so that what the cache
// lacks is reported as not cached. Thread-compatible; the snapshot is
// immutable.
absl::StatusOr<ExplainResult> Explain(const Snapshot& snapshot, const ExplainRequest& request);

// Renders a result as indented text, one resource per line.
std::string ExplainToText(const ExplainResult& result);
// Renders a result as JSON: {"target", "authority", "listener_name",
// "parameters", "partial", "complete", "problems", "graph": node}, a node
// being {"type", "name", "field", "status", "object", "variant", "version",
// "constraints", "serving_previous", "virtual_host", "route_rule", "details",
// "problem", "children"}, "route_rule" being null or {"virtual_host", "index",
// "field", "name", "match", "weight", "total_weight"}; keys sorted.
std::string ExplainToJson(const ExplainResult& result);
// Reads what ExplainToJson wrote. InvalidArgument when it does not parse.
absl::StatusOr<ExplainResult> ExplainFromJson(absl::string_view json);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_EXPLAIN_EXPLAIN_H_
