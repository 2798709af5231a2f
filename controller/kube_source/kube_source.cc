#include "controller/kube_source/kube_source.h"

#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "controller/kube/yaml_fields.h"
#include "controller/manifest/object_parser.h"
#include "spdlog/spdlog.h"
#include "xds_server/names/names.h"

namespace facet::controller {

KubeSource::KubeSource(kube::KubeClient& client, xds::SnapshotStore& store,
                       const xds::AdsService* ads, std::function<bool()> is_leader,
                       Options options)
    : client_(client),
      store_(store),
      ads_(ads),
      is_leader_(std::move(is_leader)),
      options_(std::move(options)),
      owned_clock_(options_.clock == nullptr ? std::make_unique<kube::RealClock>() : nullptr),
      clock_(options_.clock != nullptr ? options_.clock : owned_clock_.get()),
      status_writer_(client),
      builder_([this] {
        xds::BuildOptions build = options_.build;
        build.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforce;
        return build;
      }()) {
  auto make = [&](const std::string& path, const std::string& name, bool authority) {
    kube::Reflector::Options reflector_options;
    reflector_options.collection_path = path;
    reflector_options.name = name;
    reflector_options.clock = options_.clock;
    reflector_options.on_change = [this, authority](const std::vector<kube::ObjectDelta>& deltas) {
      Enqueue(authority, deltas);
    };
    return std::make_unique<kube::Reflector>(client_, std::move(reflector_options));
  };
  const std::string group = "/apis/facet.dev/v1alpha1";
  if (options_.namespaces.empty()) {
    resource_reflectors_.push_back(make(group + "/xdsresources", "xdsresources", false));
  } else {
    for (const std::string& ns : options_.namespaces) {
      resource_reflectors_.push_back(make(absl::StrCat(group, "/namespaces/", ns, "/xdsresources"),
                                          absl::StrCat("xdsresources in ", ns), false));
    }
  }
  authority_reflector_ = make(group + "/xdsauthorities", "xdsauthorities", true);
}

KubeSource::~KubeSource() { Stop(); }

void KubeSource::Start() {
  for (auto& reflector : resource_reflectors_) reflector->Start();
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
  if (authority_reflector_) authority_reflector_->Stop();
}

void KubeSource::Enqueue(bool authority, const std::vector<kube::ObjectDelta>& deltas) {
  absl::MutexLock lock(&mu_);
  for (const kube::ObjectDelta& delta : deltas) pending_[{authority, delta.key}] = delta;
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

std::vector<xds::ObjectStatus> KubeSource::statuses() const {
  absl::MutexLock lock(&mu_);
  std::vector<xds::ObjectStatus> out;
  out.reserve(statuses_.size());
  for (const auto& [ref, status] : statuses_) out.push_back(*status);
  return out;
}

void KubeSource::Run() {
  while (true) {
    bool build = false;
    bool status = false;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return dirty_ || status_due_ || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake), options_.status_resync);
      if (stopping_) return;
      if (dirty_) {
        // Debounce: let the rest of a burst arrive, then build once.
        mu_.Unlock();
        absl::SleepFor(options_.debounce);
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
    if (!synced) continue;  // Never publish a partial view of the cluster.
    if (build || last_ == nullptr) BuildAndPublish();
    const bool leading = !is_leader_ || is_leader_();
    if (leading && (build || status || clock_->Now() - last_status_sync_ >= options_.status_resync)) {
      SyncStatus();
    }
  }
}

void KubeSource::Apply(bool authority, const YAML::Node& object, const std::string& key,
                       bool deleted) {
  ParsedDocument parsed = ParseDocument(object, absl::StrCat("api:", key), "default");
  if (auto* resource = std::get_if<xds::ResourceObject>(&parsed); resource && !authority) {
    if (deleted) {
      builder_.Remove(resource->ref);
    } else {
      builder_.Upsert(std::move(*resource));
    }
  } else if (auto* declared = std::get_if<xds::AuthorityObject>(&parsed); declared && authority) {
    if (deleted) {
      builder_.Remove(declared->ref);
    } else {
      builder_.Upsert(std::move(*declared));
    }
  } else if (auto* unusable = std::get_if<UnusableDocument>(&parsed); unusable && !deleted) {
    spdlog::error("{}: {}", key, unusable->message);
  }
}

void KubeSource::BuildAndPublish() {
  std::map<std::pair<bool, std::string>, kube::ObjectDelta> deltas;
  {
    absl::MutexLock lock(&mu_);
    deltas.swap(pending_);
  }
  if (!loaded_) {
    // The first time, every cached object (events so far are in the caches).
    auto load = [this](const kube::Reflector& reflector, bool authority) {
      // Hold the snapshot for the whole loop: the reflector may replace its
      // cache meanwhile, and a temporary shared_ptr would die before the body.
      const auto snapshot = reflector.Snapshot();
      for (const auto& [key, object] : *snapshot) Apply(authority, object, key, false);
    };
    for (const auto& reflector : resource_reflectors_) load(*reflector, false);
    load(*authority_reflector_, true);
    loaded_ = true;
  } else {
    for (const auto& [key, delta] : deltas) {
      Apply(key.first, delta.object, delta.key, delta.type == kube::ObjectDelta::Type::kDeleted);
    }
  }
  if (!builder_.has_pending() && last_ != nullptr) return;  // Status or metadata only.
  const absl::Time start = absl::Now();
  xds::IncrementalBuilder::Result result = builder_.Build();
  const absl::Duration elapsed = absl::Now() - start;
  for (const auto& status : result.changed_statuses) {
    for (const xds::Finding& finding : status->findings) {
      if (finding.severity == xds::Severity::kError) {
        spdlog::warn("{}: {}: {}", status->ref.ToString(), finding.field, finding.message);
      }
    }
  }
  spdlog::info("snapshot built in {}: {} objects ({} validated, {} reference checks), {} rejected, "
               "{} served resources",
               absl::FormatDuration(elapsed), builder_.object_count(), result.validated_objects,
               result.reference_checks, builder_.rejected_count(), result.snapshot->size());
  {
    absl::MutexLock lock(&mu_);
    stats_.builds++;
    stats_.validated_objects += result.validated_objects;
    stats_.rejected_objects = builder_.rejected_count();
    stats_.last_build_duration = elapsed;
    for (const auto& status : result.changed_statuses) statuses_[status->ref] = status;
    for (const xds::ObjectRef& ref : result.removed_statuses) statuses_.erase(ref);
  }
  if (last_ == nullptr || result.snapshot_changed) {
    last_ = result.snapshot;
    store_.Publish(result.snapshot);
  }
  ready_ = true;
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
  std::vector<xds::ObjectStatus> statuses = this->statuses();
  // Served resources per authority, counted from what is actually served
  // (previous revisions that keep serving included).
  std::map<std::string, int> per_authority;
  if (last_ != nullptr) {
    for (const xds::ResourceType* type : xds::AllResourceTypes()) {
      for (const auto& [name, resource] : last_->resources(*type)) {
        absl::StatusOr<xds::XdstpName> parsed = xds::ParseXdstpName(name);
        if (xds::IsXdstpName(name) && parsed.ok()) per_authority[parsed->authority]++;
      }
    }
  }
  int64_t writes = 0, errors = 0;
  for (const auto& status : statuses) {
    // A rejected XdsAuthority (e.g. a duplicate) owns nothing.
    const int resources = status.ref.kind == xds::kXdsAuthorityKind && status.accepted
                              ? per_authority[status.served_name]
                              : 0;
    absl::StatusOr<bool> wrote = status_writer_.Sync(status, feedback, resources);
    if (!wrote.ok()) {
      ++errors;
      spdlog::warn("{}: writing status: {}", status.ref.ToString(),
                   std::string(wrote.status().message()));
    } else if (*wrote) {
      ++writes;
    }
  }
  absl::MutexLock lock(&mu_);
  stats_.status_writes += writes;
  stats_.status_errors += errors;
}

}  // namespace facet::controller
