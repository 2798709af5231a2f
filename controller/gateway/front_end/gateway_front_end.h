// The Gateway API front end: holds the GRPCRoutes, Services,
// EndpointSlices, ReferenceGrants and XdsVariantPolicies a source reads,
// turns them into generated xds::ResourceObjects for the snapshot builder
// (re-translating only what a change reaches, through reverse indexes), and
// keeps each GRPCRoute's and XdsVariantPolicy's status.
#ifndef FACET_CONTROLLER_GATEWAY_FRONT_END_GATEWAY_FRONT_END_H_
#define FACET_CONTROLLER_GATEWAY_FRONT_END_GATEWAY_FRONT_END_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "controller/gateway/front_end/reverse_index.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/model/gateway_status.h"
#include "controller/gateway/translate/policies.h"
#include "controller/gateway/translate/references.h"
#include "controller/gateway/translate/service_port.h"
#include "xds_server/snapshot/incremental_builder.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller::gateway {

// What one Flush() did.
struct FlushStats {
  int64_t routes = 0;         // GRPCRoutes resolved again (generation served, parents, status).
  int64_t service_ports = 0;  // Service ports translated (Listener, Cluster, assignment).
  int64_t endpoints = 0;      // Assignments translated alone (slice changes).
  int64_t parents = 0;        // RouteConfigurations translated.
  int64_t policy_routes = 0;  // GRPCRoutes whose policies were resolved again.
  // The generated objects handed to the builder, in that order.
  std::vector<xds::ObjectRef> upserted;
  std::vector<xds::ObjectRef> removed;
};

// Sources report each Gateway API object they add, change or delete;
// Flush() then translates just the units those changes reach — a Service
// port's Listener, Cluster and assignment; a port's RouteConfiguration
// (every GRPCRoute attached to it); an assignment alone for a slice — and
// upserts or removes the generated objects in the builder (one equal to
// the last costs the builder a digest compare). After the builder's
// Build(), Reconcile() says which GRPCRoute and XdsVariantPolicy statuses
// changed.
//
//   change            reaches (by index, never by a scan)
//   GRPCRoute R       the RouteConfigurations of the ports R is (or was) attached to; R's status
//   Service S         S's ports; the GRPCRoutes naming S as a parent or a backend
//   EndpointSlice     the assignments of its Service's ports
//   ReferenceGrant    the GRPCRoutes with a backendRef into its namespace from a namespace it names
//   XdsVariantPolicy  the policies of its old and new target routes (conflicts), those routes'
//                     parents, the statuses of every policy on them
//
// Policies: per target (a rule by sectionName, or the whole route) the
// oldest applicable policy wins (GEP-713; ResolveRoutePolicies) and makes
// its target's xDS routes conditional ("@whenConstraints"), the parent's
// RouteConfiguration compiled into variants; on each parent the newest
// policies past the compiler's 16 distinct conditions are left out
// (Invalid there). A policy whose `when` does not compile, or with more
// than 16 ancestors, applies nowhere (Invalid), unless Fall Back is on and
// an accepted generation of it was seen (or the lookup has one): that one
// keeps applying.
//
// A GRPCRoute generation that is not accepted (design §2.5) serves nothing
// and is Accepted=False, unless SetLastGoodLookup() was called: then the
// last accepted generation keeps serving (the last one seen here, else the
// lookup's) and the status says so (PartiallyInvalid or Accepted=False).
//
// Thread-compatible: the source's worker owns it, with the builder.
class GatewayFrontEnd {
 public:
  explicit GatewayFrontEnd(TranslateOptions options = {});
  ~GatewayFrontEnd();
  GatewayFrontEnd(const GatewayFrontEnd&) = delete;
  GatewayFrontEnd& operator=(const GatewayFrontEnd&) = delete;

  // Records a new or changed object (any kind of GatewayObject), to take
  // effect at the next Flush(). Every call counts as a change.
  void Upsert(GatewayObject object);
  // Records the deletion of the object `ref` names (its kind included); a
  // no-op for an unknown one.
  void Remove(const xds::ObjectRef& ref);

  // Returns the last accepted generation of a GRPCRoute or XdsVariantPolicy
  // (by the ref's kind) kept elsewhere (the controller's
  // ControllerRevisions), or nullopt.
  using LastGoodLookup = std::function<std::optional<GatewayObject>(const xds::ObjectRef&)>;
  // Turns on Fall Back: a GRPCRoute or XdsVariantPolicy generation that is
  // not accepted leaves the last accepted one serving — the last seen by
  // this front end, else what `lookup` returns (asked from Flush(), for a
  // route or policy seen invalid first; an answer that is not accepted
  // itself is ignored). `facet validate` never calls it: there an invalid
  // route serves nothing and an invalid policy applies nowhere.
  void SetLastGoodLookup(LastGoodLookup lookup);

  // Whether changes wait for Flush().
  bool has_pending() const;

  // Translates what the recorded changes reach and upserts or removes the
  // generated objects in `builder` (Build() is the caller's).
  FlushStats Flush(xds::IncrementalBuilder& builder);

  // Returns the GRPCRoute and XdsVariantPolicy statuses (GatewayStatus::
  // object.kind tells them apart) that are new or changed since the last
  // call: those the flushed changes reached, and those whose generated
  // objects changed status in `result` (the builder's last Build()): a
  // Listener or RouteConfiguration of a parent whose name an XdsResource
  // declares makes Accepted=False Conflicted, a backend's Cluster or
  // assignment ResolvedRefs=False Conflicted; a policy's ancestor whose
  // RouteConfiguration the builder rejects is Invalid. Call it after every
  // Build().
  std::vector<std::shared_ptr<const GatewayStatus>> Reconcile(
      const xds::IncrementalBuilder& builder, const xds::IncrementalBuilder::Result& result);

  // Returns the status of every GRPCRoute and XdsVariantPolicy reconciled
  // (routes first), by reference.
  std::vector<std::shared_ptr<const GatewayStatus>> Statuses() const;
  // Returns the status of one GRPCRoute or XdsVariantPolicy, or null.
  std::shared_ptr<const GatewayStatus> StatusOf(const xds::ObjectRef& ref) const;

  // Returns the GRPCRoutes and XdsVariantPolicies whose generation was found
  // accepted since the last call (to record as their last good revision),
  // and forgets them. A policy's generation is accepted when its spec is
  // valid, conflicts or missing targets notwithstanding.
  std::set<xds::ObjectRef> TakeAccepted();

 private:
  // A Service (kind Service) and one of its port numbers.
  using PortKey = std::pair<xds::ObjectRef, int>;

  struct RouteEntry {
    GatewayObject current;
    // The generation serving while `current` is not accepted (with Fall
    // Back on).
    std::optional<GatewayObject> fallback;
    // Whether `current` was accepted, once resolved.
    std::optional<bool> accepted;
    bool upserted = true;  // Not resolved since its last Upsert().
    // Where the served generation is attached: the indices of its
    // parentRefs that resolve to each Service port.
    std::map<PortKey, std::vector<size_t>> attached;
    // The status before the builder's word, and what Reconcile() checks in
    // the builder: per entry of base.parents the generated Listener and
    // RouteConfiguration of its ports; per valid backendRef (its field) the
    // generated Cluster and assignment.
    GatewayStatus base;
    std::vector<std::vector<xds::ObjectRef>> parent_objects;
    std::vector<std::pair<std::string, std::vector<xds::ObjectRef>>> backend_objects;
    std::shared_ptr<const GatewayStatus> status;  // As last reconciled.

    const GatewayObject* served() const;
  };

  struct PolicyEntry {
    GatewayObject current;
    // The generation applying while `current` is not valid (with Fall Back
    // on); looked up once.
    std::optional<GatewayObject> fallback;
    bool looked_up = false;
    bool upserted = true;  // Not checked since its last Upsert().
    std::shared_ptr<const GatewayStatus> status;  // As last reconciled.

    // The generation that applies, or null.
    const GatewayObject* effective() const;
  };

  // What the policies on one parent came to at its last translation.
  struct ParentPolicies {
    std::set<xds::ObjectRef> applied;   // Policies applied to its routes (left out too).
    std::set<xds::ObjectRef> left_out;  // Past the bound of distinct conditions.
    size_t variants = 1;                // Of its RouteConfiguration.
  };

  // An ancestor of a policy (PolicyAncestorStatus): a Facet parentRef of a
  // target route, or the target route itself when it is missing or has
  // none; with the Service ports the parentRef resolves to.
  struct PolicyAncestor {
    size_t target = 0;  // Index into spec.targetRefs.
    ObjectReference ref;
    std::vector<PortKey> ports;
  };

  // What a generated object of a Service port is there for.
  struct GeneratedOwner {
    xds::ObjectRef service;
    bool backend = false;  // Cluster or assignment (else Listener or RouteConfiguration).
  };

  GatewayLookup Lookup() const;
  const GatewayObject* ServiceOf(const xds::ObjectRef& service) const;
  std::vector<YAML::Node> SlicesOf(const xds::ObjectRef& service) const;
  void MarkGrantedRoutes(const GatewayObject& grant);
  void Reindex(const xds::ObjectRef& ref, const RouteEntry& entry);

  void FlushService(const xds::ObjectRef& service, xds::IncrementalBuilder& builder,
                    FlushStats* stats);
  void ResolveRoute(const xds::ObjectRef& ref, RouteEntry& entry, FlushStats* stats);
  void FlushEndpoints(const xds::ObjectRef& service, xds::IncrementalBuilder& builder,
                      FlushStats* stats);
  void FlushParent(const PortKey& parent, xds::IncrementalBuilder& builder, FlushStats* stats);
  void MarkPolicyTargets(const xds::ObjectRef& route);
  const GatewayObject* ApplicablePolicy(const PolicyEntry& entry) const;
  std::vector<PolicyAncestor> Ancestors(const GatewayObject& policy) const;
  void ResolvePolicies(const xds::ObjectRef& route, FlushStats* stats);
  GatewayStatus PolicyStatus(const xds::ObjectRef& ref, const PolicyEntry& entry,
                             const xds::IncrementalBuilder& builder) const;
  void Put(xds::ResourceObject object, xds::IncrementalBuilder& builder, FlushStats* stats);
  void Drop(const xds::ObjectRef& ref, xds::IncrementalBuilder& builder, FlushStats* stats);

  const TranslateOptions options_;
  LastGoodLookup last_good_lookup_;

  std::map<xds::ObjectRef, GatewayObject> services_;
  std::map<xds::ObjectRef, GatewayObject> slices_;
  std::map<xds::ObjectRef, GatewayObject> grants_;  // Ordered by namespace (one kind).
  std::map<xds::ObjectRef, PolicyEntry> policies_;
  // The policies of each GRPCRoute some policy targets, resolved.
  std::map<xds::ObjectRef, RoutePolicies> route_policies_;
  std::map<PortKey, ParentPolicies> parent_policies_;
  std::map<xds::ObjectRef, RouteEntry> routes_;

  // Reverse indexes: key ← referring objects.
  ReverseIndex<xds::ObjectRef, xds::ObjectRef> slices_by_service_;
  ReverseIndex<xds::ObjectRef, xds::ObjectRef> routes_by_parent_service_;
  ReverseIndex<xds::ObjectRef, xds::ObjectRef> routes_by_backend_service_;
  ReverseIndex<std::string, xds::ObjectRef> cross_namespace_routes_;  // By backend namespace.
  ReverseIndex<xds::ObjectRef, xds::ObjectRef> policies_by_route_;

  // The served ports of each Service with generated objects, and what each
  // of those objects is for.
  std::map<xds::ObjectRef, std::set<int>> generated_ports_;
  std::map<xds::ObjectRef, GeneratedOwner> owners_;
  bool unroutable_ = false;  // The unroutable pair is in the builder.

  // Pending work.
  std::set<xds::ObjectRef> dirty_services_;
  std::set<xds::ObjectRef> dirty_endpoints_;  // By Service.
  std::set<xds::ObjectRef> dirty_routes_;
  std::set<PortKey> dirty_parents_;
  std::set<xds::ObjectRef> dirty_statuses_;  // For Reconcile().
  std::set<xds::ObjectRef> dirty_policies_;         // Fall Back to look up.
  std::set<xds::ObjectRef> dirty_policy_routes_;    // Routes whose policies to resolve.
  std::set<xds::ObjectRef> dirty_policy_statuses_;  // For Reconcile().
  std::set<xds::ObjectRef> accepted_;
};

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_FRONT_END_GATEWAY_FRONT_END_H_
