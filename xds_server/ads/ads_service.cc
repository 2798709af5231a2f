#include "xds_server/ads/ads_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"
#include "xds_server/names/names.h"

namespace facet::xds {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;

namespace {

// (type URL, name) pairs whose variants changed between two snapshots.
struct WakeSet {
  bool all = false;
  std::set<std::pair<std::string, std::string>> keys;
};

// Uses the snapshot's own change set when it was derived from `before`;
// anything else (a first snapshot, a skipped one) wakes every stream.
WakeSet Changes(const Snapshot* before, const Snapshot& after) {
  WakeSet wake;
  const ChangeSet& changes = after.changes();
  if (before == nullptr || changes.all || after.base_version() != before->version()) {
    wake.all = true;
    return wake;
  }
  for (const auto& [type, names] : changes.by_type) {
    for (const auto* list : {&names.added, &names.changed, &names.removed}) {
      for (const std::string& name : *list) wake.keys.emplace(type->type_url(), name);
    }
  }
  return wake;
}

std::string ShortType(const std::string& type_url) {
  const ResourceType* type = FindResourceType(type_url);
  return type != nullptr ? std::string(type->alias()) : type_url;
}

std::string DescribeItems(const std::vector<PushedItem>& items) {
  return absl::StrJoin(items, ", ", [](std::string* out, const PushedItem& item) {
    if (item.removal && item.version.empty()) {
      absl::StrAppend(out, "-", item.name);
    } else {
      absl::StrAppend(out, item.removal ? "-" : "", item.name, "[", item.label, "]@", item.version);
    }
  });
}

}  // namespace

class AdsService::StreamCore {
 public:
  StreamCore(uint64_t id, std::string peer) : id_(id), peer_(std::move(peer)) {}
  virtual ~StreamCore() = default;

  virtual void Notify(const std::shared_ptr<const ServingSnapshot>& serving,
                      const WakeSet& changes) = 0;
  virtual std::vector<std::tuple<std::string, std::string, std::string>> Holdings() const = 0;
  virtual void Drain() = 0;
  virtual std::string node_id() const = 0;

  uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }

 private:
  const uint64_t id_;
  const std::string peer_;
};

namespace {

template <typename Request, typename Response>
class Core final : public AdsService::StreamCore {
 public:
  using Reactor = grpc::ServerBidiReactor<Request, Response>;
  using Hooks = std::function<void(const AdsService::StreamCore&, const RequestOutcome*,
                                   const PushRecord*)>;

  Core(uint64_t id, std::string peer, Protocol protocol,
       std::shared_ptr<const ParameterMapping> mapping, Reactor* reactor, Hooks hooks)
      : StreamCore(id, std::move(peer)),
        protocol_(protocol),
        hooks_(std::move(hooks)),
        state_(protocol, std::move(mapping)),
        reactor_(reactor) {}

  Request* request() { return &request_; }

  void Start(std::shared_ptr<const ServingSnapshot> serving) {
    absl::MutexLock lock(&mu_);
    state_.SetSnapshot(std::move(serving));
  }

  void OnReadDone(bool ok) {
    if (!ok) {
      RequestFinish(grpc::Status::OK);
      return;
    }
    RequestOutcome outcome;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      status = state_.OnRequest(request_, &outcome);
      if (state_.has_node() && node_id_.empty()) node_id_ = state_.node().id();
    }
    if (!status.ok()) {
      spdlog::warn("stream {} ({}): closing: {}", id(), peer(), std::string(status.message()));
      RequestFinish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(status.message())));
      return;
    }
    hooks_(*this, &outcome, nullptr);
    TryWrite();
    reactor_->StartRead(&request_);
  }

  void OnWriteDone(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) finish_requested_ = true;
    }
    TryWrite();
  }

  void OnDone() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

  void Notify(const std::shared_ptr<const ServingSnapshot>& serving,
              const WakeSet& changes) override {
    {
      absl::MutexLock lock(&mu_);
      state_.SetSnapshot(serving);
      bool affected = changes.all;
      for (auto it = changes.keys.begin(); !affected && it != changes.keys.end(); ++it) {
        affected = state_.Watches(it->first, it->second);
      }
      if (!affected) return;
    }
    TryWrite();
  }

  std::vector<std::tuple<std::string, std::string, std::string>> Holdings() const override {
    absl::MutexLock lock(&mu_);
    return state_.Holdings();
  }

  void Drain() override {
    RequestFinish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "xDS server is shutting down"));
  }

  std::string node_id() const override {
    absl::MutexLock lock(&mu_);
    return node_id_;
  }

 private:
  enum class Action { kNone, kWrite, kFinish };

  void RequestFinish(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (!finish_requested_) {
        finish_requested_ = true;
        finish_status_ = std::move(status);
      }
    }
    TryWrite();
  }

  // Decides under the lock, acts outside it: at most one write in flight, and
  // Finish only when no write is.
  void TryWrite() {
    Action action = Action::kNone;
    PushRecord record;
    Reactor* reactor = nullptr;
    {
      absl::MutexLock lock(&mu_);
      reactor = reactor_;
      if (reactor_ == nullptr || finished_ || writing_) return;
      if (finish_requested_) {
        finished_ = true;
        action = Action::kFinish;
      } else if (state_.NextResponse(&response_, &record)) {
        writing_ = true;
        action = Action::kWrite;
      }
    }
    switch (action) {
      case Action::kWrite:
        hooks_(*this, nullptr, &record);
        reactor->StartWrite(&response_);
        break;
      case Action::kFinish:
        reactor->Finish(finish_status_);
        break;
      case Action::kNone:
        break;
    }
  }

  const Protocol protocol_;
  const Hooks hooks_;
  mutable absl::Mutex mu_;
  StreamState state_ ABSL_GUARDED_BY(mu_);
  Reactor* reactor_ ABSL_GUARDED_BY(mu_);
  std::string node_id_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_;  // Written before finished_ is set; read after.
  Request request_;    // Owned by the pending read.
  Response response_;  // Owned by the write in flight.
};

}  // namespace

template <typename Request, typename Response>
class AdsService::Reactor final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  Reactor(AdsService* service, Protocol protocol, grpc::CallbackServerContext* context)
      : service_(service) {
    uint64_t id;
    std::shared_ptr<const ServingSnapshot> serving;
    bool draining;
    {
      absl::MutexLock lock(&service->mu_);
      id = service->next_stream_id_++;
      serving = service->current_;
      draining = service->draining_;
    }
    if (draining) {
      this->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "xDS server is shutting down"));
      return;
    }
    core_ = std::make_shared<Core<Request, Response>>(
        id, context->peer(), protocol, service->options_.mapping, this,
        [service](const StreamCore& core, const RequestOutcome* outcome, const PushRecord* push) {
          if (outcome != nullptr) service->RecordOutcome(core, *outcome);
          if (push != nullptr) service->RecordPush(core, *push);
        });
    core_->Start(std::move(serving));
    service->Register(core_);
    spdlog::info("stream {} open: {} from {}", id,
                 protocol == Protocol::kSotw ? "SotW" : "delta", context->peer());
    this->StartRead(core_->request());
  }

  void OnReadDone(bool ok) override { core_->OnReadDone(ok); }
  void OnWriteDone(bool ok) override { core_->OnWriteDone(ok); }
  void OnDone() override {
    if (core_ != nullptr) {
      core_->OnDone();
      service_->Unregister(core_.get());
      spdlog::info("stream {} closed (node \"{}\", {})", core_->id(), core_->node_id(),
                   core_->peer());
    }
    delete this;
  }

 private:
  AdsService* service_;
  std::shared_ptr<Core<Request, Response>> core_;
};

AdsService::AdsService(SnapshotStore& store, Options options)
    : options_(std::move(options)),
      current_(std::make_shared<ServingSnapshot>(store.Current())) {
  watch_ = store.Watch([this](std::shared_ptr<const Snapshot> snapshot) {
    OnSnapshot(std::move(snapshot));
  });
}

AdsService::~AdsService() = default;

grpc::ServerBidiReactor<DiscoveryRequest, DiscoveryResponse>*
AdsService::StreamAggregatedResources(grpc::CallbackServerContext* context) {
  return new Reactor<DiscoveryRequest, DiscoveryResponse>(this, Protocol::kSotw, context);
}

grpc::ServerBidiReactor<DeltaDiscoveryRequest, DeltaDiscoveryResponse>*
AdsService::DeltaAggregatedResources(grpc::CallbackServerContext* context) {
  return new Reactor<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(this, Protocol::kDelta,
                                                                    context);
}

void AdsService::OnSnapshot(std::shared_ptr<const Snapshot> snapshot) {
  auto serving = std::make_shared<ServingSnapshot>(std::move(snapshot));
  std::vector<std::shared_ptr<StreamCore>> cores;
  WakeSet changes;
  {
    absl::MutexLock lock(&mu_);
    changes = Changes(current_ ? &current_->snapshot() : nullptr, serving->snapshot());
    current_ = serving;
    for (const auto& [key, core] : streams_) cores.push_back(core);
  }
  snapshots_++;
  spdlog::info("snapshot {}: {} resources, {} changed, {} streams", serving->snapshot().version(),
               serving->snapshot().size(), changes.keys.size(), cores.size());
  for (const auto& core : cores) core->Notify(serving, changes);
}

std::shared_ptr<const ServingSnapshot> AdsService::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

void AdsService::Register(const std::shared_ptr<StreamCore>& core) {
  absl::MutexLock lock(&mu_);
  streams_[core.get()] = core;
  streams_total_++;
}

void AdsService::Unregister(const StreamCore* core) {
  absl::MutexLock lock(&mu_);
  streams_.erase(core);
}

void AdsService::Drain() {
  std::vector<std::shared_ptr<StreamCore>> cores;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    for (const auto& [key, core] : streams_) cores.push_back(core);
  }
  for (const auto& core : cores) core->Drain();
}

void AdsService::RecordOutcome(const StreamCore& core, const RequestOutcome& outcome) {
  switch (outcome.kind) {
    case RequestOutcome::Kind::kAck:
      acks_++;
      spdlog::info("stream {} node \"{}\": ACK {} nonce {}", core.id(), core.node_id(),
                   ShortType(outcome.type_url), outcome.nonce);
      break;
    case RequestOutcome::Kind::kNack: {
      nacks_count_++;
      spdlog::warn("stream {} node \"{}\": NACK {} nonce {} [{}]: {}", core.id(), core.node_id(),
                   ShortType(outcome.type_url), outcome.nonce, DescribeItems(outcome.nacked),
                   outcome.error_detail);
      absl::MutexLock lock(&mu_);
      for (const PushedItem& item : outcome.nacked) {
        if (item.removal) continue;
        NackRecord& record = nacks_[{outcome.type_url, item.name, item.version}];
        record.type_url = outcome.type_url;
        record.name = item.name;
        record.version = item.version;
        record.label = item.label;
        record.node_id = core.node_id();
        record.error_detail = outcome.error_detail;
        record.count++;
      }
      break;
    }
    case RequestOutcome::Kind::kInitial:
    case RequestOutcome::Kind::kSubscriptionOnly:
      spdlog::info("stream {} node \"{}\": subscribe {}", core.id(), core.node_id(),
                   ShortType(outcome.type_url));
      break;
    case RequestOutcome::Kind::kStale:
      spdlog::debug("stream {}: stale nonce {} for {}", core.id(), outcome.nonce,
                    ShortType(outcome.type_url));
      break;
  }
}

void AdsService::RecordPush(const StreamCore& core, const PushRecord& record) {
  pushes_++;
  spdlog::info("stream {} node \"{}\": push {} version {} nonce {}: [{}]", core.id(),
               core.node_id(), ShortType(record.type_url), record.version_info, record.nonce,
               DescribeItems(record.items));
}

AdsStats AdsService::stats() const {
  AdsStats stats;
  {
    absl::MutexLock lock(&mu_);
    stats.streams_open = static_cast<int64_t>(streams_.size());
  }
  stats.streams_total = streams_total_;
  stats.pushes = pushes_;
  stats.acks = acks_;
  stats.nacks = nacks_count_;
  stats.snapshots = snapshots_;
  return stats;
}

std::vector<NackRecord> AdsService::nacks() const {
  absl::MutexLock lock(&mu_);
  std::vector<NackRecord> out;
  for (const auto& [key, record] : nacks_) out.push_back(record);
  return out;
}

std::map<std::string, int> AdsService::StreamsPerAuthority() const {
  std::vector<std::shared_ptr<StreamCore>> cores;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, core] : streams_) cores.push_back(core);
  }
  std::map<std::string, int> counts;
  for (const auto& core : cores) {
    std::set<std::string> authorities;
    for (const auto& [type_url, name, version] : core->Holdings()) {
      absl::StatusOr<XdstpName> parsed =
          IsXdstpName(name) ? ParseXdstpName(name) : absl::StatusOr<XdstpName>(XdstpName{});
      authorities.insert(parsed.ok() ? parsed->authority : "");
    }
    for (const std::string& authority : authorities) counts[authority]++;
  }
  return counts;
}

std::map<std::tuple<std::string, std::string, std::string>, int> AdsService::ClientsPerVariant()
    const {
  std::vector<std::shared_ptr<StreamCore>> cores;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, core] : streams_) cores.push_back(core);
  }
  std::map<std::tuple<std::string, std::string, std::string>, int> counts;
  for (const auto& core : cores) {
    for (auto& holding : core->Holdings()) counts[holding]++;
  }
  return counts;
}

}  // namespace facet::xds
