#include "controller/gateway/front_end/gateway_front_end.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "controller/gateway/front_end/route_status.h"
#include "controller/gateway/translate/grpc_route.h"

namespace facet::controller::gateway {
namespace {

// The builder's reason for a name two objects declare.
constexpr char kDuplicateName[] = "DuplicateName";

xds::ObjectRef ServiceKey(absl::string_view ns, absl::string_view name) {
  return {kServiceKind, std::string(ns), std::string(name)};
}

// The namespace a reference written in an object of namespace `ns` names.
const std::string& NamespaceOf(const ObjectReference& ref, const std::string& ns) {
  return ref.namespace_.empty() ? ns : ref.namespace_;
}

const ServicePort* PortOf(const GatewayObject& service, int number) {
  for (const ServicePort& port : std::get<ServiceInfo>(service.spec).ports) {
    if (port.port == number) return &port;
  }
  return nullptr;
}

// The builder's DuplicateName errors of `ref`: an object that is not
// generated holds its name.
void AddDuplicates(const xds::IncrementalBuilder& builder, const xds::ObjectRef& ref,
                   const std::string& field, std::vector<ConditionCause>* causes) {
  const std::shared_ptr<const xds::ObjectStatus> status = builder.StatusOf(ref);
  if (status == nullptr) return;
  for (const xds::Finding& finding : status->findings) {
    if (finding.severity == xds::Severity::kError && finding.reason == kDuplicateName) {
      causes->push_back({field, finding.message});
    }
  }
}

// Whether `policy` (an XdsVariantPolicy) can apply: its spec is valid.
bool ValidPolicy(const GatewayObject& policy) {
  return !policy.has_errors() && std::get<VariantPolicy>(policy.spec).constraints.has_value();
}

// The GRPCRoutes `policy` targets.
std::set<xds::ObjectRef> TargetsOf(const GatewayObject& policy) {
  std::set<xds::ObjectRef> targets;
  for (const ObjectReference& target : std::get<VariantPolicy>(policy.spec).target_refs) {
    targets.insert({kGrpcRouteKind, NamespaceOf(target, policy.ref.namespace_), target.name});
  }
  return targets;
}

}  // namespace

GatewayFrontEnd::GatewayFrontEnd(TranslateOptions options) : options_(std::move(options)) {}

GatewayFrontEnd::~GatewayFrontEnd() = default;

const GatewayObject* GatewayFrontEnd::RouteEntry::served() const {
  if (accepted.value_or(false)) return &current;
  return fallback.has_value() ? &*fallback : nullptr;
}

const GatewayObject* GatewayFrontEnd::PolicyEntry::effective() const {
  if (ValidPolicy(current)) return &current;
  return fallback.has_value() ? &*fallback : nullptr;
}

void GatewayFrontEnd::Upsert(GatewayObject object) {
  const xds::ObjectRef ref = object.ref;
  if (ref.kind == kServiceKind) {
    services_[ref] = std::move(object);
    dirty_services_.insert(ref);
  } else if (ref.kind == kEndpointSliceKind) {
    for (const xds::ObjectRef& service : slices_by_service_.KeysOf(ref)) {
      dirty_endpoints_.insert(service);
    }
    const std::string& service = std::get<SliceRef>(object.spec).service;
    if (service.empty() || object.has_errors()) {
      slices_by_service_.Erase(ref);
    } else {
      const xds::ObjectRef key = ServiceKey(ref.namespace_, service);
      slices_by_service_.Set(ref, {key});
      dirty_endpoints_.insert(key);
    }
    slices_[ref] = std::move(object);
  } else if (ref.kind == kReferenceGrantKind) {
    if (auto it = grants_.find(ref); it != grants_.end()) MarkGrantedRoutes(it->second);
    MarkGrantedRoutes(object);
    grants_[ref] = std::move(object);
  } else if (ref.kind == kGrpcRouteKind) {
    RouteEntry& entry = routes_[ref];
    if (last_good_lookup_ && entry.accepted.value_or(false)) {
      entry.fallback = std::move(entry.current);  // The last accepted, until this one is.
    }
    entry.current = std::move(object);
    entry.accepted.reset();
    entry.upserted = true;
    dirty_routes_.insert(ref);
  } else if (ref.kind == kXdsVariantPolicyKind) {
    PolicyEntry& entry = policies_[ref];
    const bool held = entry.current.ref.kind == kXdsVariantPolicyKind;
    if (last_good_lookup_ && held && ValidPolicy(entry.current)) {
      entry.fallback = std::move(entry.current);  // The last accepted, until this one is.
    }
    entry.current = std::move(object);
    if (ValidPolicy(entry.current)) entry.fallback.reset();
    entry.upserted = true;
    entry.looked_up = false;
    // The old and new targets resolve their policies again.
    for (const xds::ObjectRef& route : policies_by_route_.KeysOf(ref)) {
      dirty_policy_routes_.insert(route);
    }
    std::set<xds::ObjectRef> targets = TargetsOf(entry.current);
    if (entry.fallback.has_value()) {
      for (const xds::ObjectRef& route : TargetsOf(*entry.fallback)) targets.insert(route);
    }
    dirty_policy_routes_.insert(targets.begin(), targets.end());
    policies_by_route_.Set(ref, std::move(targets));
    dirty_policies_.insert(ref);
    dirty_policy_statuses_.insert(ref);
  }
}

void GatewayFrontEnd::Remove(const xds::ObjectRef& ref) {
  if (ref.kind == kServiceKind) {
    if (services_.erase(ref) > 0) dirty_services_.insert(ref);
  } else if (ref.kind == kEndpointSliceKind) {
    for (const xds::ObjectRef& service : slices_by_service_.KeysOf(ref)) {
      dirty_endpoints_.insert(service);
    }
    slices_by_service_.Erase(ref);
    slices_.erase(ref);
  } else if (ref.kind == kReferenceGrantKind) {
    if (auto it = grants_.find(ref); it != grants_.end()) {
      MarkGrantedRoutes(it->second);
      grants_.erase(it);
    }
  } else if (ref.kind == kGrpcRouteKind) {
    auto it = routes_.find(ref);
    if (it == routes_.end()) return;
    MarkPolicyTargets(ref);
    for (const auto& [parent, indices] : it->second.attached) dirty_parents_.insert(parent);
    routes_by_parent_service_.Erase(ref);
    routes_by_backend_service_.Erase(ref);
    cross_namespace_routes_.Erase(ref);
    routes_.erase(it);
    dirty_routes_.erase(ref);
    dirty_statuses_.erase(ref);
    accepted_.erase(ref);
  } else if (ref.kind == kXdsVariantPolicyKind) {
    if (policies_.erase(ref) == 0) return;
    for (const xds::ObjectRef& route : policies_by_route_.KeysOf(ref)) {
      dirty_policy_routes_.insert(route);
    }
    policies_by_route_.Erase(ref);
    dirty_policies_.erase(ref);
    dirty_policy_statuses_.erase(ref);
    accepted_.erase(ref);
  }
}

void GatewayFrontEnd::SetLastGoodLookup(LastGoodLookup lookup) {
  last_good_lookup_ = std::move(lookup);
}

bool GatewayFrontEnd::has_pending() const {
  return !dirty_services_.empty() || !dirty_endpoints_.empty() || !dirty_routes_.empty() ||
         !dirty_parents_.empty() || !dirty_policies_.empty() || !dirty_policy_routes_.empty() ||
         unroutable_ == routes_.empty();
}

void GatewayFrontEnd::MarkGrantedRoutes(const GatewayObject& grant) {
  std::set<absl::string_view> from;
  for (const ReferenceGrant::From& entry : std::get<ReferenceGrant>(grant.spec).from) {
    from.insert(entry.namespace_);
  }
  for (const xds::ObjectRef& route : cross_namespace_routes_.ValuesOf(grant.ref.namespace_)) {
    if (from.count(route.namespace_) > 0) dirty_routes_.insert(route);
  }
}

const GatewayObject* GatewayFrontEnd::ServiceOf(const xds::ObjectRef& service) const {
  auto it = services_.find(service);
  return it == services_.end() || it->second.has_errors() ? nullptr : &it->second;
}

GatewayLookup GatewayFrontEnd::Lookup() const {
  GatewayLookup lookup;
  lookup.service = [this](absl::string_view ns, absl::string_view name) {
    return ServiceOf(ServiceKey(ns, name));
  };
  lookup.grants = [this](absl::string_view ns) {
    std::vector<const ReferenceGrant*> out;
    for (auto it = grants_.lower_bound({kReferenceGrantKind, std::string(ns), ""});
         it != grants_.end() && it->first.namespace_ == ns; ++it) {
      if (!it->second.has_errors()) out.push_back(&std::get<ReferenceGrant>(it->second.spec));
    }
    return out;
  };
  return lookup;
}

std::vector<YAML::Node> GatewayFrontEnd::SlicesOf(const xds::ObjectRef& service) const {
  std::vector<YAML::Node> out;
  for (const xds::ObjectRef& slice : slices_by_service_.ValuesOf(service)) {
    out.push_back(std::get<SliceRef>(slices_.at(slice).spec).slice);
  }
  return out;
}

void GatewayFrontEnd::Reindex(const xds::ObjectRef& ref, const RouteEntry& entry) {
  std::set<xds::ObjectRef> parents;
  std::set<xds::ObjectRef> backends;
  std::set<std::string> namespaces;
  // The current generation's references decide its status; the served
  // one's what is served.
  for (const GatewayObject* route : {&entry.current, entry.served()}) {
    if (route == nullptr) continue;
    const GrpcRoute& spec = std::get<GrpcRoute>(route->spec);
    for (const ObjectReference& parent : spec.parent_refs) {
      if (parent.kind == kServiceKind) {
        parents.insert(ServiceKey(NamespaceOf(parent, ref.namespace_), parent.name));
      }
    }
    for (const RouteRule& rule : spec.rules) {
      for (const BackendRef& backend : rule.backend_refs) {
        const std::string& ns = NamespaceOf(backend.ref, ref.namespace_);
        backends.insert(ServiceKey(ns, backend.ref.name));
        if (ns != ref.namespace_) namespaces.insert(ns);
      }
    }
  }
  routes_by_parent_service_.Set(ref, std::move(parents));
  routes_by_backend_service_.Set(ref, std::move(backends));
  cross_namespace_routes_.Set(ref, std::move(namespaces));
}

void GatewayFrontEnd::Put(xds::ResourceObject object, xds::IncrementalBuilder& builder,
                          FlushStats* stats) {
  stats->upserted.push_back(object.ref);
  builder.Upsert(std::move(object));
}

void GatewayFrontEnd::Drop(const xds::ObjectRef& ref, xds::IncrementalBuilder& builder,
                           FlushStats* stats) {
  stats->removed.push_back(ref);
  builder.Remove(ref);
}

void GatewayFrontEnd::FlushService(const xds::ObjectRef& key, xds::IncrementalBuilder& builder,
                                   FlushStats* stats) {
  // Parents and backends resolve anew.
  for (const xds::ObjectRef& route : routes_by_parent_service_.ValuesOf(key)) {
    dirty_routes_.insert(route);
  }
  for (const xds::ObjectRef& route : routes_by_backend_service_.ValuesOf(key)) {
    dirty_routes_.insert(route);
  }
  const GatewayObject* service = ServiceOf(key);
  std::set<int> ports;
  if (service != nullptr) {
    const ServiceInfo& info = std::get<ServiceInfo>(service->spec);
    for (const ServicePort& port : info.ports) {
      if (IsServedPort(info, port)) ports.insert(port.port);
    }
  }
  std::set<int>& generated = generated_ports_[key];
  for (int port : generated) {
    if (ports.count(port) > 0) continue;
    const std::string name = ServicePortName(key, port, options_.cluster_domain);
    for (const char* alias : {"listener", "route", "cluster", "endpoint"}) {
      const xds::ObjectRef ref = GeneratedRef(key.namespace_, alias, name);
      owners_.erase(ref);
      Drop(ref, builder, stats);
    }
  }
  const std::vector<YAML::Node> slices = ports.empty() ? std::vector<YAML::Node>() : SlicesOf(key);
  for (int number : ports) {
    const ServicePort& port = *PortOf(*service, number);
    ServicePortObjects objects = TranslateServicePort(*service, port, slices, options_);
    ++stats->service_ports;
    owners_[objects.listener.ref] = {key, /*backend=*/false};
    owners_[objects.route_configuration.ref] = {key, /*backend=*/false};
    owners_[objects.cluster.ref] = {key, /*backend=*/true};
    owners_[objects.endpoints.ref] = {key, /*backend=*/true};
    Put(std::move(objects.listener), builder, stats);
    Put(std::move(objects.cluster), builder, stats);
    Put(std::move(objects.endpoints), builder, stats);
    // The RouteConfiguration has the routes attached to the port.
    dirty_parents_.insert({key, number});
  }
  if (ports.empty()) {
    generated_ports_.erase(key);
  } else {
    generated = std::move(ports);
  }
}

void GatewayFrontEnd::ResolveRoute(const xds::ObjectRef& ref, RouteEntry& entry,
                                   FlushStats* stats) {
  ++stats->routes;
  const GatewayLookup lookup = Lookup();
  const TranslatedRoute translated = TranslateRoute(entry.current, nullptr, lookup, options_);
  const bool accepted = translated.accepted.status == kStatusTrue;
  if (accepted) {
    entry.fallback.reset();
    if (entry.upserted) accepted_.insert(ref);
  } else if (last_good_lookup_ && !entry.fallback.has_value()) {
    // Seen invalid first (a restart): the last accepted one recorded
    // elsewhere, if it is accepted here too.
    std::optional<GatewayObject> last_good = last_good_lookup_(ref);
    if (last_good.has_value() && last_good->ref == ref &&
        std::holds_alternative<GrpcRoute>(last_good->spec) &&
        TranslateRoute(*last_good, nullptr, lookup, options_).accepted.status == kStatusTrue) {
      entry.fallback = std::move(last_good);
    }
  }
  entry.accepted = accepted;
  entry.upserted = false;
  const GatewayObject* served = entry.served();
  std::optional<TranslatedRoute> fallback;
  if (!accepted && served != nullptr) {
    fallback = TranslateRoute(*served, nullptr, lookup, options_);
  }

  // Where the served generation is attached: the old and new places get
  // their RouteConfigurations again.
  std::map<PortKey, std::vector<size_t>> attached;
  if (served != nullptr) {
    const std::vector<ObjectReference>& parents = std::get<GrpcRoute>(served->spec).parent_refs;
    for (size_t i = 0; i < parents.size(); ++i) {
      const ParentResolution resolution =
          ResolveParentRef(ref.namespace_, parents[i], lookup, options_);
      if (resolution.outcome != ParentResolution::Outcome::kAttached) continue;
      for (int port : resolution.ports) attached[{resolution.service, port}].push_back(i);
    }
  }
  for (const auto& [parent, indices] : entry.attached) dirty_parents_.insert(parent);
  for (const auto& [parent, indices] : attached) dirty_parents_.insert(parent);
  entry.attached = std::move(attached);

  // The status, for the current generation's parentRefs.
  std::vector<ParentResolution> resolutions;
  entry.parent_objects.clear();
  for (const ObjectReference& parent : std::get<GrpcRoute>(entry.current.spec).parent_refs) {
    const ParentResolution& resolution =
        resolutions.emplace_back(ResolveParentRef(ref.namespace_, parent, lookup, options_));
    if (resolution.outcome == ParentResolution::Outcome::kNotFacets) continue;
    std::vector<xds::ObjectRef>& objects = entry.parent_objects.emplace_back();
    for (int port : resolution.ports) {
      const std::string name = ServicePortName(resolution.service, port, options_.cluster_domain);
      objects.push_back(GeneratedRef(resolution.service.namespace_, "listener", name));
      objects.push_back(GeneratedRef(resolution.service.namespace_, "route", name));
    }
  }
  entry.base = RouteStatus(entry.current, translated, fallback ? &*fallback : nullptr, resolutions);
  entry.backend_objects.clear();
  if (served != nullptr) {
    for (const RouteRule& rule : std::get<GrpcRoute>(served->spec).rules) {
      for (const BackendRef& backend : rule.backend_refs) {
        const BackendResolution resolution =
            ResolveBackendRef(ref.namespace_, backend.ref, lookup, options_);
        if (resolution.cluster.empty()) continue;
        const std::string& ns = NamespaceOf(backend.ref, ref.namespace_);
        entry.backend_objects.emplace_back(
            backend.ref.field,
            std::vector<xds::ObjectRef>{GeneratedRef(ns, "cluster", resolution.cluster),
                                        GeneratedRef(ns, "endpoint", resolution.cluster)});
      }
    }
  }
  Reindex(ref, entry);
  dirty_statuses_.insert(ref);
  // Its rules and parents: what its policies target and their ancestors.
  MarkPolicyTargets(ref);
}

void GatewayFrontEnd::MarkPolicyTargets(const xds::ObjectRef& route) {
  for (const xds::ObjectRef& policy : policies_by_route_.ValuesOf(route)) {
    for (const xds::ObjectRef& target : policies_by_route_.KeysOf(policy)) {
      dirty_policy_routes_.insert(target);
    }
  }
}

std::vector<GatewayFrontEnd::PolicyAncestor> GatewayFrontEnd::Ancestors(
    const GatewayObject& policy) const {
  std::vector<PolicyAncestor> out;
  const GatewayLookup lookup = Lookup();
  const std::vector<ObjectReference>& targets = std::get<VariantPolicy>(policy.spec).target_refs;
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string& ns = NamespaceOf(targets[i], policy.ref.namespace_);
    const size_t before = out.size();
    auto route = routes_.find({kGrpcRouteKind, ns, targets[i].name});
    if (route != routes_.end()) {
      const GatewayObject& current = route->second.current;
      for (const ObjectReference& parent : std::get<GrpcRoute>(current.spec).parent_refs) {
        const ParentResolution resolution = ResolveParentRef(ns, parent, lookup, options_);
        if (resolution.outcome == ParentResolution::Outcome::kNotFacets) continue;
        PolicyAncestor& ancestor = out.emplace_back();
        ancestor.target = i;
        ancestor.ref = parent;
        if (resolution.outcome != ParentResolution::Outcome::kAttached) continue;
        for (int port : resolution.ports) ancestor.ports.push_back({resolution.service, port});
      }
    }
    if (out.size() == before) {
      // A missing route, or one without a Service parent: the route itself.
      PolicyAncestor& ancestor = out.emplace_back();
      ancestor.target = i;
      ancestor.ref.group = kGatewayGroup;
      ancestor.ref.kind = kGrpcRouteKind;
      ancestor.ref.namespace_ = ns;
      ancestor.ref.name = targets[i].name;
      ancestor.ref.field = targets[i].field;
    }
  }
  return out;
}

const GatewayObject* GatewayFrontEnd::ApplicablePolicy(const PolicyEntry& entry) const {
  const GatewayObject* policy = entry.effective();
  if (policy == nullptr || Ancestors(*policy).size() > kMaxPolicyAncestors) return nullptr;
  return policy;
}

void GatewayFrontEnd::ResolvePolicies(const xds::ObjectRef& route, FlushStats* stats) {
  ++stats->policy_routes;
  const std::set<xds::ObjectRef>& on_route = policies_by_route_.ValuesOf(route);
  std::vector<const GatewayObject*> applicable;
  for (const xds::ObjectRef& policy : on_route) {
    dirty_policy_statuses_.insert(policy);
    if (const GatewayObject* applies = ApplicablePolicy(policies_.at(policy))) {
      applicable.push_back(applies);
    }
  }
  auto entry = routes_.find(route);
  const GatewayObject* rules = nullptr;  // The generation whose rules targets name.
  if (entry != routes_.end()) {
    rules = entry->second.served();
    if (rules == nullptr) rules = &entry->second.current;
  }
  RoutePolicies resolved;
  if (!applicable.empty()) resolved = ResolveRoutePolicies(route, rules, applicable);
  // The parents are translated again when the conditions change.
  auto it = route_policies_.find(route);
  const bool changed =
      it == route_policies_.end()
          ? !resolved.applied.empty()
          : !SameApplied(it->second.applied, resolved.applied);
  if (changed && entry != routes_.end()) {
    for (const auto& [parent, indices] : entry->second.attached) dirty_parents_.insert(parent);
  }
  if (on_route.empty()) {
    route_policies_.erase(route);
  } else {
    route_policies_.insert_or_assign(route, std::move(resolved));
  }
}

void GatewayFrontEnd::FlushEndpoints(const xds::ObjectRef& key, xds::IncrementalBuilder& builder,
                                     FlushStats* stats) {
  auto generated = generated_ports_.find(key);
  const GatewayObject* service = ServiceOf(key);
  if (generated == generated_ports_.end() || service == nullptr) return;
  const std::vector<YAML::Node> slices = SlicesOf(key);
  for (int number : generated->second) {
    ++stats->endpoints;
    Put(PortEndpoints(*service, *PortOf(*service, number), slices, options_), builder, stats);
  }
}

void GatewayFrontEnd::FlushParent(const PortKey& parent, xds::IncrementalBuilder& builder,
                                  FlushStats* stats) {
  const auto& [key, number] = parent;
  auto generated = generated_ports_.find(key);
  ParentPolicies policies;
  auto before = parent_policies_.find(parent);
  if (before != parent_policies_.end()) {
    // Their ancestor here may change.
    dirty_policy_statuses_.insert(before->second.applied.begin(), before->second.applied.end());
  }
  if (generated == generated_ports_.end() || generated->second.count(number) == 0) {
    if (before != parent_policies_.end()) parent_policies_.erase(before);
    return;
  }
  const GatewayObject& service = *ServiceOf(key);
  std::vector<AttachedRoute> routes;
  std::vector<ParentRoutePolicies> route_policies;
  for (const xds::ObjectRef& route : routes_by_parent_service_.ValuesOf(key)) {
    const RouteEntry& entry = routes_.at(route);
    auto it = entry.attached.find(parent);
    if (it == entry.attached.end()) continue;
    AttachedRoute& attached = routes.emplace_back();
    attached.route = entry.served();
    attached.parent_refs = it->second;
    auto resolved = route_policies_.find(route);
    route_policies.push_back(
        {attached.route, resolved == route_policies_.end() || resolved->second.applied.empty()
                             ? nullptr
                             : &resolved->second.applied});
  }
  // The conditions of the policies that win their targets, within the
  // compiler's bound.
  policies.left_out =
      PoliciesPastBound(route_policies, {key.namespace_, options_.client_namespace_param});
  std::vector<RouteConditions> conditions;
  conditions.reserve(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) {
    if (route_policies[i].applied == nullptr) continue;
    for (const AppliedPolicy& applied : *route_policies[i].applied) {
      policies.applied.insert(applied.policy);
    }
    conditions.push_back(ConditionsOf(*route_policies[i].applied, policies.left_out));
    if (conditions.back().route.has_value() || !conditions.back().rules.empty()) {
      routes[i].conditions = &conditions.back();
    }
  }
  ++stats->parents;
  ParentTranslation translation =
      TranslateParent(service, *PortOf(service, number), routes, Lookup(), options_);
  if (translation.route_configuration.spec.has_value()) {
    policies.variants = translation.route_configuration.spec->variants.size();
  }
  dirty_policy_statuses_.insert(policies.applied.begin(), policies.applied.end());
  if (policies.applied.empty()) {
    if (before != parent_policies_.end()) parent_policies_.erase(before);
  } else {
    parent_policies_.insert_or_assign(parent, std::move(policies));
  }
  Put(std::move(translation.route_configuration), builder, stats);
}

FlushStats GatewayFrontEnd::Flush(xds::IncrementalBuilder& builder) {
  FlushStats stats;
  // Services first: they change what routes resolve to.
  for (const xds::ObjectRef& service : dirty_services_) {
    FlushService(service, builder, &stats);
    dirty_endpoints_.erase(service);
  }
  dirty_services_.clear();
  for (const xds::ObjectRef& ref : dirty_routes_) ResolveRoute(ref, routes_.at(ref), &stats);
  dirty_routes_.clear();
  // Policies: the generation that applies, then the targets' conditions.
  for (const xds::ObjectRef& ref : dirty_policies_) {
    PolicyEntry& entry = policies_.at(ref);
    if (ValidPolicy(entry.current)) {
      if (entry.upserted) accepted_.insert(ref);
    } else if (last_good_lookup_ && !entry.fallback.has_value() && !entry.looked_up) {
      // Seen invalid first (a restart): the last accepted one recorded
      // elsewhere, if it is valid here too.
      entry.looked_up = true;
      std::optional<GatewayObject> last_good = last_good_lookup_(ref);
      if (last_good.has_value() && last_good->ref == ref &&
          std::holds_alternative<VariantPolicy>(last_good->spec) && ValidPolicy(*last_good)) {
        std::set<xds::ObjectRef> targets = policies_by_route_.KeysOf(ref);
        for (const xds::ObjectRef& route : TargetsOf(*last_good)) targets.insert(route);
        dirty_policy_routes_.insert(targets.begin(), targets.end());
        policies_by_route_.Set(ref, std::move(targets));
        entry.fallback = std::move(last_good);
      }
    }
    entry.upserted = false;
  }
  dirty_policies_.clear();
  for (const xds::ObjectRef& route : dirty_policy_routes_) ResolvePolicies(route, &stats);
  dirty_policy_routes_.clear();
  for (const xds::ObjectRef& service : dirty_endpoints_) {
    FlushEndpoints(service, builder, &stats);
  }
  dirty_endpoints_.clear();
  for (const PortKey& parent : dirty_parents_) FlushParent(parent, builder, &stats);
  dirty_parents_.clear();
  // The unroutable pair is there while some GRPCRoute may lead to it.
  if (unroutable_ == routes_.empty()) {
    unroutable_ = !routes_.empty();
    for (xds::ResourceObject& object : UnroutableObjects()) {
      if (unroutable_) {
        Put(std::move(object), builder, &stats);
      } else {
        Drop(object.ref, builder, &stats);
      }
    }
  }
  return stats;
}

std::vector<std::shared_ptr<const GatewayStatus>> GatewayFrontEnd::Reconcile(
    const xds::IncrementalBuilder& builder, const xds::IncrementalBuilder::Result& result) {
  std::set<xds::ObjectRef> reached = std::move(dirty_statuses_);
  dirty_statuses_.clear();
  std::set<xds::ObjectRef> policies = std::move(dirty_policy_statuses_);
  dirty_policy_statuses_.clear();
  for (const std::shared_ptr<const xds::ObjectStatus>& status : result.changed_statuses) {
    auto owner = owners_.find(status->ref);
    if (owner == owners_.end()) continue;
    const std::set<xds::ObjectRef>& routes =
        owner->second.backend ? routes_by_backend_service_.ValuesOf(owner->second.service)
                              : routes_by_parent_service_.ValuesOf(owner->second.service);
    reached.insert(routes.begin(), routes.end());
    if (owner->second.backend) continue;
    // The policies on those routes: the builder's word on the
    // RouteConfiguration their conditions are compiled into.
    for (const xds::ObjectRef& route : routes) {
      const std::set<xds::ObjectRef>& on_route = policies_by_route_.ValuesOf(route);
      policies.insert(on_route.begin(), on_route.end());
    }
  }
  std::vector<std::shared_ptr<const GatewayStatus>> out;
  for (const xds::ObjectRef& ref : reached) {
    auto it = routes_.find(ref);
    if (it == routes_.end()) continue;
    RouteEntry& entry = it->second;
    BuilderConflicts conflicts;
    for (size_t i = 0; i < entry.parent_objects.size(); ++i) {
      std::vector<ConditionCause>& causes = conflicts.parents.emplace_back();
      for (const xds::ObjectRef& generated : entry.parent_objects[i]) {
        AddDuplicates(builder, generated, entry.base.parents[i].parent_ref.field, &causes);
      }
    }
    for (const auto& [field, objects] : entry.backend_objects) {
      for (const xds::ObjectRef& generated : objects) {
        AddDuplicates(builder, generated, field, &conflicts.backends);
      }
    }
    GatewayStatus status = entry.base;
    AddConflicts(conflicts, &status);
    if (entry.status != nullptr && *entry.status == status) continue;
    entry.status = std::make_shared<const GatewayStatus>(std::move(status));
    out.push_back(entry.status);
  }
  for (const xds::ObjectRef& ref : policies) {
    auto it = policies_.find(ref);
    if (it == policies_.end()) continue;
    PolicyEntry& entry = it->second;
    GatewayStatus status = PolicyStatus(ref, entry, builder);
    if (entry.status != nullptr && *entry.status == status) continue;
    entry.status = std::make_shared<const GatewayStatus>(std::move(status));
    out.push_back(entry.status);
  }
  return out;
}

GatewayStatus GatewayFrontEnd::PolicyStatus(const xds::ObjectRef& ref, const PolicyEntry& entry,
                                            const xds::IncrementalBuilder& builder) const {
  const GatewayObject& current = entry.current;
  const std::vector<ObjectReference>& targets = std::get<VariantPolicy>(current.spec).target_refs;
  GatewayStatus status;
  status.object = ref;
  status.generation = current.generation;
  const std::vector<PolicyAncestor> ancestors = Ancestors(current);
  // Causes that keep the whole policy from applying.
  std::vector<ConditionCause> invalid;
  if (!ValidPolicy(current)) {
    for (const xds::Finding& finding : current.findings) {
      if (finding.severity == xds::Severity::kError) {
        invalid.push_back({finding.field, finding.message});
      }
    }
    if (entry.fallback.has_value()) {
      invalid.push_back(
          {"", absl::StrCat("its last accepted generation (", entry.fallback->generation,
                            ") keeps applying")});
    }
  } else if (ancestors.size() > kMaxPolicyAncestors) {
    invalid.push_back(
        {"spec.targetRefs",
         absl::StrCat("the targeted GRPCRoutes have ", ancestors.size(),
                      " ancestors (their Service parents) and a policy may have at most ",
                      kMaxPolicyAncestors, ": the policy is not applied")});
  }
  for (const PolicyAncestor& ancestor : ancestors) {
    if (status.ancestors.size() == kMaxPolicyAncestors) break;
    const std::string& field = targets.at(ancestor.target).field;
    AncestorStatus& entry_status = status.ancestors.emplace_back();
    entry_status.ancestor_ref = ancestor.ref;
    Condition accepted;
    accepted.type = kConditionAccepted;
    accepted.observed_generation = current.generation;
    accepted.status = kStatusFalse;
    if (!invalid.empty()) {
      accepted.reason = kReasonInvalid;
      accepted.causes = invalid;
    } else {
      const TargetOutcome* outcome = nullptr;
      const std::string& ns = NamespaceOf(targets[ancestor.target], ref.namespace_);
      auto resolved = route_policies_.find({kGrpcRouteKind, ns, targets[ancestor.target].name});
      if (resolved != route_policies_.end()) {
        for (const TargetOutcome& candidate : resolved->second.outcomes) {
          if (candidate.policy == ref && candidate.target == ancestor.target) outcome = &candidate;
        }
      }
      if (outcome == nullptr) {
        accepted.reason = kReasonTargetNotFound;
        accepted.causes = {{field, "the target is not resolved"}};
      } else if (outcome->reason != kReasonAccepted) {
        accepted.reason = outcome->reason;
        accepted.causes = {{field, outcome->message}};
      } else {
        std::vector<std::string> compiled;
        for (const PortKey& port : ancestor.ports) {
          const std::string name =
              ServicePortName(port.first, port.second, options_.cluster_domain);
          auto parent = parent_policies_.find(port);
          if (parent == parent_policies_.end()) continue;
          if (parent->second.left_out.count(ref) > 0) {
            accepted.causes.push_back(
                {field, absl::StrCat("RouteConfiguration ", name, " would have more than ",
                                     kMaxConditionsPerRouteConfiguration,
                                     " distinct conditions; the newest policies, this one "
                                     "among them, are left out there")});
            continue;
          }
          const std::shared_ptr<const xds::ObjectStatus> built =
              builder.StatusOf(GeneratedRef(port.first.namespace_, "route", name));
          bool rejected = false;
          if (built != nullptr) {
            for (const xds::Finding& finding : built->findings) {
              if (finding.severity != xds::Severity::kError || finding.reason == kDuplicateName) {
                continue;
              }
              rejected = true;
              accepted.causes.push_back(
                  {field, absl::StrCat("RouteConfiguration ", name, ": ", finding.message)});
            }
          }
          if (!rejected) {
            compiled.push_back(absl::StrCat("RouteConfiguration ", name, " compiles to ",
                                            parent->second.variants, " variants"));
          }
        }
        if (!accepted.causes.empty()) {
          accepted.reason = kReasonInvalid;
        } else {
          accepted.status = kStatusTrue;
          accepted.reason = kReasonAccepted;
          accepted.message = compiled.empty()
                                 ? outcome->message
                                 : absl::StrCat(outcome->message, ": ",
                                                absl::StrJoin(compiled, ", "));
        }
      }
    }
    if (accepted.status == kStatusFalse) accepted.message = ConditionMessage(accepted.causes);
    entry_status.conditions.push_back(std::move(accepted));
  }
  return status;
}

std::vector<std::shared_ptr<const GatewayStatus>> GatewayFrontEnd::Statuses() const {
  std::vector<std::shared_ptr<const GatewayStatus>> out;
  for (const auto& [ref, entry] : routes_) {
    if (entry.status != nullptr) out.push_back(entry.status);
  }
  for (const auto& [ref, entry] : policies_) {
    if (entry.status != nullptr) out.push_back(entry.status);
  }
  return out;
}

std::shared_ptr<const GatewayStatus> GatewayFrontEnd::StatusOf(const xds::ObjectRef& ref) const {
  if (ref.kind == kXdsVariantPolicyKind) {
    auto it = policies_.find(ref);
    return it == policies_.end() ? nullptr : it->second.status;
  }
  auto it = routes_.find(ref);
  return it == routes_.end() ? nullptr : it->second.status;
}

std::set<xds::ObjectRef> GatewayFrontEnd::TakeAccepted() {
  std::set<xds::ObjectRef> out = std::move(accepted_);
  accepted_.clear();
  return out;
}

}  // namespace facet::controller::gateway
