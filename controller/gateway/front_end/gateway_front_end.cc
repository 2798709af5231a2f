#include "controller/gateway/front_end/gateway_front_end.h"

#include <utility>
#include <variant>

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

}  // namespace

GatewayFrontEnd::GatewayFrontEnd(TranslateOptions options) : options_(std::move(options)) {}

GatewayFrontEnd::~GatewayFrontEnd() = default;

const GatewayObject* GatewayFrontEnd::RouteEntry::served() const {
  if (accepted.value_or(false)) return &current;
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
    std::set<xds::ObjectRef> targets;
    for (const ObjectReference& target : std::get<VariantPolicy>(object.spec).target_refs) {
      targets.insert({kGrpcRouteKind, NamespaceOf(target, ref.namespace_), target.name});
    }
    policies_by_route_.Set(ref, std::move(targets));
    policies_[ref] = std::move(object);
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
    for (const auto& [parent, indices] : it->second.attached) dirty_parents_.insert(parent);
    routes_by_parent_service_.Erase(ref);
    routes_by_backend_service_.Erase(ref);
    cross_namespace_routes_.Erase(ref);
    routes_.erase(it);
    dirty_routes_.erase(ref);
    dirty_statuses_.erase(ref);
    accepted_.erase(ref);
  } else if (ref.kind == kXdsVariantPolicyKind) {
    policies_by_route_.Erase(ref);
    policies_.erase(ref);
  }
}

void GatewayFrontEnd::SetLastGoodLookup(LastGoodLookup lookup) {
  last_good_lookup_ = std::move(lookup);
}

bool GatewayFrontEnd::has_pending() const {
  return !dirty_services_.empty() || !dirty_endpoints_.empty() || !dirty_routes_.empty() ||
         !dirty_parents_.empty() || unroutable_ == routes_.empty();
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
      const ParentResolution resolution = ResolveParentRef(ref.namespace_, parents[i], lookup);
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
        resolutions.emplace_back(ResolveParentRef(ref.namespace_, parent, lookup));
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
  if (generated == generated_ports_.end() || generated->second.count(number) == 0) return;
  const GatewayObject& service = *ServiceOf(key);
  std::vector<AttachedRoute> routes;
  for (const xds::ObjectRef& route : routes_by_parent_service_.ValuesOf(key)) {
    const RouteEntry& entry = routes_.at(route);
    auto it = entry.attached.find(parent);
    if (it == entry.attached.end()) continue;
    AttachedRoute& attached = routes.emplace_back();
    attached.route = entry.served();
    attached.parent_refs = it->second;
  }
  ++stats->parents;
  ParentTranslation translation =
      TranslateParent(service, *PortOf(service, number), routes, Lookup(), options_);
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
  for (const std::shared_ptr<const xds::ObjectStatus>& status : result.changed_statuses) {
    auto owner = owners_.find(status->ref);
    if (owner == owners_.end()) continue;
    const std::set<xds::ObjectRef>& routes =
        owner->second.backend ? routes_by_backend_service_.ValuesOf(owner->second.service)
                              : routes_by_parent_service_.ValuesOf(owner->second.service);
    reached.insert(routes.begin(), routes.end());
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
  return out;
}

std::vector<std::shared_ptr<const GatewayStatus>> GatewayFrontEnd::Statuses() const {
  std::vector<std::shared_ptr<const GatewayStatus>> out;
  for (const auto& [ref, entry] : routes_) {
    if (entry.status != nullptr) out.push_back(entry.status);
  }
  return out;
}

std::shared_ptr<const GatewayStatus> GatewayFrontEnd::StatusOf(const xds::ObjectRef& ref) const {
  auto it = routes_.find(ref);
  return it == routes_.end() ? nullptr : it->second.status;
}

std::set<xds::ObjectRef> GatewayFrontEnd::TakeAccepted() {
  std::set<xds::ObjectRef> out = std::move(accepted_);
  accepted_.clear();
  return out;
}

}  // namespace facet::controller::gateway
