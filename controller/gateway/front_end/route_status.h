// How a GRPCRoute's status is put together from its translation, the
// generation that serves in its place when the current one is not accepted
// (the spec's "Fall Back"), and what the snapshot builder said about the
// generated objects the route is served through.
#ifndef FACET_CONTROLLER_GATEWAY_FRONT_END_ROUTE_STATUS_H_
#define FACET_CONTROLLER_GATEWAY_FRONT_END_ROUTE_STATUS_H_

#include <vector>

#include "absl/types/span.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/gateway/translate/grpc_route.h"
#include "controller/gateway/translate/references.h"

namespace facet::controller::gateway {

// Returns whether some rule of `route` is free of the problems that keep
// `translated` (TranslateRoute of `route`) from being accepted: then the
// generation is partially invalid rather than invalid as a whole.
bool HasValidRule(const GatewayObject& route, const TranslatedRoute& translated);

// Returns the status of `route` (a GRPCRoute, its current generation) for
// its parentRefs resolved to `resolutions` (one per spec.parentRefs entry;
// kNotFacets ones get no entry). `translated` is TranslateRoute of `route`;
// `fallback`, when not null, the translation of the generation that serves
// because `route` is not accepted (design: the last accepted one):
// - partially invalid (HasValidRule): Accepted and ResolvedRefs are the
//   served generation's (observedGeneration that generation), plus
//   PartiallyInvalid=True UnsupportedValue "Fall Back: <field>: <why>" at
//   the current generation;
// - invalid as a whole: Accepted=False with the current generation's reason
//   and causes, and a cause saying which generation keeps serving;
//   ResolvedRefs the served generation's.
// Without a fallback, the current generation's conditions as they are. Pure.
GatewayStatus RouteStatus(const GatewayObject& route, const TranslatedRoute& translated,
                          const TranslatedRoute* fallback,
                          absl::Span<const ParentResolution> resolutions);

// What the snapshot builder said about the generated objects a GRPCRoute is
// served through: an XdsResource declares the name of one (DuplicateName),
// and serves in its place.
struct BuilderConflicts {
  // Per entry of GatewayStatus::parents (may be shorter): the conflicts of
  // the parent's Listener and RouteConfiguration.
  std::vector<std::vector<ConditionCause>> parents;
  // The conflicts of the backends' Clusters and assignments.
  std::vector<ConditionCause> backends;

  bool empty() const;
};

// Adds `conflicts` to `status`: an entry whose parent conflicts gets
// Accepted=False Conflicted, and every entry ResolvedRefs=False Conflicted
// when a backend conflicts; a condition False already keeps its reason and
// gains the causes. Pure.
void AddConflicts(const BuilderConflicts& conflicts, GatewayStatus* status);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_FRONT_END_ROUTE_STATUS_H_
