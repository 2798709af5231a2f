// The status of Gateway API objects as Facet writes it: its entries in a
// GRPCRoute's status.parents[] (RouteParentStatus) and an
// XdsVariantPolicy's status.ancestors[] (PolicyAncestorStatus), merged with
// what the object's status holds so that other controllers' entries, and
// conditions newer than what Facet evaluated, survive.
#ifndef FACET_CONTROLLER_KUBERNETES_STATUS_GATEWAY_STATUS_H_
#define FACET_CONTROLLER_KUBERNETES_STATUS_GATEWAY_STATUS_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/gateway/model/gateway_status.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// Bounds of the Gateway API's status types: parents (RouteStatus),
// ancestors (PolicyStatus), conditions per entry.
inline constexpr size_t kMaxStatusParents = 32;
inline constexpr size_t kMaxStatusAncestors = 16;
inline constexpr size_t kMaxEntryConditions = 8;

// Returns the `status` a GRPCRoute should have, given the one it has
// (`current`, undefined when it has none) and what Facet evaluated (`ours`,
// its `parents`: one per parentRef of the spec that is Facet's; an empty
// parentRef namespace is the route's own):
// - status.parents[] entries are keyed by (parentRef after defaulting,
//   controllerName); entries of other controllers are kept as they are;
// - an entry of `controller_name` whose parentRef is not among ours (it
//   left the spec) is dropped, unless a condition of it was observed at a
//   generation newer than ours.generation (our view is older);
// - conditions are merged by type: one whose observedGeneration is higher
//   than ours is kept as it is; one keeps its lastTransitionTime while its
//   status stays; the types Facet writes (Accepted, ResolvedRefs,
//   PartiallyInvalid) that ours lacks are removed (but for those observed
//   after ours.generation); other types are kept;
// - at most 32 parents (others' entries first: when full, ours are left
//   out, new ones first), 8 conditions per entry (Facet's types first),
//   messages of at most 32768 bytes (cut at a UTF-8 character boundary).
// Other fields of `current` are kept. Deterministic apart from `now`.
YAML::Node DesiredRouteStatus(const YAML::Node& current, const gateway::GatewayStatus& ours,
                              absl::string_view controller_name, absl::Time now);

// Returns the `status` an XdsVariantPolicy should have: its
// status.ancestors[] keyed by (ancestorRef after defaulting, controllerName)
// and merged from ours.ancestors as DesiredRouteStatus merges parents; at
// most 16 ancestors; the type Facet writes is Accepted.
YAML::Node DesiredPolicyStatus(const YAML::Node& current, const gateway::GatewayStatus& ours,
                               absl::string_view controller_name, absl::Time now);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_STATUS_GATEWAY_STATUS_H_
