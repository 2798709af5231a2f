// Step two of the Gateway API translation: the GRPCRoutes attached to a
// Service port become that port's RouteConfiguration (one xDS route per
// match, in precedence order across the routes), and each route gets its
// status for that parent (Accepted, ResolvedRefs).
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_GRPC_ROUTE_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_GRPC_ROUTE_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/gateway/translate/references.h"
#include "controller/gateway/translate/route_matches.h"
#include "controller/gateway/translate/service_port.h"
#include "xds_server/json/shared_node.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// The route every parent's list ends with, unless its last route already
// matches every call: calls no GRPCRoute matches fail UNIMPLEMENTED (what
// the conformance tests expect; without it gRPC fails them UNAVAILABLE).
inline constexpr char kNoRouteName[] = "facet/no-route";
// gRPC status codes of the generated fault aborts.
inline constexpr int kUnimplemented = 12;
inline constexpr int kUnavailable = 14;

// The hook for conditional routes (XdsVariantPolicy): conditions under
// which a client gets the xDS routes of the whole GRPCRoute (`route`) or of
// one rule (`rules`, by rule index), each a DynamicParameterConstraints in
// proto3 JSON (as YAML). Every xDS route of a conditional rule carries
// "@whenConstraints" (the AND of both when both apply), and the
// RouteConfiguration is compiled into exclusive, covering variants by
// xds::CompileConditions, as "@when" in an XdsResource is.
//
// When every route on a parent is conditional as a whole, the parent's
// default route (kDefaultRouteName, to the Service's own Cluster) is kept
// for the clients no condition selects (the complement of their OR, design
// §3.3), and kNoRouteName is for the others only.
struct RouteConditions {
  std::optional<json::SharedNode> route;
  std::map<size_t, json::SharedNode> rules;
};

// Returns the condition of the xDS routes of rule `rule` under
// `conditions` (may be null): the route's and the rule's, ANDed when both
// are set; nullopt when neither is.
std::optional<YAML::Node> RuleCondition(const RouteConditions* conditions, size_t rule);

// Returns the OR of `conditions` (not empty; one is itself), equal ones
// once.
YAML::Node AnyOf(const std::vector<YAML::Node>& conditions);

// Returns the negation of `condition`.
YAML::Node NoneOf(const YAML::Node& condition);

// A GRPCRoute on one parent, for ScopeToClients.
struct ScopedRoute {
  std::string ns;                               // The GRPCRoute's namespace.
  const RouteConditions* conditions = nullptr;  // Its policies' conditions; null: none.
};

// The conditions of the GRPCRoutes on one parent, scoped to their clients.
struct ClientScopes {
  // Per route, in the order given: its conditions with its client scope
  // ANDed into the route-level condition.
  std::vector<RouteConditions> routes;
  // The clients some route is for (the OR of the route-level conditions)
  // when that is not every client; nullopt when it is.
  std::optional<YAML::Node> routed;
};

// Scopes the GRPCRoutes on a parent Service in namespace `service_ns`
// (GEP-1294): a consumer route (another namespace than the Service's) is
// for the clients whose `param` is its namespace, {param: ns}; a producer
// route is for the others, NOT(OR of the consumer namespaces). Every route
// keeps its policies' conditions besides (AND). Without consumer routes the
// conditions are unchanged. Pure.
ClientScopes ScopeToClients(absl::string_view service_ns, absl::Span<const ScopedRoute> routes,
                            absl::string_view param);

// One xDS route of a GRPCRoute.
struct XdsRoute {
  Precedence precedence;     // Complete: lengths, route, rule and match.
  YAML::Node route;          // The Route (proto3 JSON as YAML), named.
  bool conditional = false;  // It carries "@whenConstraints".
  bool matches_all = false;  // Unconditional, and every call matches it.
};

// The part of a GRPCRoute's translation that is the same on every parent.
struct TranslatedRoute {
  xds::ObjectRef ref;
  int64_t generation = 0;
  // The xDS routes, in rule and match order; empty unless accepted.
  std::vector<XdsRoute> routes;
  // Accepted (True Accepted, or False UnsupportedValue/IncompatibleFilters)
  // and ResolvedRefs, at `generation`.
  Condition accepted;
  Condition resolved_refs;
};

// Translates the rules of `route` (a GRPCRoute GatewayObject). Route names
// are "<ns>/<route>/<rules[i].name, or rules[i]>", plus "/matches[j]" when
// the rule has more than one match; a rule without matches matches every
// call. Backends: weight 0 is left out; one left is the route's cluster,
// several a weighted_clusters (total_weight their sum); the share of
// invalid backends goes to one kUnroutableName entry that fails
// UNAVAILABLE, and a rule with no valid weight at all fails every call
// UNAVAILABLE. Any error (a finding of the parser, a filter, a header or
// regex gRPC cannot match) makes the route not Accepted, and then it has no
// routes. `conditions` may be null. Pure; thread-safe.
TranslatedRoute TranslateRoute(const GatewayObject& route, const RouteConditions* conditions,
                               const GatewayLookup& lookup, const TranslateOptions& options);

// Makes the xDS routes of each rule of a translated GRPCRoute carry the
// rule's condition under `conditions` (RuleCondition; may be null).
void ApplyConditions(const RouteConditions* conditions, std::vector<XdsRoute>* routes);

// Returns the message of a condition made of `causes`: each as
// "field: message" (the message alone without a field), joined by "; ".
std::string ConditionMessage(const std::vector<ConditionCause>& causes);

// Returns the status entry of `translated` for its parentRef `parent_ref`
// that resolved to `resolution` (kAttached or kRejected): Accepted False
// with the resolution's reason when rejected, the route's own conditions
// otherwise.
ParentStatus ParentStatusFor(const TranslatedRoute& translated, const ObjectReference& parent_ref,
                             const ParentResolution& resolution);

// A GRPCRoute attached to the parent being translated.
struct AttachedRoute {
  const GatewayObject* route = nullptr;  // A GRPCRoute; never null.
  // Indices of its parentRefs that resolve to this port (ResolveParentRef).
  std::vector<size_t> parent_refs;
  const RouteConditions* conditions = nullptr;  // Null: unconditional.
};

struct ParentTranslation {
  // The port's RouteConfiguration: the routes of the accepted GRPCRoutes,
  // merged and sorted by Precedes, then kNoRouteName; the default
  // (DefaultRouteConfiguration) when none is accepted.
  xds::ResourceObject route_configuration;
  // Per attached route, in the order given: its status entries for this
  // parent (one per index in AttachedRoute::parent_refs).
  std::vector<GatewayStatus> statuses;
};

// Translates `port` of `service` with the GRPCRoutes attached to it.
// Pure; thread-safe.
ParentTranslation TranslateParent(const GatewayObject& service, const ServicePort& port,
                                  absl::Span<const AttachedRoute> routes,
                                  const GatewayLookup& lookup, const TranslateOptions& options);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_GRPC_ROUTE_H_
