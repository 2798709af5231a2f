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
      status_writer_(client) {
  auto make = [&](const std::string& path, const std::string& name) {
    kube::Reflector::Options reflector_options;
    reflector_options.collection_path = path;
    reflector_options.name = name;
    reflector_options.clock = options_.clock;
    reflector_options.on_change = [this](const std::vector<kube::ObjectDelta>&) { Notify(); };
    return std::make_unique<kube::Reflector>(client_, std::move(reflector_options));
  };
  const std::string group = "/apis/facet.dev/v1alpha1";
  if (options_.namespaces.empty()) {
    resource_reflectors_.push_back(make(group + "/xdsresources", "xdsresources"));
  } else {
    for (const std::string& ns : options_.namespaces) {
      resource_reflectors_.push_back(make(absl::StrCat(group, "/namespaces/", ns, "/xdsresources"),
                                          absl::StrCat("xdsresources in ", ns)));
    }
  }
  authority_reflector_ = make(group + "/xdsauthorities", "xdsauthorities");
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

void KubeSource::Notify() {
  absl::MutexLock lock(&mu_);
  dirty_ = true;
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
  return statuses_;
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

std::string KubeSource::SpecFingerprint() const {
  // Status writes and metadata edits leave every (key, uid, generation) as
  // it was; only spec changes, creations and deletions alter it.
  std::string fingerprint;
  auto add = [&fingerprint](const kube::Reflector& reflector) {
    // Hold the snapshot for the whole loop: the reflector may replace its
    // cache meanwhile, and a temporary shared_ptr would die before the body.
    const auto snapshot = reflector.Snapshot();
    for (const auto& [key, object] : *snapshot) {
      absl::StrAppend(&fingerprint, key, " ", kube::StringAt(object, {"metadata", "uid"}), " ",
                      kube::StringAt(object, {"metadata", "generation"}), "\n");
    }
  };
  for (const auto& reflector : resource_reflectors_) add(*reflector);
  add(*authority_reflector_);
  return fingerprint;
}

void KubeSource::BuildAndPublish() {
  std::string fingerprint = SpecFingerprint();
  if (last_ != nullptr && fingerprint == last_fingerprint_) return;  // Nothing to rebuild.
  last_fingerprint_ = std::move(fingerprint);
  std::vector<xds::ResourceObject> resources;
  std::vector<xds::AuthorityObject> authorities;
  auto collect = [&](const kube::Reflector& reflector) {
    // Hold the snapshot for the whole loop: the reflector may replace its
    // cache meanwhile, and a temporary shared_ptr would die before the body.
    const auto snapshot = reflector.Snapshot();
    for (const auto& [key, object] : *snapshot) {
      ParsedDocument parsed = ParseDocument(object, absl::StrCat("api:", key), "default");
      if (auto* resource = std::get_if<xds::ResourceObject>(&parsed)) {
        resources.push_back(std::move(*resource));
      } else if (auto* authority = std::get_if<xds::AuthorityObject>(&parsed)) {
        authorities.push_back(std::move(*authority));
      } else if (auto* unusable = std::get_if<UnusableDocument>(&parsed)) {
        spdlog::error("{}: {}", key, unusable->message);
      }
    }
  };
  for (const auto& reflector : resource_reflectors_) collect(*reflector);
  collect(*authority_reflector_);

  xds::BuildOptions build = options_.build;
  build.authority_policy = xds::BuildOptions::AuthorityPolicy::kEnforce;
  const absl::Time start = absl::Now();
  xds::BuildResult result = xds::BuildSnapshot(resources, authorities, last_.get(), build);
  const absl::Duration elapsed = absl::Now() - start;
  int rejected = 0;
  for (const auto& status : result.statuses) {
    if (!status.accepted) ++rejected;
  }
  spdlog::info("snapshot built in {}: {} objects, {} rejected, {} served resources",
               absl::FormatDuration(elapsed), result.statuses.size(), rejected,
               result.snapshot->size());
  {
    absl::MutexLock lock(&mu_);
    stats_.builds++;
    stats_.rejected_objects = rejected;
    stats_.last_build_duration = elapsed;
    statuses_ = result.statuses;
  }
  if (last_ == nullptr || last_->version() != result.snapshot->version()) {
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
