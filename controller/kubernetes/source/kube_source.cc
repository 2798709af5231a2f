#include "controller/kubernetes/source/kube_source.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/gateway/model/gateway_parser.h"
#include "controller/kubernetes/client/api_discovery.h"
#include "controller/kubernetes/endpoints/endpoint_slices.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/objects/object_parser.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/log_text.h"
#include "xds_server/names/names.h"

namespace facet::controller {

namespace {

// Returns the object cached under `key` by the first of `reflectors` that
// holds it (the node shares the cache's memory: read only).
std::optional<YAML::Node> FindCached(
    const std::vector<std::unique_ptr<kube::Reflector>>& reflectors, const std::string& key) {
  for (const auto& reflector : reflectors) {
    const auto snapshot = reflector->Snapshot();
    if (auto it = snapshot->find(key); it != snapshot->end()) return it->second.node();
  }
  return std::nullopt;
}

// The watch-cache key of a namespaced object.
std::string CacheKey(const xds::ObjectRef& ref) {
  return absl::StrCat(ref.namespace_, "/", ref.name);
}

// How soon discovery is asked again after it failed (the answer is needed
// before the first publication).
constexpr absl::Duration kDiscoveryRetry = absl::Seconds(1);

constexpr char kEndpointSliceApiVersion[] = "discovery.k8s.io/v1";

// `object` with its kind and apiVersion, filled in when the API left them
// out (list items may lack them).
YAML::Node WithKind(const YAML::Node& object, const std::string& kind,
                    const std::string& api_version) {
  if (!kube::StringAt(object, {"kind"}).empty()) return object;
  YAML::Node copy = YAML::Clone(object);
  copy["kind"] = kind;
  copy["apiVersion"] = api_version;
  return copy;
}

// Whether Facet's status of a GRPCRoute (or policy) says its generation
// `generation` is accepted as a whole: every entry Accepted=True at it, none
// PartiallyInvalid (then an older generation serves in its place).
bool AcceptedAt(const gateway::GatewayStatus& status, int64_t generation) {
  if (status.generation != generation) return false;
  auto accepted = [generation](const std::vector<gateway::Condition>& conditions) {
    bool accepted = false;
    for (const gateway::Condition& condition : conditions) {
      if (condition.type == gateway::kConditionPartiallyInvalid &&
          condition.status == gateway::kStatusTrue) {
        return false;
      }
      if (condition.type == gateway::kConditionAccepted) {
        accepted = condition.status == gateway::kStatusTrue &&
                   condition.observed_generation == generation;
      }
    }
    return accepted;
  };
  size_t entries = 0;
  for (const gateway::ParentStatus& parent : status.parents) {
    if (!accepted(parent.conditions)) return false;
    ++entries;
  }
  for (const gateway::AncestorStatus& ancestor : status.ancestors) {
    if (!accepted(ancestor.conditions)) return false;
    ++entries;
  }
  return entries > 0;
}

}  // namespace

KubeSource::KubeSource(kube::KubeClient& client, xds::SnapshotStore& store,
                       const xds::AdsService* ads, std::function<bool()> is_leader,
                       Options options)
    : client_(client),
      ads_(ads),
      is_leader_(std::move(is_leader)),
      options_(std::move(options)),
      owned_clock_(options_.clock == nullptr ? std::make_unique<kube::RealClock>() : nullptr),
      clock_(options_.clock != nullptr ? options_.clock : owned_clock_.get()),
      status_writer_(client),
      revision_writer_(client),
      publisher_(store, [this] {
        Publisher::Options publishing;
        publishing.build = options_.build;
        publishing.build.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforce;
        publishing.on_published = options_.on_published;
        publishing.on_report = options_.on_report;
        return publishing;
      }()) {
  auto make = [&](const std::string& path, const std::string& name, Kind kind) {
    kube::Reflector::Options reflector_options;
    reflector_options.collection_path = path;
    reflector_options.name = name;
    reflector_options.clock = options_.clock;
    if (kind == Kind::kRevision) reflector_options.label_selector = kRevisionSelector;
    if (kind == Kind::kSlice) reflector_options.label_selector = kServiceNameLabel;
    reflector_options.on_change = [this, kind](const std::vector<kube::ObjectDelta>& deltas) {
      Enqueue(kind, deltas);
    };
    return std::make_unique<kube::Reflector>(client_, std::move(reflector_options));
  };
  if (options_.namespaces.empty()) {
    resource_reflectors_.push_back(
        make(CollectionPath(kXdsResourcePlural), kXdsResourcePlural, Kind::kResource));
    revision_reflectors_.push_back(
        make("/apis/apps/v1/controllerrevisions", "controllerrevisions", Kind::kRevision));
    slice_reflectors_.push_back(
        make("/apis/discovery.k8s.io/v1/endpointslices", "endpointslices", Kind::kSlice));
  } else {
    for (const std::string& ns : options_.namespaces) {
      resource_reflectors_.push_back(make(CollectionPath(kXdsResourcePlural, ns),
                                          absl::StrCat(kXdsResourcePlural, " in ", ns),
                                          Kind::kResource));
      revision_reflectors_.push_back(
          make(absl::StrCat("/apis/apps/v1/namespaces/", ns, "/controllerrevisions"),
               absl::StrCat("controllerrevisions in ", ns), Kind::kRevision));
      slice_reflectors_.push_back(
          make(absl::StrCat("/apis/discovery.k8s.io/v1/namespaces/", ns, "/endpointslices"),
               absl::StrCat("endpointslices in ", ns), Kind::kSlice));
    }
  }
  authority_reflector_ =
      make(CollectionPath(kXdsAuthorityPlural), kXdsAuthorityPlural, Kind::kAuthority);
  publisher_.builder().SetLastGoodLookup(
      [this](const xds::ObjectRef& ref) { return LastGood(ref); });
  if (!options_.gateway_api) return;
  front_end_ = std::make_unique<gateway::GatewayFrontEnd>(options_.gateway);
  front_end_->SetLastGoodLookup([this](const xds::ObjectRef& ref) { return LastGoodGateway(ref); });
  struct Watched {
    Kind kind;
    const char* kind_name;
    const char* group_version;
    const char* plural;
    bool gated;
  };
  // Services first, routes last: the order of the first load.
  const Watched watched[] = {
      {Kind::kService, gateway::kServiceKind, "v1", "services", false},
      {Kind::kReferenceGrant, gateway::kReferenceGrantKind, "gateway.networking.k8s.io/v1beta1",
       "referencegrants", true},
      {Kind::kVariantPolicy, gateway::kXdsVariantPolicyKind, kApiVersion, kXdsVariantPolicyPlural,
       true},
      {Kind::kGrpcRoute, gateway::kGrpcRouteKind, "gateway.networking.k8s.io/v1", "grpcroutes",
       true},
  };
  for (const Watched& kind : watched) {
    GatewayCollection& collection = gateway_collections_.emplace_back();
    collection.kind = kind.kind;
    collection.kind_name = kind.kind_name;
    collection.group_version = kind.group_version;
    collection.plural = kind.plural;
    collection.gated = kind.gated;
    const std::string base = kube::GroupVersionPath(kind.group_version);
    if (options_.namespaces.empty()) {
      collection.reflectors.push_back(
          make(absl::StrCat(base, "/", kind.plural), kind.plural, kind.kind));
    }
    for (const std::string& ns : options_.namespaces) {
      collection.reflectors.push_back(make(absl::StrCat(base, "/namespaces/", ns, "/", kind.plural),
                                           absl::StrCat(kind.plural, " in ", ns), kind.kind));
    }
  }
}

KubeSource::~KubeSource() { Stop(); }

void KubeSource::Start() {
  for (auto& reflector : resource_reflectors_) reflector->Start();
  for (auto& reflector : revision_reflectors_) reflector->Start();
  for (auto& reflector : slice_reflectors_) reflector->Start();
  authority_reflector_->Start();
  worker_ = std::thread([this] { Run(); });
}

void KubeSource::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
  for (auto& reflector : resource_reflectors_) reflector->Stop();
  for (auto& reflector : revision_reflectors_) reflector->Stop();
  for (auto& reflector : slice_reflectors_) reflector->Stop();
  if (authority_reflector_) authority_reflector_->Stop();
  for (GatewayCollection& collection : gateway_collections_) {
    for (auto& reflector : collection.reflectors) reflector->Stop();
  }
}

std::vector<xds::AuthorityObject> KubeSource::AuthorityObjects() const {
  std::vector<xds::AuthorityObject> out;
  const auto snapshot = authority_reflector_->Snapshot();
  for (const auto& [key, object] : *snapshot) {
    ParsedDocument parsed = ParseDocument(object, absl::StrCat("api:", key), kDefaultNamespace);
    if (auto* authority = std::get_if<xds::AuthorityObject>(&parsed)) {
      out.push_back(std::move(*authority));
    }
  }
  return out;
}

void KubeSource::Enqueue(Kind kind, const std::vector<kube::ObjectDelta>& deltas) {
  absl::MutexLock lock(&mu_);
  // A later delta of a pending key replaces it; the replacement rebinds the
  // node (json::SharedNode), leaving the tree a build took alone.
  for (const kube::ObjectDelta& delta : deltas) pending_[{kind, delta.key}] = delta;
  if (!first_change_) first_change_ = absl::Now();
  if (kind == Kind::kSlice && !deltas.empty()) slices_pending_ = true;
  dirty_ = true;  // Also after the first list, whose deltas may be empty.
}

void KubeSource::RequestStatusSync() {
  absl::MutexLock lock(&mu_);
  status_due_ = true;
}

KubeSource::Stats KubeSource::stats() const {
  Stats stats;
  {
    absl::MutexLock lock(&mu_);
    stats = stats_;
  }
  static_cast<PublishStats&>(stats) = publisher_.stats();
  auto add = [&stats](const kube::Reflector& reflector) {
    const kube::Reflector::Counters counters = reflector.counters();
    stats.reflectors.lists += counters.lists;
    stats.reflectors.watches += counters.watches;
    stats.reflectors.watch_errors += counters.watch_errors;
  };
  for (const auto& reflector : resource_reflectors_) add(*reflector);
  if (authority_reflector_) add(*authority_reflector_);
  return stats;
}

std::vector<std::shared_ptr<const xds::ObjectStatus>> KubeSource::shared_statuses() const {
  return publisher_.statuses();
}

std::vector<xds::ObjectStatus> KubeSource::statuses() const {
  const std::vector<std::shared_ptr<const xds::ObjectStatus>> statuses = publisher_.statuses();
  std::vector<xds::ObjectStatus> out;
  out.reserve(statuses.size());
  for (const auto& status : statuses) out.push_back(*status);
  return out;
}

void KubeSource::Run() {
  while (true) {
    bool build = false;
    bool status = false;
    DiscoverGatewayKinds();
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return dirty_ || status_due_ || stopping_;
      };
      absl::Duration timeout = options_.status_resync;
      if (status_backlog_ || status_waiting_) {  // Until the next pass may start.
        timeout = std::min(timeout, std::max(absl::ZeroDuration(),
                                             options_.status_backlog_retry -
                                                 (clock_->Now() - last_status_sync_)));
      }
      if (std::optional<absl::Duration> discovery = NextGatewayDiscovery()) {
        timeout = std::min(timeout, *discovery);
      }
      mu_.AwaitWithTimeout(absl::Condition(&wake), timeout);
      if (stopping_) return;
      if (dirty_) {
        // Debounce: let the rest of a burst arrive, then build once. Slice
        // churn (a rolling update) is coalesced over a longer window.
        const absl::Duration window = slices_pending_
                                          ? std::max(options_.debounce, options_.slice_coalesce)
                                          : options_.debounce;
        slices_pending_ = false;
        mu_.Unlock();
        absl::SleepFor(window);
        mu_.Lock();
        if (stopping_) return;
        dirty_ = false;
        build = true;
      }
      status = status_due_;
      status_due_ = false;
    }
    bool synced = authority_reflector_->has_synced();
    for (const auto& reflector : resource_reflectors_) synced = synced && reflector->has_synced();
    for (const auto& reflector : revision_reflectors_) synced = synced && reflector->has_synced();
    for (const auto& reflector : slice_reflectors_) synced = synced && reflector->has_synced();
    if (!synced || !GatewaySynced()) continue;  // Never publish a partial view of the cluster.
    // Watch events of Facet's own status writes change no status: only a
    // build that changed some status calls for a pass.
    const bool changed = (build || publisher_.published() == nullptr) && BuildAndPublish();
    const bool leading = !is_leader_ || is_leader_();
    // A change waits for the pass interval like a backlog does: otherwise
    // every build during churn would start a pass with a fresh budget.
    status_waiting_ = leading && (status_waiting_ || changed);
    if (!leading) status_backlog_ = false;  // A new leader is asked for a full pass.
    const absl::Duration since = clock_->Now() - last_status_sync_;
    if (leading && (status || since >= options_.status_resync ||
                    ((status_waiting_ || status_backlog_) &&
                     since >= options_.status_backlog_retry))) {
      // A full pass when asked (e.g. on becoming leader) or on resync.
      SyncRevisions(/*all=*/status || !status_waiting_);
      status_waiting_ = false;
      SyncStatus();
    }
  }
}

void KubeSource::Apply(Kind kind, const YAML::Node& object, const std::string& key,
                       bool deleted) {
  if (kind == Kind::kRevision) {
    // The newest revision of an object is its last accepted spec.
    if (deleted) return;  // Pruned, or gone with its owner.
    std::optional<xds::ResourceObject> last_good = LastGoodOf(object);
    int64_t generation = 0;
    if (last_good.has_value()) {
      generation = last_good->generation;
    } else if (std::optional<gateway::GatewayObject> gateway_object;
               front_end_ != nullptr &&
               (gateway_object = LastGoodGatewayObjectOf(object)).has_value()) {
      // The front end asks for it (LastGoodGateway) when it first sees a
      // generation it does not accept.
      generation = gateway_object->generation;
    } else {
      return;
    }
    const std::string owner = OwnerKeyOf(object);
    const auto newest = std::make_pair(generation, key);
    auto [it, inserted] = newest_revision_.try_emplace(owner, newest);
    if (!inserted) {
      if (it->second >= newest) return;
      it->second = newest;
    }
    if (last_good.has_value()) publisher_.builder().LastGoodChanged(last_good->ref);
    return;
  }
  if (kind != Kind::kResource && kind != Kind::kAuthority && kind != Kind::kSlice) {
    if (front_end_ != nullptr) ApplyGateway(kind, object, key, deleted);
    return;
  }
  if (kind == Kind::kSlice) {
    if (front_end_ != nullptr) ApplyGateway(kind, object, key, deleted);
    const std::string service = absl::StrCat(kube::StringAt(object, {"metadata", "namespace"}),
                                             "/",
                                             kube::StringAt(object, {"metadata", "labels",
                                                                     kServiceNameLabel}));
    auto& slices = slices_by_service_[service];
    if (deleted) {
      slices.erase(key);
    } else {
      slices.insert(key);
    }
    // Only the objects built from this Service's slices are rebuilt.
    if (auto dependents = dependents_.find(service); dependents != dependents_.end()) {
      for (const xds::ObjectRef& ref : dependents->second) UpsertWithSlices(ref);
    }
    if (slices.empty()) slices_by_service_.erase(service);
    return;
  }
  const bool authority = kind == Kind::kAuthority;
  ParsedDocument parsed = ParseDocument(object, absl::StrCat("api:", key), kDefaultNamespace);
  if (auto* resource = std::get_if<xds::ResourceObject>(&parsed); resource && !authority) {
    ForgetSliced(resource->ref);
    if (deleted) {
      newest_revision_.erase(RevisionOwnerKey(resource->ref));
      publisher_.builder().Remove(resource->ref);
    } else if (UsesSlices(*resource)) {
      const xds::ObjectRef ref = resource->ref;
      for (const xds::VariantSpec& variant : resource->spec->variants) {
        if (variant.endpoints_from) {
          dependents_[absl::StrCat(ref.namespace_, "/", variant.endpoints_from->service)].insert(ref);
        }
      }
      sliced_objects_[ref] = std::move(*resource);
      UpsertWithSlices(ref);
    } else {
      publisher_.builder().Upsert(std::move(*resource));
    }
  } else if (auto* declared = std::get_if<xds::AuthorityObject>(&parsed); declared && authority) {
    if (deleted) {
      publisher_.builder().Remove(declared->ref);
    } else {
      publisher_.builder().Upsert(std::move(*declared));
    }
  } else if (auto* unusable = std::get_if<UnusableDocument>(&parsed); unusable && !deleted) {
    spdlog::error("{}: {}", xds::SafeForLog(key),
                  xds::SafeForLog(unusable->message, xds::kMaxLoggedStatusBytes));
  }
}

void KubeSource::ApplyGateway(Kind kind, const YAML::Node& object, const std::string& key,
                              bool deleted) {
  std::string kind_name = gateway::kEndpointSliceKind;
  std::string api_version = kEndpointSliceApiVersion;
  for (const GatewayCollection& collection : gateway_collections_) {
    if (collection.kind != kind) continue;
    kind_name = collection.kind_name;
    api_version = collection.group_version;
  }
  const std::pair<std::string, std::string> name = absl::StrSplit(key, absl::MaxSplits('/', 1));
  const xds::ObjectRef ref{kind_name, name.first, name.second};
  if (deleted) {
    gateway_versions_.erase(ref);
    front_end_->Remove(ref);
    return;
  }
  // The front end counts every Upsert as a change: an object is handed over
  // again only when what it reads may have changed.
  const bool by_generation = kind == Kind::kGrpcRoute || kind == Kind::kVariantPolicy;
  const std::string version = by_generation ? kube::StringAt(object, {"metadata", "generation"})
                                            : kube::ResourceVersionOf(object);
  auto [it, inserted] = gateway_versions_.try_emplace(ref, version);
  if (!inserted) {
    if (!version.empty() && it->second == version) return;
    it->second = version;
  }
  front_end_->Upsert(gateway::ParseGatewayObject(WithKind(object, kind_name, api_version),
                                                 absl::StrCat("api:", key), kDefaultNamespace));
  ++gateway_upserts_;
}

void KubeSource::DiscoverGatewayKinds() {
  bool changed = false;
  for (GatewayCollection& collection : gateway_collections_) {
    if (collection.started) continue;
    const absl::Time now = clock_->Now();
    if (collection.gated) {
      const absl::Duration interval =
          collection.available.has_value() ? options_.gateway_discovery_interval : kDiscoveryRetry;
      if (collection.checked.has_value() && now - *collection.checked < interval) continue;
      collection.checked = now;
      absl::StatusOr<bool> served =
          kube::IsResourceServed(client_, collection.group_version, collection.plural);
      if (!served.ok()) {
        if (collection.discovery_failing) continue;  // Said once until it answers.
        collection.discovery_failing = true;
        spdlog::warn("Gateway API kind {}: asking discovery ({}) failed, retrying: {}",
                     collection.kind_name,
                     kube::GroupVersionPath(collection.group_version),
                     xds::SafeForLog(served.status().message(), xds::kMaxLoggedStatusBytes));
        continue;
      }
      collection.discovery_failing = false;
      changed = changed || collection.available != *served;
      collection.available = *served;
      if (!*served) {
        if (!collection.warned) {
          spdlog::warn(
              "Gateway API kind {}: the API server's discovery does not list {}/{} (its CRD is "
              "not installed); serving without it and looking again every {}",
              collection.kind_name, collection.group_version, collection.plural,
              absl::FormatDuration(options_.gateway_discovery_interval));
          collection.warned = true;
        }
        continue;
      }
      if (collection.warned) {
        spdlog::info("Gateway API kind {}: {}/{} is served now; watching it", collection.kind_name,
                     collection.group_version, collection.plural);
      }
    } else {
      collection.available = true;
    }
    for (auto& reflector : collection.reflectors) reflector->Start();
    collection.started = true;
  }
  if (!changed) return;
  absl::MutexLock lock(&mu_);
  for (const GatewayCollection& collection : gateway_collections_) {
    if (collection.gated && collection.available.has_value()) {
      stats_.gateway_kinds[collection.kind_name] = *collection.available;
    }
  }
}

std::optional<absl::Duration> KubeSource::NextGatewayDiscovery() const {
  std::optional<absl::Duration> next;
  const absl::Time now = clock_->Now();
  for (const GatewayCollection& collection : gateway_collections_) {
    if (collection.started || !collection.gated) continue;
    const absl::Duration interval =
        collection.available.has_value() ? options_.gateway_discovery_interval : kDiscoveryRetry;
    const absl::Duration due =
        collection.checked.has_value()
            ? std::max(absl::ZeroDuration(), interval - (now - *collection.checked))
            : absl::ZeroDuration();
    next = std::min(next.value_or(due), due);
  }
  return next;
}

bool KubeSource::GatewaySynced() const {
  for (const GatewayCollection& collection : gateway_collections_) {
    if (!collection.available.has_value()) return false;  // Not known yet.
    for (const auto& reflector : collection.reflectors) {
      if (*collection.available && !reflector->has_synced()) return false;
    }
  }
  return true;
}

const KubeSource::GatewayCollection* KubeSource::CollectionOf(absl::string_view kind_name) const {
  for (const GatewayCollection& collection : gateway_collections_) {
    if (collection.kind_name == kind_name) return &collection;
  }
  return nullptr;
}

std::optional<gateway::GatewayObject> KubeSource::LastGoodGateway(
    const xds::ObjectRef& ref) const {
  auto newest = newest_revision_.find(RevisionOwnerKey(ref));
  if (newest == newest_revision_.end()) return std::nullopt;
  std::optional<YAML::Node> revision = FindCached(revision_reflectors_, newest->second.second);
  if (!revision) return std::nullopt;
  return LastGoodGatewayObjectOf(*revision);
}

bool KubeSource::UsesSlices(const xds::ResourceObject& object) {
  if (!object.spec.has_value()) return false;
  for (const xds::VariantSpec& variant : object.spec->variants) {
    if (variant.endpoints_from) return true;
  }
  return false;
}

void KubeSource::ForgetSliced(const xds::ObjectRef& ref) {
  auto it = sliced_objects_.find(ref);
  if (it == sliced_objects_.end()) return;
  for (const xds::VariantSpec& variant : it->second.spec->variants) {
    if (!variant.endpoints_from) continue;
    const std::string service = absl::StrCat(ref.namespace_, "/", variant.endpoints_from->service);
    auto dependents = dependents_.find(service);
    if (dependents == dependents_.end()) continue;
    dependents->second.erase(ref);
    if (dependents->second.empty()) dependents_.erase(dependents);
  }
  sliced_objects_.erase(it);
}

void KubeSource::UpsertWithSlices(const xds::ObjectRef& ref) {
  auto it = sliced_objects_.find(ref);
  if (it == sliced_objects_.end()) return;
  xds::ResourceObject object = it->second;  // Documents are shared, not changed.
  for (size_t i = 0; i < object.spec->variants.size(); ++i) {
    xds::VariantSpec& variant = object.spec->variants[i];
    if (!variant.endpoints_from) continue;
    std::vector<YAML::Node> slices;
    const std::string service = absl::StrCat(ref.namespace_, "/", variant.endpoints_from->service);
    if (auto keys = slices_by_service_.find(service); keys != slices_by_service_.end()) {
      for (const std::string& key : keys->second) {
        if (std::optional<YAML::Node> slice = FindCached(slice_reflectors_, key)) {
          slices.push_back(*std::move(slice));
        }
      }
    }
    SlicedEndpoints built = ClusterLoadAssignmentFromSlices(
        slices, *variant.endpoints_from, absl::StrCat("spec.variants[", i, "].endpointsFrom"));
    variant.resource = built.resource;  // Rebinds: the cached object's tree is left alone.
    for (xds::Finding& finding : built.findings) object.findings.push_back(std::move(finding));
  }
  publisher_.builder().Upsert(std::move(object));
}

std::optional<xds::ResourceObject> KubeSource::LastGood(const xds::ObjectRef& ref) const {
  auto newest = newest_revision_.find(RevisionOwnerKey(ref));
  if (newest == newest_revision_.end()) return std::nullopt;
  std::optional<YAML::Node> revision = FindCached(revision_reflectors_, newest->second.second);
  if (!revision) return std::nullopt;
  return LastGoodOf(*revision);
}

void KubeSource::SyncRevisions(bool all) {
  std::set<xds::ObjectRef> refs;
  refs.swap(to_record_);
  // Facet's status of each GRPCRoute (and policy), by reference.
  std::map<xds::ObjectRef, std::shared_ptr<const gateway::GatewayStatus>> gateway_statuses;
  if (front_end_ != nullptr) {
    for (auto& status : front_end_->Statuses()) {
      const xds::ObjectRef ref = status->object;
      gateway_statuses.emplace(ref, std::move(status));
    }
  }
  if (all) {
    for (const auto& status : publisher_.statuses()) {
      if (status->accepted && status->ref.kind == xds::kXdsResourceKind) refs.insert(status->ref);
    }
    for (const auto& [ref, status] : gateway_statuses) {
      if (AcceptedAt(*status, status->generation)) refs.insert(ref);
    }
  }
  if (refs.empty()) return;
  // What Facet already recorded, per owner.
  std::map<std::string, std::vector<YAML::Node>> existing;
  for (const auto& reflector : revision_reflectors_) {
    const auto snapshot = reflector->Snapshot();
    for (const auto& [key, revision] : *snapshot) existing[OwnerKeyOf(revision)].push_back(revision);
  }
  int64_t writes = 0, errors = 0;
  for (const xds::ObjectRef& ref : refs) {
    const std::string key = CacheKey(ref);
    std::optional<YAML::Node> object;
    int64_t generation = 0;
    if (ref.kind == xds::kXdsResourceKind) {
      std::shared_ptr<const xds::ObjectStatus> status = publisher_.builder().StatusOf(ref);
      if (status == nullptr || !status->accepted) continue;
      generation = status->generation;
      object = FindCached(resource_reflectors_, key);
    } else {
      // A GRPCRoute (or policy): the generation its status says is accepted.
      auto status = gateway_statuses.find(ref);
      const GatewayCollection* collection = CollectionOf(ref.kind);
      if (status == gateway_statuses.end() || collection == nullptr) continue;
      generation = status->second->generation;
      if (!AcceptedAt(*status->second, generation)) continue;
      if (std::optional<YAML::Node> cached = FindCached(collection->reflectors, key)) {
        // A new node: the cached one is shared with the cache.
        object.emplace(WithKind(*cached, collection->kind_name, collection->group_version));
      }
    }
    // Only the generation that was accepted (a newer one is built next).
    if (!object ||
        kube::StringAt(*object, {"metadata", "generation"}) != absl::StrCat(generation)) {
      continue;
    }
    absl::StatusOr<bool> wrote = revision_writer_.Record(*object, existing[RevisionOwnerKey(ref)]);
    if (!wrote.ok()) {
      ++errors;
      to_record_.insert(ref);  // Retried on the next pass.
      spdlog::warn("{}: recording its accepted revision: {}", xds::SafeForLog(key),
                   xds::SafeForLog(wrote.status().message(), xds::kMaxLoggedStatusBytes));
    } else if (*wrote) {
      ++writes;
    }
  }
  absl::MutexLock lock(&mu_);
  stats_.revision_writes += writes;
  stats_.revision_errors += errors;
}

bool KubeSource::BuildAndPublish() {
  std::map<std::pair<Kind, std::string>, kube::ObjectDelta> deltas;
  absl::Time changed_at;
  {
    absl::MutexLock lock(&mu_);
    deltas.swap(pending_);
    changed_at = first_change_.value_or(absl::Now());
    first_change_.reset();
  }
  if (!loaded_) {
    // The first time, every cached object (events so far are in the caches).
    auto load = [this](const kube::Reflector& reflector, Kind kind) {
      // Hold the snapshot for the whole loop: the reflector may replace its
      // cache meanwhile, and a temporary shared_ptr would die before the body.
      const auto snapshot = reflector.Snapshot();
      for (const auto& [key, object] : *snapshot) Apply(kind, object, key, false);
    };
    for (const auto& reflector : revision_reflectors_) load(*reflector, Kind::kRevision);
    for (const auto& reflector : slice_reflectors_) load(*reflector, Kind::kSlice);
    for (const auto& reflector : resource_reflectors_) load(*reflector, Kind::kResource);
    load(*authority_reflector_, Kind::kAuthority);
    for (const GatewayCollection& collection : gateway_collections_) {
      if (!collection.started) continue;
      for (const auto& reflector : collection.reflectors) load(*reflector, collection.kind);
    }
    loaded_ = true;
  } else {
    for (const auto& [key, delta] : deltas) {
      Apply(key.first, delta.object, delta.key, delta.type == kube::ObjectDelta::Type::kDeleted);
    }
  }
  // The front end's generated objects join this build; what the builder
  // made of them joins their routes' statuses.
  if (front_end_ != nullptr) {
    front_end_->Flush(publisher_.builder());
    absl::MutexLock lock(&mu_);
    stats_.gateway_upserts = gateway_upserts_;
  }
  const Publisher::Outcome outcome = publisher_.BuildAndPublish(changed_at);
  bool gateway_changed = false;
  if (front_end_ != nullptr) {
    const xds::IncrementalBuilder::Result not_built;
    gateway_changed =
        !front_end_->Reconcile(publisher_.builder(), outcome.built ? outcome.result : not_built)
             .empty();
    to_record_.merge(front_end_->TakeAccepted());
  }
  if (!outcome.built) return gateway_changed;  // Status or metadata only.
  for (const auto& status : outcome.result.changed_statuses) {
    if (status->accepted && status->ref.kind == xds::kXdsResourceKind) {
      to_record_.insert(status->ref);
    }
  }
  if (outcome.deferred()) {
    // What the search budget left waits for the next build, which follows.
    absl::MutexLock lock(&mu_);
    dirty_ = true;
    first_change_ = std::min(first_change_.value_or(changed_at), changed_at);
  }
  ready_ = true;
  return outcome.statuses_changed() || gateway_changed;
}

void KubeSource::SyncStatus() {
  last_status_sync_ = clock_->Now();
  ClientFeedback feedback;
  if (ads_ != nullptr) {
    feedback.clients = ads_->ClientsPerVariant();
    for (const auto& record : ads_->nacks()) {
      feedback.nacks[{record.type_url, record.name, record.version}].push_back(record);
    }
  }
  // Facet's objects' statuses (not the generated objects'), and Facet's
  // status of each GRPCRoute and policy, in reference order.
  struct Item {
    xds::ObjectRef ref;
    const xds::ObjectStatus* object = nullptr;
    std::shared_ptr<const gateway::GatewayStatus> gateway;
  };
  const std::vector<xds::ObjectStatus> statuses = this->statuses();
  std::vector<Item> items;
  for (const xds::ObjectStatus& status : statuses) {
    if (status.ref.kind == xds::kXdsResourceKind || status.ref.kind == xds::kXdsAuthorityKind) {
      items.push_back({status.ref, &status, nullptr});
    }
  }
  if (front_end_ != nullptr) {
    for (auto& status : front_end_->Statuses()) {
      const xds::ObjectRef ref = status->object;
      items.push_back({ref, nullptr, std::move(status)});
    }
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.ref < b.ref; });
  // Served resources per authority, counted from what is actually served
  // (previous revisions that keep serving included).
  std::map<std::string, int> per_authority;
  if (const std::shared_ptr<const xds::Snapshot>& served = publisher_.published()) {
    for (const xds::ResourceType* type : xds::AllResourceTypes()) {
      for (const auto& [name, resource] : served->resources(*type)) {
        absl::StatusOr<xds::XdstpName> parsed = xds::ParseXdstpName(name);
        if (xds::IsXdstpName(name) && parsed.ok()) per_authority[parsed->authority]++;
      }
    }
  }
  // Stored statuses are read from the watch caches: an unchanged status
  // costs no request.
  const auto authority_cache = authority_reflector_->Snapshot();
  int64_t writes = 0, errors = 0;
  status_backlog_ = false;
  // Start where the last pass ran out of budget (statuses are in ref order),
  // so objects whose status keeps changing cannot starve those after them.
  size_t begin = 0;
  if (status_cursor_.has_value()) {
    begin = std::lower_bound(items.begin(), items.end(), *status_cursor_,
                             [](const Item& item, const xds::ObjectRef& ref) {
                               return item.ref < ref;
                             }) -
            items.begin();
    status_cursor_.reset();
  }
  for (size_t n = 0; n < items.size(); ++n) {
    const Item& item = items[(begin + n) % items.size()];
    if (is_leader_ && !is_leader_()) break;  // Leadership lapsed mid-pass: stop writing.
    if (writes >= options_.max_status_writes_per_pass) {
      status_backlog_ = true;  // The rest follow after status_backlog_retry.
      status_cursor_ = item.ref;
      break;
    }
    if (item.gateway != nullptr) {
      // Written only while its reflector holds it (deleted ones are gone).
      const GatewayCollection* collection = CollectionOf(item.ref.kind);
      std::optional<YAML::Node> cached =
          collection == nullptr ? std::nullopt : FindCached(collection->reflectors,
                                                            CacheKey(item.ref));
      if (!cached) continue;
      absl::StatusOr<bool> wrote = item.ref.kind == gateway::kGrpcRouteKind
                                       ? status_writer_.SyncRouteStatus(*item.gateway, &*cached)
                                       : status_writer_.SyncPolicyStatus(*item.gateway, &*cached);
      if (!wrote.ok()) {
        ++errors;
        spdlog::warn("{} {}: writing status: {}", item.ref.kind,
                     xds::SafeForLog(item.ref.ToString()),
                     xds::SafeForLog(wrote.status().message(), xds::kMaxLoggedStatusBytes));
      } else if (*wrote) {
        ++writes;
      }
      continue;
    }
    const xds::ObjectStatus& status = *item.object;
    // A rejected XdsAuthority (e.g. a duplicate) owns nothing.
    const bool authority = status.ref.kind == xds::kXdsAuthorityKind;
    const int resources = authority && status.accepted ? per_authority[status.served_name] : 0;
    std::optional<YAML::Node> cached;
    if (authority) {
      if (auto it = authority_cache->find(status.ref.name); it != authority_cache->end()) {
        cached.emplace(it->second.node());
      }
    } else {
      cached = FindCached(resource_reflectors_, CacheKey(status.ref));
    }
    absl::StatusOr<bool> wrote =
        status_writer_.Sync(status, feedback, resources, cached ? &*cached : nullptr);
    if (!wrote.ok()) {
      ++errors;
      spdlog::warn("{}: writing status: {}", xds::SafeForLog(status.ref.ToString()),
                   xds::SafeForLog(wrote.status().message(), xds::kMaxLoggedStatusBytes));
    } else if (*wrote) {
      ++writes;
    }
  }
  absl::MutexLock lock(&mu_);
  stats_.status_writes += writes;
  stats_.status_errors += errors;
}

}  // namespace facet::controller
