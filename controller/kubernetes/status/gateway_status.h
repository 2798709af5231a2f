// The status of Gateway API objects as Facet writes it: its entries in a
// GRPCRoute's status.parents[] (RouteParentStatus) and an
// XdsVariantPolicy's status.ancestors[] (PolicyAncestorStatus), merged with
// what the object's status holds so that other controllers' entries, and
// conditions newer than what Facet evaluated, survive.
#ifndef FACET_CONTROLLER_KUBERNETES_STATUS_GATEWAY_STATUS_H_
#define FACET_CONTROLLER_KUBERNETES_STATUS_GATEWAY_STATUS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "controller/gateway/model/gateway_object.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// The controllerName of Facet's entries.
inline constexpr char kGatewayControllerName[] = "facet.dev/gateway-controller";

// Bounds of the Gateway API's status types: parents (RouteStatus),
// ancestors (PolicyStatus), conditions per entry.
inline constexpr size_t kMaxStatusParents = 32;
inline constexpr size_t kMaxStatusAncestors = 16;
inline constexpr size_t kMaxEntryConditions = 8;

// What the Gateway API front end evaluated for one object. These are the
// fields of its status types (Condition, ParentStatus, AncestorStatus,
// GatewayStatus), which this header stands in for until they are shared.
struct GatewayCondition {
  std::string type;    // Accepted, ResolvedRefs, PartiallyInvalid.
  std::string status;  // "True", "False" or "Unknown".
  std::string reason;
  std::string message;  // Cut to 32768 bytes when written.
  int64_t observed_generation = 0;
};

// Facet's entry for one parent of a route, or one ancestor of a policy.
struct GatewayParentStatus {
  // The parentRef as the spec has it, defaults applied (group, kind); an
  // empty namespace_ is the object's own. Written back as it is.
  gateway::ObjectReference parent_ref;
  std::vector<GatewayCondition> conditions;
};

struct GatewayObjectStatus {
  xds::ObjectRef object;                       // Its namespace is that of parentRefs without one.
  int64_t generation = 0;                      // The metadata.generation evaluated.
  std::vector<GatewayParentStatus> parents;    // A GRPCRoute's: one per Facet parentRef.
  std::vector<GatewayParentStatus> ancestors;  // An XdsVariantPolicy's.
};

// Returns the `status` a GRPCRoute should have, given the one it has
// (`current`, undefined when it has none) and what Facet evaluated (`ours`,
// its `parents`: one per parentRef of the spec that is Facet's):
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
YAML::Node DesiredRouteStatus(const YAML::Node& current, const GatewayObjectStatus& ours,
                              absl::string_view controller_name, absl::Time now);

// Returns the `status` an XdsVariantPolicy should have: its
// status.ancestors[] keyed by (ancestorRef after defaulting, controllerName)
// and merged from ours.ancestors as DesiredRouteStatus merges parents; at
// most 16 ancestors; the type Facet writes is Accepted.
YAML::Node DesiredPolicyStatus(const YAML::Node& current, const GatewayObjectStatus& ours,
                               absl::string_view controller_name, absl::Time now);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_STATUS_GATEWAY_STATUS_H_
