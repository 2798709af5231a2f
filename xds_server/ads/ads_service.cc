#include "xds_server/ads/ads_service.h"

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/csds_service.h"
#include "xds_server/ads/wire.h"
#include "xds_server/common/log_text.h"
#include "xds_server/names/names.h"

namespace facet::xds {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;

namespace {

std::string DescribeItems(const std::vector<PushedItem>& items) {
  return absl::StrJoin(items, ", ", [](std::string* out, const PushedItem& item) {
    if (item.removal && item.version.empty()) {
      absl::StrAppend(out, "-", SafeForLog(item.name));
    } else {
      absl::StrAppend(out, item.removal ? "-" : "", SafeForLog(item.name), "[", item.label, "]@",
                      item.version);
    }
  });
}

bool DebugLogging() { return spdlog::should_log(spdlog::level::debug); }

// Options::push_walkers as a number: zero is the CPUs the process may run on
// (its affinity, as taskset sets it), at most 4.
int PushWalkers(int configured) {
  if (configured > 0) return configured;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int count = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return std::clamp(count, 1, 4);
}

}  // namespace

class AdsService::StreamCore : public ResponseBudget::Waiter,
                               public SubscriptionQuota,
                               public WritesInFlight::Writer {
 public:
  // `peer` is escaped for logs here.
  StreamCore(AdsService* service, uint64_t id, absl::string_view peer)
      : service_(service), id_(id), peer_(SafeForLog(peer)) {}
  virtual ~StreamCore() = default;

  // Takes in `serving` (the `sequence`th snapshot, which reached the server
  // at `published`) and re-examines what `wake` names.
  virtual void Notify(const std::shared_ptr<const ServingSnapshot>& serving, uint64_t sequence,
                      const WatchIndex::Wake& wake, absl::Time published) = 0;
  virtual std::vector<std::tuple<std::string, std::string, std::string>> Holdings() const = 0;
  virtual void Drain() = 0;
  virtual std::string node_id() const = 0;
  // Returns (and forgets) pending watch changes, then everything watched.
  virtual std::vector<WatchChange> AllWatches() = 0;
  // Returns (and forgets) pending demand changes, then the end of every
  // subscription held.
  virtual std::vector<DemandChange> EndDemand() = 0;
  // Describes the stream's client into `out` when it matches `query`, within
  // `*budget` (StreamState::DescribeClient). Returns false when it does not
  // match; sets `*fits` to false when it matches but does not fit.
  virtual bool Describe(const ClientStatusQuery& query, ClientStatus* out, size_t* budget,
                        bool* fits) const = 0;
  // Returns the subscription memory charged for the stream to its connection
  // and the server, and the charge; called once, after the stream's last
  // reaction.
  virtual int64_t EndSubscriptionMemory() = 0;
  // Reports that the stream holds no authority any more; called once, after
  // the stream's last reaction.
  virtual void EndHeldAuthorities() = 0;

  // Called by the stream's state under the stream's lock.
  absl::Status Take(int64_t bytes, RequestOutcome::Limit* limit) override {
    absl::Status status = service_->subscriptions_.Take(peer_, bytes, limit);
    if (status.ok()) memory_charged_ += bytes;
    return status;
  }

  uint64_t id() const { return id_; }
  // Called once, by Register, before the stream is shared.
  void set_id(uint64_t id) { id_ = id; }
  const std::string& peer() const { return peer_; }

 protected:
  std::shared_ptr<const ServingSnapshot> UpdateWatches(
      const std::vector<WatchChange>& changes, std::shared_ptr<const Parameters> uniform_params,
      const std::vector<WatchChange>& watched, uint64_t* sequence) {
    return service_->UpdateWatches(this, changes, std::move(uniform_params), watched, sequence);
  }
  void Record(RequestOutcome* outcome, const PushRecord* push) {
    if (outcome != nullptr) service_->RecordOutcome(*this, *outcome);
    if (push != nullptr) service_->RecordPush(*this, *push);
  }
  AdsObserver& observer() { return service_->observer_; }
  // Charges the stream's subscription memory as `held` now, whatever Take
  // charged for the request. Called under the stream's lock.
  void SettleSubscriptionMemory(int64_t held) {
    if (held != memory_charged_) service_->subscriptions_.Adjust(peer_, held - memory_charged_);
    memory_charged_ = held;
  }
  // Returns the charge to the connection and the server; returns its size.
  int64_t ReturnSubscriptionMemory() {
    const int64_t charged = memory_charged_;
    SettleSubscriptionMemory(0);
    return charged;
  }
  ResponseBudget& budget() { return service_->budget_; }
  // Tells the stall check of a write started or completed (nothing when the
  // service has none). Called under the stream's lock, which orders them.
  void WriteStarted(absl::Time started) {
    if (service_->writes_in_flight_ == nullptr) return;
    service_->writes_in_flight_->Started(id_, started,
                                         std::static_pointer_cast<StreamCore>(shared_from_this()));
  }
  void WriteEnded() {
    if (service_->writes_in_flight_ != nullptr) service_->writes_in_flight_->Ended(id_);
  }

 private:
  friend class AdsService;
  AdsService* const service_;
  uint64_t id_;
  const std::string peer_;
  // Subscription memory charged to the connection and the server: guarded
  // by the stream's lock.
  int64_t memory_charged_ = 0;
};

ClientIdentity IdentityOf(const grpc::AuthContext& auth) {
  ClientIdentity identity;
  // gRPC reports a peer as authenticated only when its certificate names a
  // SAN or a common name; a verified certificate is there either way.
  identity.has_certificate = auth.IsPeerAuthenticated() ||
                             !auth.FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME).empty();
  if (!auth.IsPeerAuthenticated()) return identity;
  std::vector<grpc::string_ref> spiffe = auth.FindPropertyValues(GRPC_PEER_SPIFFE_ID_PROPERTY_NAME);
  if (spiffe.size() == 1) identity.spiffe_id.assign(spiffe[0].data(), spiffe[0].size());
  for (const grpc::string_ref& dns : auth.FindPropertyValues(GRPC_PEER_DNS_PROPERTY_NAME)) {
    identity.dns_names.emplace_back(dns.data(), dns.size());
  }
  return identity;
}

namespace {

// Returns why a request that broke `limit` (kNone: the protocol) ends its
// stream.
StreamEndReason EndReasonOf(RequestOutcome::Limit limit) {
  switch (limit) {
    case RequestOutcome::Limit::kNames:
      return StreamEndReason::kNamesLimit;
    case RequestOutcome::Limit::kTypes:
      return StreamEndReason::kTypesLimit;
    case RequestOutcome::Limit::kBytes:
      return StreamEndReason::kBytesLimit;
    case RequestOutcome::Limit::kConnectionMemory:
      return StreamEndReason::kConnectionSubscriptionLimit;
    case RequestOutcome::Limit::kServerMemory:
      return StreamEndReason::kServerSubscriptionLimit;
    case RequestOutcome::Limit::kNone:
      break;
  }
  return StreamEndReason::kInvalidRequest;
}

grpc::ByteBuffer Encode(const SotwResponse& response) { return EncodeSotwResponse(response); }
grpc::ByteBuffer Encode(const DeltaResponse& response) { return EncodeDeltaResponse(response); }

// Lets go of the variants a plan holds once it is encoded. A SotW plan keeps
// the room of its strings for the next one decided on the thread; a delta
// plan is emptied (its NextResponse starts from an empty one anyway, and its
// lists of removed names may be long).
void ReleaseVariants(SotwResponse* plan) { plan->resources.clear(); }
void ReleaseVariants(DeltaResponse* plan) { *plan = DeltaResponse(); }

// One stream of either protocol: Request is the request message, Plan what
// StreamState::NextResponse decides (encoded for the wire by Encode).
template <typename Request, typename Plan>
class Core final : public AdsService::StreamCore {
 public:
  using Reactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

  Core(AdsService* service, uint64_t id, std::string peer, Protocol protocol,
       std::shared_ptr<const ParameterMapping> mapping, StreamState::Limits limits,
       DemandObserver* demand_observer, Reactor* reactor, grpc::CallbackServerContext* context)
      : StreamCore(service, id, std::move(peer)),
        reactor_(reactor),
        state_(protocol, std::move(mapping), limits),
        demand_observer_(demand_observer),
        context_(context) {
    if (demand_observer_ != nullptr) state_.RecordDemand();
    state_.SetQuota(this);
    if (std::shared_ptr<const grpc::AuthContext> auth = context->auth_context()) {
      state_.SetIdentity(IdentityOf(*auth));
    }
  }

  grpc::ByteBuffer* read_buffer() { return &read_buffer_; }

  // Returns this thread's request message, which the read path parses each
  // request into and clears before it lets go of the stream's lock.
  static Request& ThreadRequest() {
    thread_local Request request;
    return request;
  }
  // Requests up to this size leave their parsed fields allocated in the
  // thread's message for the next one.
  static constexpr size_t kKeptRequestBytes = 16 << 10;
  // Returns this thread's plan, which DecideLocked decides each response
  // into and encodes from: its version and nonce strings keep their room
  // from one response to the next (a stream keeps none between responses).
  static Plan& ThreadPlan() {
    thread_local Plan plan;
    return plan;
  }

  bool Describe(const ClientStatusQuery& query, ClientStatus* out, size_t* budget,
                bool* fits) const override {
    absl::MutexLock lock(&mu_);
    // The node is parsed from the bytes the stream keeps: here only when the
    // query filters by its id (DescribeClient parses it for the report).
    const std::optional<envoy::config::core::v3::Node> node =
        query.filter_node_id && state_.has_node() ? std::make_optional(state_.node())
                                                  : std::nullopt;
    if (!query.Selects(state_.identity(), node.has_value() ? &*node : nullptr)) {
      return false;
    }
    out->stream_id = id();
    out->peer = peer();
    out->identity = state_.identity();
    *fits = state_.DescribeClient(out, budget, &query);
    return true;
  }

  // Starts from the snapshot Register returned, unless a snapshot published
  // since has already reached this stream (it never goes back).
  void Start(std::shared_ptr<const ServingSnapshot> serving, uint64_t sequence) {
    absl::MutexLock lock(&mu_);
    if (sequence <= sequence_) return;
    state_.AdoptSnapshot(std::move(serving));
    sequence_ = sequence;
  }

  // Applies `request` to the stream's state: outcome, status and demand
  // changes for the caller; new watches are registered with the service.
  void ApplyRequestLocked(const Request& request, RequestOutcome* outcome, absl::Status* status,
                          std::vector<DemandChange>* demand) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    *status = state_.OnRequest(request, outcome);
    SettleSubscriptionMemory(state_.subscription_memory());
    ReportAuthoritiesLocked();
    *demand = state_.TakeDemandChanges();
    if (state_.has_node() && !node_id_taken_) {
      // Once: the node is parsed from the bytes the stream keeps, and an
      // empty id would otherwise send every later request here again.
      node_id_ = SafeForLog(state_.node().id());
      node_id_taken_ = true;
    }
    std::vector<WatchChange> changes = state_.TakeWatchChanges();
    const std::shared_ptr<const Parameters>& uniform = state_.uniform_params();
    if (!changes.empty() || uniform != reported_uniform_) {
      // Register and read the current snapshot in one step: a snapshot
      // published after this wakes the stream for its new names (and,
      // once its subscriptions no longer share one parameter set, for
      // every change to a name it watches).
      std::vector<WatchChange> watched;
      if (uniform != reported_uniform_) watched = state_.Watches();
      reported_uniform_ = uniform;
      uint64_t sequence = 0;
      auto serving = UpdateWatches(changes, uniform, watched, &sequence);
      if (sequence > sequence_) {
        state_.AdoptSnapshot(std::move(serving));
        sequence_ = sequence;
      }
    }
  }

  void OnReadDone(bool ok) {
    if (!ok) {
      RequestFinish(grpc::Status::OK);
      return;
    }
    RequestOutcome outcome;
    absl::Status status;
    std::vector<DemandChange> demand;
    bool decoded = false;
    // What the stream does next, decided with the request when it changes no
    // demand (every ACK): one critical section per ACK, not three.
    Next next;
    bool decided = false;
    {
      absl::MutexLock lock(&mu_);
      // Parsed under the stream's lock, like everything else the read path
      // keeps: gRPC orders a stream's reads, but on changing threads and
      // through synchronization ThreadSanitizer cannot see. Parsed into the
      // thread's message, used only until it is cleared below: an idle
      // stream keeps no parsed request, and an ACK allocates nothing.
      Request& request = ThreadRequest();
      const size_t wire_bytes = read_buffer_.Length();
      decoded = DecodeMessage(&read_buffer_, &request);
      if (decoded) ApplyRequestLocked(request, &outcome, &status, &demand);
      // Clear keeps sub-messages allocated for the next parse, but not those
      // of a large request (the thread would keep them); the node comes in
      // the first request only, and its copy is in state_.
      request.clear_node();
      if (wire_bytes > kKeptRequestBytes) {
        request = Request();
      } else {
        request.Clear();
      }
      if (decoded && status.ok() && demand.empty()) {
        DecideLocked(&next);
        decided = true;
      }
    }
    if (!decoded) {
      const std::string& type = Request::GetDescriptor()->full_name();
      spdlog::warn("stream {} node \"{}\" ({}): closing: a request is not a valid {}", id(),
                   node_id(), peer(), type);
      RequestFinish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat("the request is not a valid ", type)),
                    StreamEndReason::kInvalidRequest);
      return;
    }
    if (!demand.empty()) demand_observer_->OnDemand(demand);
    if (!status.ok()) {
      Record(&outcome, nullptr);
      const grpc::StatusCode code = status.code() == absl::StatusCode::kResourceExhausted
                                        ? grpc::StatusCode::RESOURCE_EXHAUSTED
                                        : grpc::StatusCode::INVALID_ARGUMENT;
      spdlog::warn("stream {} node \"{}\" ({}): closing: {}", id(), node_id(), peer(),
                   SafeForLog(status.message(), kMaxLoggedStatusBytes));
      RequestFinish(grpc::Status(code, std::string(status.message())), EndReasonOf(outcome.limit));
      return;
    }
    Record(&outcome, nullptr);
    if (!decided) Decide(&next);
    Act(next);
    // gRPC calls OnDone, which clears reactor_, only after this reaction: the
    // reactor the decision saw is still the stream's.
    next.reactor->StartRead(&read_buffer_);
  }

  void OnWriteDone(bool ok) {
    int64_t written = 0;
    absl::Time published;
    bool act = false;
    {
      absl::MutexLock lock(&mu_);
      published = std::exchange(write_published_, absl::InfiniteFuture());
      writing_ = false;
      write_started_ = absl::InfiniteFuture();
      WriteEnded();
      response_.Clear();  // Frees the response's bytes.
      written = std::exchange(response_bytes_, 0);
      if (ok) wrote_ = true;
      if (!ok) finish_requested_ = true;
      // Nothing to write or finish: decide nothing. Whatever makes a
      // response due later (a snapshot, a request, a finish) decides itself.
      act = finish_requested_ || state_.ResponseMayBeDue();
    }
    budget().Release(written);
    if (ok && published != absl::InfiniteFuture()) {
      observer().OnPushCompleted(absl::Now() - published);
    }
    if (act) TryWrite();
  }

  // Writes the stream's next response, if one is due, now that the response
  // memory budget allows it.
  void Resume() override {
    {
      absl::MutexLock lock(&mu_);
      waiting_for_budget_ = false;
    }
    TryWrite();
  }

  void OnDone() {
    {
      absl::MutexLock lock(&mu_);
      reactor_ = nullptr;
    }
    absl::MutexLock lock(&cancel_mu_);
    context_ = nullptr;
    // A cancel in progress on another thread still uses the context.
    cancel_mu_.Await(absl::Condition(
        +[](Core* core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core->cancel_mu_) {
          return core->canceller_ == std::thread::id() ||
                 core->canceller_ == std::this_thread::get_id();
        },
        this));
  }

  void Notify(const std::shared_ptr<const ServingSnapshot>& serving, uint64_t sequence,
              const WatchIndex::Wake& wake, absl::Time published) override {
    Next next;  // One critical section: take in the change and decide.
    {
      absl::MutexLock lock(&mu_);
      unwritten_since_ = std::min(unwritten_since_, published);
      if (sequence > sequence_) {
        state_.AdoptSnapshot(serving);
        sequence_ = sequence;
      }
      if (wake.all) {
        state_.MarkAllDirty();
      } else {
        const ChangeSet& changes = serving->snapshot().changes();
        for (const ResourceType* type : wake.types) {
          auto it = changes.by_type.find(type);
          if (it == changes.by_type.end()) continue;
          for (const auto* list : {&it->second.added, &it->second.changed, &it->second.removed}) {
            for (const std::string& name : *list) state_.MarkDirty(*type, name);
          }
        }
        for (const auto& [type, name] : wake.names) state_.MarkDirty(*type, *name);
      }
      DecideLocked(&next);
    }
    Act(next);
  }

  std::vector<std::tuple<std::string, std::string, std::string>> Holdings() const override {
    absl::MutexLock lock(&mu_);
    return state_.Holdings();
  }

  void Drain() override {
    RequestFinish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "xDS server is shutting down"),
                  StreamEndReason::kShutdown);
  }

  std::string node_id() const override {
    absl::MutexLock lock(&mu_);
    return node_id_;
  }

  int64_t EndSubscriptionMemory() override {
    absl::MutexLock lock(&mu_);
    return ReturnSubscriptionMemory();
  }

  void EndHeldAuthorities() override {
    absl::MutexLock lock(&mu_);
    ReportAuthoritiesLocked();
    for (const std::string& authority : state_.HeldAuthorities()) {
      observer().OnStreamsByAuthorityChange(authority, -1);
    }
  }

  std::vector<WatchChange> AllWatches() override {
    absl::MutexLock lock(&mu_);
    std::vector<WatchChange> out = state_.TakeWatchChanges();
    for (WatchChange& change : state_.Watches()) out.push_back(std::move(change));
    return out;
  }

  std::vector<DemandChange> EndDemand() override {
    absl::MutexLock lock(&mu_);
    std::vector<DemandChange> out = state_.TakeDemandChanges();
    for (DemandChange& change : state_.Demands()) {
      change.added = false;
      out.push_back(std::move(change));
    }
    return out;
  }

  void CancelIfStalled(absl::Time limit) override {
    std::string node;
    bool report = false;
    {
      absl::MutexLock lock(&mu_);
      if (!writing_ || write_started_ >= limit || stall_cancelled_) return;
      stall_cancelled_ = true;
      report = !std::exchange(end_decided_, true);
      node = node_id_;
    }
    grpc::CallbackServerContext* context;
    {
      absl::MutexLock lock(&cancel_mu_);
      if (context_ == nullptr) return;
      context = context_;
      canceller_ = std::this_thread::get_id();
    }
    if (report) observer().OnStreamEnding(StreamEndReason::kWriteStall);
    spdlog::warn(
        "stream {} node \"{}\" ({}): closing: a write has not completed within the "
        "write-stall timeout",
        id(), node, peer());
    // Outside every lock: gRPC may run this stream's reactions inline.
    context->TryCancel();
    absl::MutexLock lock(&cancel_mu_);
    canceller_ = std::thread::id();
  }

 private:
  enum class Action { kNone, kWrite, kFinish };

  // Ends the stream with `status` once no write is in flight. `reason`: why
  // the server ends it (none: the client did), reported unless the server
  // decided to end it before.
  void RequestFinish(grpc::Status status, std::optional<StreamEndReason> reason = std::nullopt) {
    bool report = false;
    {
      absl::MutexLock lock(&mu_);
      if (reason.has_value()) report = !std::exchange(end_decided_, true);
      if (!finish_requested_) {
        finish_requested_ = true;
        finish_status_ = std::move(status);
      }
    }
    if (report) observer().OnStreamEnding(*reason);
    TryWrite();
  }

  // What the stream does next, decided under its lock and done outside it.
  struct Next {
    Action action = Action::kNone;
    Reactor* reactor = nullptr;
    PushRecord record;
  };

  // At most one write in flight, and Finish only when no write is.
  void DecideLocked(Next* next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    next->reactor = reactor_;
    if (reactor_ == nullptr || finished_ || writing_) return;
    if (finish_requested_) {
      finished_ = true;
      next->action = Action::kFinish;
    } else if (waiting_for_budget_) {
      return;  // Resume() comes once the budget allows.
    } else if (!state_.ResponseMayBeDue()) {
      // Most decisions (after an ACK, after a write) find nothing to send:
      // no budget, no clock, no look at the state's types beyond this.
      unwritten_since_ = absl::InfiniteFuture();  // Every change published is written.
    } else if (!budget().Admit(*this, peer(), /*reader=*/wrote_)) {
      waiting_for_budget_ = true;
    } else {
      Plan& plan = ThreadPlan();
      next->record.with_items = DebugLogging();  // Only a debug log lists them.
      state_.set_now(absl::Now());  // When the client becomes stale, for /clients.
      const bool due = state_.NextResponse(&plan, &next->record);
      ReportAuthoritiesLocked();  // Even without a response: silent removals.
      if (!due) {
        ReleaseVariants(&plan);
        unwritten_since_ = absl::InfiniteFuture();  // Every change published is written.
        return;
      }
      write_published_ = unwritten_since_;
      {
        // Swapped in: ByteBuffer has no move, and a copy is another buffer.
        grpc::ByteBuffer encoded = Encode(plan);
        response_.Swap(&encoded);
      }
      ReleaseVariants(&plan);
      writing_ = true;
      write_started_ = absl::Now();
      WriteStarted(write_started_);
      response_bytes_ = static_cast<int64_t>(response_.Length());
      budget().Add(response_bytes_);
      next->action = Action::kWrite;
    }
  }

  // Reports the authorities the client came to hold a resource of, or no
  // longer holds one of (the gauge of streams by authority).
  void ReportAuthoritiesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [authority, change] : state_.TakeAuthorityChanges()) {
      observer().OnStreamsByAuthorityChange(authority, change);
    }
  }

  void Act(const Next& next) {
    switch (next.action) {
      case Action::kWrite:
        Record(nullptr, &next.record);
        next.reactor->StartWrite(&response_);
        break;
      case Action::kFinish:
        next.reactor->Finish(finish_status_);
        break;
      case Action::kNone:
        break;
    }
  }

  void TryWrite() {
    Next next;
    Decide(&next);
    Act(next);
  }

  // Decides into `next` what the stream does next; the caller acts on it.
  void Decide(Next* next) {
    absl::MutexLock lock(&mu_);
    DecideLocked(next);
  }

  // Laid out for the push walk: a change visits thousands of streams, each
  // one three times (the push, the write's completion, the ACK), and each
  // visit finds the stream out of the processor's caches. What the visits
  // read comes first, beside the lock, and the stream state's own hot part
  // follows it, so that a visit loads a few cache lines rather than every
  // line of the object (test/load/count_instructions.sh --cache-sim).
  mutable absl::Mutex mu_;
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool waiting_for_budget_ ABSL_GUARDED_BY(mu_) = false;
  bool wrote_ ABSL_GUARDED_BY(mu_) = false;  // A write has completed: the client reads.
  bool stall_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool end_decided_ ABSL_GUARDED_BY(mu_) = false;    // The server ends the stream (reported).
  bool node_id_taken_ ABSL_GUARDED_BY(mu_) = false;  // node_id_ is the node's.
  int64_t response_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // Of the write in flight.
  absl::Time write_started_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // When the oldest snapshot whose change the stream has not written yet
  // reached the server, and, for the write in flight, when the oldest one
  // it may carry did (InfiniteFuture: none), for OnPushCompleted.
  absl::Time unwritten_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time write_published_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  Reactor* reactor_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer read_buffer_;  // Owned by the pending read.
  grpc::ByteBuffer response_;     // Owned by the write in flight.
  std::shared_ptr<const Parameters> reported_uniform_ ABSL_GUARDED_BY(mu_);
  StreamState state_ ABSL_GUARDED_BY(mu_);
  DemandObserver* const demand_observer_;  // Null when none.
  std::string node_id_ ABSL_GUARDED_BY(mu_);  // Escaped and truncated for logs.
  grpc::Status finish_status_;                // Written before finished_ is set; read after.
  // The context is valid until OnDone; a stall cancel borrows it.
  absl::Mutex cancel_mu_;
  grpc::CallbackServerContext* context_ ABSL_GUARDED_BY(cancel_mu_);
  std::thread::id canceller_ ABSL_GUARDED_BY(cancel_mu_);
};

}  // namespace

template <typename Request, typename Plan>
class AdsService::Reactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Reactor(AdsService* service, Protocol protocol, grpc::CallbackServerContext* context)
      : service_(service) {
    auto core = std::make_shared<Core<Request, Plan>>(
        service, 0, context->peer(), protocol, service->options_.mapping,
        service->options_.stream_limits, service->options_.demand_observer, this, context);
    uint64_t sequence = 0;
    auto serving = service->Register(core, &sequence);
    if (serving == nullptr) {
      this->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "xDS server is shutting down"));
      return;
    }
    core_ = std::move(core);
    core_->Start(std::move(serving), sequence);
    spdlog::info("stream {} open: {} from {}", core_->id(),
                 protocol == Protocol::kSotw ? "SotW" : "delta", core_->peer());
    // gRPC runs this stream's reactions on its threads after this
    // constructor, ordered by synchronization ThreadSanitizer cannot see:
    // this release store and each reaction's acquire load say so.
    started_.store(core_.get(), std::memory_order_release);
    this->StartRead(core_->read_buffer());
  }

  void OnReadDone(bool ok) override { started()->OnReadDone(ok); }
  void OnWriteDone(bool ok) override { started()->OnWriteDone(ok); }
  void OnDone() override {
    int64_t freed = 0;
    AdsService* service = service_;
    if (started() != nullptr) {
      core_->OnDone();
      // Its authorities are released before the stream counts as closed, so
      // that whoever sees it closed sees them released.
      core_->EndHeldAuthorities();
      service_->Unregister(core_.get(), core_->AllWatches());
      freed = core_->EndSubscriptionMemory();
      if (DemandObserver* observer = service_->options_.demand_observer; observer != nullptr) {
        if (std::vector<DemandChange> ended = core_->EndDemand(); !ended.empty()) {
          observer->OnDemand(ended);
        }
      }
      spdlog::info("stream {} closed (node \"{}\", {})", core_->id(), core_->node_id(),
                   core_->peer());
    }
    delete this;  // And, mostly, the stream's state.
    service->ReturnFreedMemory(freed);
  }

 private:
  // Null when the stream was refused.
  Core<Request, Plan>* started() const { return started_.load(std::memory_order_acquire); }

  AdsService* service_;
  std::shared_ptr<Core<Request, Plan>> core_;
  std::atomic<Core<Request, Plan>*> started_{nullptr};  // core_.get(), once started.
};

AdsService::AdsService(SnapshotStore& store, Options options)
    : options_(std::move(options)),
      observer_(stats_, options_.observer),
      nack_log_(options_.max_nack_records, options_.max_error_detail_bytes, observer_),
      budget_(options_.response_memory_budget_bytes, observer_),
      subscriptions_(options_.max_subscription_memory_per_connection,
                     options_.max_subscription_memory, observer_),
      current_(std::make_shared<ServingSnapshot>(store.Current())),
      client_status_(std::make_unique<ClientStatusService>(*this, options_.csds_readers)) {
  push_walkers_ = std::make_unique<WalkPool>(PushWalkers(options_.push_walkers) - 1);
  watch_ = store.Watch(
      [this](std::shared_ptr<const Snapshot> snapshot) { OnSnapshot(std::move(snapshot)); });
  // Each pass looks at the writes in flight only: idle streams cost it nothing.
  if (options_.write_stall_timeout > absl::ZeroDuration()) {
    writes_in_flight_ = std::make_unique<WritesInFlight>();
    stall_check_ = std::make_unique<StallCheck>(
        options_.write_stall_timeout,
        [this](absl::Time limit) { writes_in_flight_->CancelStalled(limit); });
  }
}

AdsService::~AdsService() {
  // First stop hearing of snapshots: this waits for a delivery in progress
  // (OnSnapshot on a publisher's thread) before anything it uses is freed.
  watch_ = SnapshotStore::WatchHandle();
  stall_check_.reset();
  // The server is shut down before this, so every stream's callbacks have
  // run; gRPC says so through its own synchronization, though. What they
  // wrote under mu_ is taken under mu_ before it is freed, which orders the
  // two explicitly (and visibly to ThreadSanitizer).
  decltype(streams_) streams;
  WatchIndex index;
  absl::MutexLock lock(&mu_);
  streams.swap(streams_);
  std::swap(index, index_);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* AdsService::StreamAggregatedResources(
    grpc::CallbackServerContext* context) {
  return new Reactor<DiscoveryRequest, SotwResponse>(this, Protocol::kSotw, context);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* AdsService::DeltaAggregatedResources(
    grpc::CallbackServerContext* context) {
  return new Reactor<DeltaDiscoveryRequest, DeltaResponse>(this, Protocol::kDelta, context);
}

void AdsService::OnSnapshot(std::shared_ptr<const Snapshot> snapshot) {
  const absl::Time published = absl::Now();
  auto serving = std::make_shared<ServingSnapshot>(std::move(snapshot));
  const Snapshot& next = serving->snapshot();
  // Streams to wake, with what to re-examine.
  std::vector<std::pair<std::shared_ptr<StreamCore>, WatchIndex::Wake>> wakes;
  uint64_t sequence;
  bool all;
  size_t open;
  // Held until every woken stream has taken the change in: the last stream
  // to let go of it would otherwise free it (its share of thousands of
  // resources) in the middle of the pushes, or this under mu_ when no stream
  // held it.
  std::shared_ptr<const ServingSnapshot> previous;
  {
    absl::MutexLock lock(&mu_);
    previous = std::exchange(current_, serving);
    all = WatchIndex::WakesAll(*previous, *serving);
    sequence = ++sequence_;
    open = streams_.size();
    std::vector<std::pair<WatchIndex::StreamId, WatchIndex::Wake>> found =
        index_.Wakes(*previous, *serving);
    wakes.reserve(found.size());
    for (auto& [id, wake] : found) wakes.emplace_back(streams_.at(id), std::move(wake));
  }
  observer_.OnSnapshot(static_cast<int64_t>(wakes.size()));
  spdlog::info("snapshot {}: {} resources, {} changed, {} of {} streams to wake", next.version(),
               next.size(), all ? next.size() : next.changes().size(), wakes.size(), open);
  // A change that wakes many streams is pushed by several walkers at once,
  // each taking every n-th stream from the front (so that the streams first
  // in the list are the first pushed, whoever pushes them).
  const size_t min_per_walker = std::max<size_t>(options_.min_streams_per_walker, 1);
  const int walkers = static_cast<int>(std::min<size_t>(
      static_cast<size_t>(push_walkers_->walkers()), wakes.size() / min_per_walker));
  push_walkers_->Run(walkers, [&](int k, int n) {
    for (size_t i = static_cast<size_t>(k); i < wakes.size(); i += static_cast<size_t>(n)) {
      auto& [core, wake] = wakes[i];
      core->Notify(serving, sequence, wake, published);
      // Let go of the stream while its count is in cache: after the last
      // Notify, thousands of streams later, each release would miss.
      core.reset();
    }
  });
}

std::shared_ptr<const ServingSnapshot> AdsService::Register(const std::shared_ptr<StreamCore>& core,
                                                            uint64_t* sequence) {
  absl::MutexLock lock(&mu_);
  if (draining_) return nullptr;
  core->set_id(next_stream_id_++);
  streams_[core->id()] = core;
  index_.AddStream(core->id());
  observer_.OnStreamOpened();
  *sequence = sequence_;
  return current_;
}

std::shared_ptr<const ServingSnapshot> AdsService::UpdateWatches(
    StreamCore* core, const std::vector<WatchChange>& changes,
    std::shared_ptr<const Parameters> uniform_params, const std::vector<WatchChange>& watched,
    uint64_t* sequence) {
  absl::MutexLock lock(&mu_);
  index_.Update(core->id(), changes, std::move(uniform_params), watched);
  *sequence = sequence_;
  return current_;
}

void AdsService::Unregister(StreamCore* core, const std::vector<WatchChange>& watches) {
  absl::MutexLock lock(&mu_);
  index_.RemoveStream(core->id(), watches);
  if (streams_.erase(core->id()) > 0) observer_.OnStreamClosed();
}

void AdsService::ReturnFreedMemory(int64_t bytes) {
  // Rarely: malloc_trim walks the heap (milliseconds per gigabyte).
  constexpr int64_t kTrimAfterBytes = int64_t{64} << 20;
  if (bytes <= 0 || freed_since_trim_.fetch_add(bytes) + bytes < kTrimAfterBytes) return;
  freed_since_trim_.store(0);
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

std::vector<std::shared_ptr<AdsService::StreamCore>> AdsService::Cores() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<StreamCore>> cores;
  cores.reserve(streams_.size());
  for (const auto& [key, core] : streams_) cores.push_back(core);
  return cores;
}

void AdsService::Drain() {
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
  }
  for (const auto& core : Cores()) core->Drain();
}

void AdsService::RecordOutcome(const StreamCore& core, RequestOutcome& outcome) {
  if (outcome.limit != RequestOutcome::Limit::kNone) return;  // The stream ends for it.
  switch (outcome.kind) {
    case RequestOutcome::Kind::kAck:
      observer_.OnAck(outcome.type_url);
      if (DebugLogging()) {
        spdlog::debug("stream {} node \"{}\": ACK {} nonce {}", core.id(), core.node_id(),
                      ResourceTypeForLog(outcome.type_url), SafeForLog(outcome.nonce));
      }
      break;
    case RequestOutcome::Kind::kNack: {
      const NackLog::Detail detail = nack_log_.Add(std::string(outcome.type_url), outcome.nacked,
                                                   core.node_id(), outcome.error_detail);
      spdlog::warn("stream {} node \"{}\": NACK {} nonce {} [{}]: {}{}", core.id(), core.node_id(),
                   ResourceTypeForLog(outcome.type_url), SafeForLog(outcome.nonce),
                   DescribeItems(outcome.nacked), *detail.text,
                   detail.truncated ? absl::StrCat("...(", outcome.error_detail.size(), " bytes)")
                                    : std::string());
      // Counted once recorded: stats().nacks covers what nacks() shows.
      observer_.OnNack(outcome.type_url);
      break;
    }
    case RequestOutcome::Kind::kInitial:
    case RequestOutcome::Kind::kSubscriptionOnly:
      if (DebugLogging()) {
        spdlog::debug("stream {} node \"{}\": subscribe {}", core.id(), core.node_id(),
                      ResourceTypeForLog(outcome.type_url));
      }
      break;
    case RequestOutcome::Kind::kStale:
      if (DebugLogging()) {
        spdlog::debug("stream {}: stale nonce {} for {}", core.id(), SafeForLog(outcome.nonce),
                      ResourceTypeForLog(outcome.type_url));
      }
      break;
  }
}

void AdsService::RecordPush(const StreamCore& core, const PushRecord& record) {
  observer_.OnPush(record.type_url);
  // Items are listed only when the push was decided at debug level.
  if (!DebugLogging() || !record.with_items) return;
  spdlog::debug("stream {} node \"{}\": push {} version {} nonce {}: [{}]", core.id(),
                core.node_id(), ResourceTypeForLog(record.type_url), record.version_info,
                record.nonce, DescribeItems(record.items));
}

AdsStats AdsService::stats() const { return stats_.stats(); }

std::vector<NackRecord> AdsService::nacks() const { return nack_log_.Records(); }

std::map<std::string, int> AdsService::StreamsPerAuthority() const {
  return stats_.StreamsByAuthority();
}

grpc::Service& AdsService::client_status_service() { return *client_status_; }

std::shared_ptr<const Snapshot> AdsService::CurrentSnapshot() const {
  absl::MutexLock lock(&mu_);
  return current_->shared();
}

ClientStatusReport AdsService::ClientStatuses(const ClientStatusQuery& query) const {
  std::vector<std::shared_ptr<StreamCore>> cores = Cores();
  std::sort(cores.begin(), cores.end(),
            [](const auto& a, const auto& b) { return a->id() < b->id(); });
  ClientStatusReport report;
  size_t budget = query.max_bytes;
  for (const auto& core : cores) {
    if (core->id() <= query.after_stream_id) continue;
    ClientStatus client;
    bool fits = true;
    if (!core->Describe(query, &client, &budget, &fits)) continue;
    if (!fits) {
      ++report.omitted_clients;
      // A page ends here: the clients after it only count (none fits now).
      if (query.prefix_only) budget = 0;
      continue;
    }
    report.omitted_resources += client.omitted_resources;
    report.clients.push_back(std::move(client));
  }
  return report;
}

std::map<std::tuple<std::string, std::string, std::string>, int> AdsService::ClientsPerVariant()
    const {
  std::map<std::tuple<std::string, std::string, std::string>, int> counts;
  for (const auto& core : Cores()) {
    for (auto& holding : core->Holdings()) counts[holding]++;
  }
  return counts;
}

}  // namespace facet::xds
