// Step three of the Gateway API translation: XdsVariantPolicies on a
// GRPCRoute become the conditions of its rules (RouteConditions). Per target
// the oldest policy wins (GEP-713, merge strategy None); the others are
// Conflicted, and a target that does not exist is TargetNotFound. On one
// parent, the conditions are bounded as the conditional compiler bounds
// them (16 distinct per RouteConfiguration): the newest policies past the
// bound are left out there.
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_POLICIES_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_POLICIES_H_

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/translate/grpc_route.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// The compiler's bound on distinct conditions in one resource
// (xds::ConditionalLimits::max_conditions).
inline constexpr size_t kMaxConditionsPerRouteConfiguration = 16;
// PolicyAncestorStatus entries per policy; a policy with more ancestors is
// not applied (GEP-713: "MUST consider the policy unimplementable").
inline constexpr size_t kMaxPolicyAncestors = 16;

// A policy applied to a route or one of its rules: the winner of its target.
struct AppliedPolicy {
  xds::ObjectRef policy;
  // The policy's creation time (unset: newer than any set one).
  std::optional<absl::Time> created;
  std::optional<size_t> rule;  // Index of the targeted rule; unset: the whole route.
  YAML::Node condition;        // The policy's `when` as DynamicParameterConstraints (proto3 JSON).
};

// What one of a policy's targetRefs came to on its route.
struct TargetOutcome {
  xds::ObjectRef policy;
  size_t target = 0;   // Index into the policy's spec.targetRefs.
  std::string reason;  // kReasonAccepted, kReasonConflicted or kReasonTargetNotFound.
  std::string message;
};

// The policies of one GRPCRoute, resolved.
struct RoutePolicies {
  std::vector<AppliedPolicy> applied;   // The winners, one per target at most.
  std::vector<TargetOutcome> outcomes;  // One per targetRef naming the route, by policy.
};

// Returns whether `a` and `b` apply the same policies with the same
// conditions to the same targets (what the translation reads of them).
bool SameApplied(absl::Span<const AppliedPolicy> a, absl::Span<const AppliedPolicy> b);

// Returns the condition of `policy` (an XdsVariantPolicy whose `when`
// compiled) as DynamicParameterConstraints in proto3 JSON (as YAML).
YAML::Node PolicyCondition(const GatewayObject& policy);

// Resolves the targetRefs naming the GRPCRoute `route_ref` of `policies`
// (XdsVariantPolicies, each applicable: its `when` compiled). `route` is the
// route's generation whose rules the targets name, null when no such route
// is held (every target TargetNotFound). Targets overlap when they name the
// same rule, or one of them the whole route; of overlapping targets the
// policy created first wins, then the first by "namespace/name" (GEP-713),
// and the others are Conflicted naming the winner and why. A sectionName no
// rule has is TargetNotFound. Pure; thread-safe.
RoutePolicies ResolveRoutePolicies(const xds::ObjectRef& route_ref, const GatewayObject* route,
                                   absl::Span<const GatewayObject* const> policies);

// Returns the RouteConditions of `applied`, leaving out the policies in
// `left_out`.
RouteConditions ConditionsOf(absl::Span<const AppliedPolicy> applied,
                             const std::set<xds::ObjectRef>& left_out = {});

// The policies applied to one GRPCRoute attached to a parent.
struct ParentRoutePolicies {
  const GatewayObject* route = nullptr;  // The served generation (its rules).
  const std::vector<AppliedPolicy>* applied = nullptr;
};

// The parent a bound is checked for: its Service's namespace and the
// client parameter of consumer routes (TranslateOptions).
struct ParentScope {
  std::string service_namespace;
  std::string client_namespace_param;
};

// Returns the distinct conditions the parent's RouteConfiguration carries
// with `routes` (TranslateParent's routes, scoped to their clients by
// ScopeToClients, the default's complement included), leaving out the
// policies in `left_out`.
size_t CountConditions(absl::Span<const ParentRoutePolicies> routes, const ParentScope& parent,
                       const std::set<xds::ObjectRef>& left_out = {});

// Returns the policies to leave out on one parent so that its
// RouteConfiguration has at most `max` distinct conditions: the newest
// first (latest creation time, then last by "namespace/name"). The client
// scopes of consumer routes are never left out: when they alone pass the
// bound, every policy is left out and the compiler finds the
// RouteConfiguration TooComplex. Pure.
std::set<xds::ObjectRef> PoliciesPastBound(absl::Span<const ParentRoutePolicies> routes,
                                           const ParentScope& parent,
                                           size_t max = kMaxConditionsPerRouteConfiguration);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_POLICIES_H_
