// What Facet says about a GRPCRoute (status.parents[]) or an
// XdsVariantPolicy (status.ancestors[]): the one source for the status the
// controller writes, serve's /status and validate's lines. Plain data.
#ifndef FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_STATUS_H_
#define FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "controller/gateway/model/gateway_object.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller::gateway {

// The controllerName of every parent and ancestor entry Facet writes.
inline constexpr char kControllerName[] = "facet.dev/gateway-controller";

// Condition types.
inline constexpr char kConditionAccepted[] = "Accepted";
inline constexpr char kConditionResolvedRefs[] = "ResolvedRefs";
inline constexpr char kConditionPartiallyInvalid[] = "PartiallyInvalid";

// Condition statuses.
inline constexpr char kStatusTrue[] = "True";
inline constexpr char kStatusFalse[] = "False";

// Condition reasons: the Gateway API's (RouteConditionReason,
// PolicyConditionReason) and Facet's own.
inline constexpr char kReasonAccepted[] = "Accepted";
inline constexpr char kReasonNoMatchingParent[] = "NoMatchingParent";
inline constexpr char kReasonUnsupportedValue[] = "UnsupportedValue";
inline constexpr char kReasonIncompatibleFilters[] = "IncompatibleFilters";
inline constexpr char kReasonConflicted[] = "Conflicted";
inline constexpr char kReasonResolvedRefs[] = "ResolvedRefs";
inline constexpr char kReasonBackendNotFound[] = "BackendNotFound";
inline constexpr char kReasonRefNotPermitted[] = "RefNotPermitted";
inline constexpr char kReasonInvalidKind[] = "InvalidKind";
inline constexpr char kReasonUnsupportedProtocol[] = "UnsupportedProtocol";
inline constexpr char kReasonPartiallyInvalid[] = "PartiallyInvalid";
inline constexpr char kReasonInvalid[] = "Invalid";                // Policies.
inline constexpr char kReasonTargetNotFound[] = "TargetNotFound";  // Policies.
// A GRPCRoute in another namespace than its parent Service (a GAMMA
// consumer route), which Facet does not serve (yet).
inline constexpr char kReasonConsumerRoutesDisabled[] = "ConsumerRoutesDisabled";

// One cause behind a condition, where it was written.
struct ConditionCause {
  std::string field;  // "spec.rules[1].backendRefs[0]"; empty for the whole object.
  std::string message;

  friend bool operator==(const ConditionCause&, const ConditionCause&) = default;
};

// A metav1.Condition, without lastTransitionTime (the status writer keeps
// that).
struct Condition {
  std::string type;
  std::string status;  // kStatusTrue or kStatusFalse.
  std::string reason;
  std::string message;  // Every cause as "field: message", joined by "; ".
  int64_t observed_generation = 0;
  // What `message` is made of, for output one line per cause (facet
  // validate). On a True condition: notes worth a warning (a field ignored).
  std::vector<ConditionCause> causes;

  friend bool operator==(const Condition&, const Condition&) = default;
};

// One entry of GRPCRoute status.parents[] (controllerName kControllerName).
struct ParentStatus {
  ObjectReference parent_ref;  // As written, after defaulting (field says where).
  std::vector<Condition> conditions;

  friend bool operator==(const ParentStatus&, const ParentStatus&) = default;
};

// One entry of XdsVariantPolicy status.ancestors[] (PolicyAncestorStatus).
struct AncestorStatus {
  ObjectReference ancestor_ref;
  std::vector<Condition> conditions;

  friend bool operator==(const AncestorStatus&, const AncestorStatus&) = default;
};

// Facet's status of one GRPCRoute (parents) or XdsVariantPolicy
// (ancestors), for its `generation`.
struct GatewayStatus {
  xds::ObjectRef object;  // kind GRPCRoute or XdsVariantPolicy.
  int64_t generation = 0;
  std::vector<ParentStatus> parents;
  std::vector<AncestorStatus> ancestors;

  friend bool operator==(const GatewayStatus&, const GatewayStatus&) = default;
};

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_STATUS_H_
