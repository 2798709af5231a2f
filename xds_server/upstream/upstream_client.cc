#include "xds_server/upstream/upstream_client.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/backoff.h"
#include "xds_server/common/log_text.h"
#include "xds_server/names/names.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/resources/wire_check.h"

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::AggregatedDiscoveryService;
using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;
using ::envoy::service::discovery::v3::ResourceLocator;

// ACKs and NACKs kept per type while a write is in flight.
constexpr size_t kMaxQueuedAcks = 8;

// A subscription within one type: the name and its dynamic parameters.
using Locator = std::pair<std::string, ParameterSet>;

absl::Status ToAbsl(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

void SetLocator(const Locator& locator, ResourceLocator* out) {
  out->set_name(locator.first);
  for (const auto& [key, value] : locator.second) (*out->mutable_dynamic_parameters())[key] = value;
}

// Decodes one resource of a response of `type` into `update`. `any` is the
// resource as sent: the type itself, or a Resource wrapper of it. `wrapper`,
// when not null, is the delta Resource that carried `any`.
absl::Status DecodeResource(const ResourceType& type, const google::protobuf::Any& any,
                            const Resource* wrapper, const std::string& default_version, int index,
                            UpstreamUpdate* update) {
  const std::string where = absl::StrCat(type.type_name(), " resource [", index, "]");
  Resource unwrapped;
  if (wrapper == nullptr && any.type_url() == kResourceWrapperTypeUrl) {
    if (!unwrapped.ParseFromString(any.value())) {
      std::optional<EncodedProblem> problem =
          CheckEncodedMessage(*Resource::descriptor(), any.value());
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the Resource wrapper does not parse",
                       problem.has_value() ? absl::StrCat(" (", problem->ToString(), ")") : ""));
    }
    wrapper = &unwrapped;
  }
  const google::protobuf::Any& inner = wrapper != nullptr ? wrapper->resource() : any;
  if (wrapper != nullptr && !wrapper->has_resource()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": Resource has no resource"));
  }
  if (inner.type_url() != type.type_url()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": type ", SafeForLog(inner.type_url()),
                                                   " is not the response's ", type.type_url()));
  }
  // The bounds of a manifest's resource, and what every downstream client's
  // parser requires (UTF-8 strings), before the bytes are relayed.
  if (std::optional<EncodedProblem> problem = CheckEncodedResource(type, inner.value())) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", problem->ToString()));
  }
  std::unique_ptr<google::protobuf::Message> message = type.New();
  if (!message->ParseFromString(inner.value())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": bytes do not parse as ", type.type_name()));
  }
  UpstreamVariant variant;
  variant.version = default_version;
  if (wrapper != nullptr) {
    if (wrapper->has_resource_name()) {
      variant.name = wrapper->resource_name().name();
      absl::StatusOr<Constraint> constraints =
          Constraint::Compile(wrapper->resource_name().dynamic_parameter_constraints());
      if (!constraints.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " \"", SafeForLog(variant.name),
            "\": resource_name.dynamic_parameter_constraints: ", constraints.status().message()));
      }
      variant.constraints = *std::move(constraints);
    } else {
      variant.name = wrapper->name();
    }
    if (!wrapper->version().empty()) variant.version = wrapper->version();
  }
  if (variant.name.empty()) variant.name = type.GetName(*message);
  if (variant.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": has no name"));
  }
  variant.serialized = inner.value();
  update->variants.push_back(std::move(variant));
  return absl::OkStatus();
}

// Parses `buffer`, a response as read from the wire, into `response`. One
// that does not parse (a string field that is not UTF-8, malformed bytes) is
// not the end of the stream: `response` then holds only the type URL and
// nonce it carries, so that it can be NACKed, and the error names the field
// at fault. Sets `*answerable` to whether that type URL and nonce could be
// read (protobuf reads each as valid UTF-8 or not at all).
template <typename Response>
absl::Status ParseResponse(const grpc::ByteBuffer& buffer, Response* response, bool* answerable) {
  *answerable = true;
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (buffer.Dump(&slices).ok()) {
    bytes.reserve(buffer.Length());
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  if (response->ParseFromString(bytes)) return absl::OkStatus();
  response->Clear();
  google::protobuf::UnknownFieldSet fields;
  *answerable = fields.ParseFromString(bytes);
  for (int i = 0; *answerable && i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    const bool type_url = field.number() == Response::kTypeUrlFieldNumber;
    if (!type_url && field.number() != Response::kNonceFieldNumber) continue;
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        InvalidUtf8Offset(field.length_delimited()) != field.length_delimited().size()) {
      *answerable = false;
    } else if (type_url) {
      response->set_type_url(field.length_delimited());
    } else {
      response->set_nonce(field.length_delimited());
    }
  }
  std::optional<EncodedProblem> problem = CheckEncodedMessage(*Response::descriptor(), bytes);
  return absl::InvalidArgumentError(
      absl::StrCat(Response::descriptor()->name(), " does not parse",
                   problem.has_value() ? absl::StrCat(": ", problem->ToString()) : ""));
}

// Returns the served type a response's type URL names exactly.
absl::StatusOr<const ResourceType*> TypeOf(const std::string& type_url) {
  const ResourceType* type = FindResourceType(type_url);
  if (type == nullptr || type->type_url() != type_url) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported resource type ", SafeForLog(type_url)));
  }
  return type;
}

absl::Status Decode(const DeltaDiscoveryResponse& response, UpstreamUpdate* update) {
  update->type_url = response.type_url();
  absl::StatusOr<const ResourceType*> type = TypeOf(response.type_url());
  if (!type.ok()) return type.status();
  for (int i = 0; i < response.resources_size(); ++i) {
    const Resource& resource = response.resources(i);
    if (absl::Status status = DecodeResource(**type, resource.resource(), &resource, "", i, update);
        !status.ok()) {
      return status;
    }
  }
  for (const std::string& name : response.removed_resources()) {
    update->removals.push_back({name, Constraint::Unconstrained()});
  }
  for (const auto& removed : response.removed_resource_names()) {
    absl::StatusOr<Constraint> constraints =
        Constraint::Compile(removed.dynamic_parameter_constraints());
    if (!constraints.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat((*type)->type_name(), " removed_resource_names \"", SafeForLog(removed.name()),
                       "\": dynamic_parameter_constraints: ", constraints.status().message()));
    }
    update->removals.push_back({removed.name(), *std::move(constraints)});
  }
  return absl::OkStatus();
}

absl::Status Decode(const DiscoveryResponse& response, UpstreamUpdate* update) {
  update->type_url = response.type_url();
  absl::StatusOr<const ResourceType*> type = TypeOf(response.type_url());
  if (!type.ok()) return type.status();
  update->full_state = (*type)->full_state();
  for (int i = 0; i < response.resources_size(); ++i) {
    if (absl::Status status = DecodeResource(**type, response.resources(i), nullptr,
                                             response.version_info(), i, update);
        !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace

// The client's state. Reactors point to it; Shutdown waits until every
// reactor is destroyed, so the core (and with it the channels, whose last
// reference must not be dropped on a gRPC callback thread) goes on the
// thread that destroys the client. Thread-safe.
class UpstreamClient::Core {
 public:
  Core(std::vector<UpstreamServer> servers, Options options, Listener& listener);

  // Starts the timer thread. Called once, after construction.
  void Start();
  // Cancels the stream, waits for it to end and joins the timer thread. No
  // listener call starts after it returns.
  void Shutdown();

  void Subscribe(const UpstreamSubscription& subscription);
  void Unsubscribe(const UpstreamSubscription& subscription);
  UpstreamClientStats stats() const;
  const std::vector<UpstreamServer>& servers() const { return servers_; }

  // What the stream reactors call. `id` names the stream; `buffer` is a
  // Response as read from the wire.
  template <typename Response>
  void OnResponse(uint64_t id, const grpc::ByteBuffer& buffer);
  // Fills the next request of stream `id`, if one is due and no write is in
  // flight; marks the write in flight.
  template <typename Request>
  bool TakeRequest(uint64_t id, Request* request);
  // A write completed. Returns whether the reactor may release its hold (the
  // stream's reads have ended and no write is in flight).
  bool OnWriteDone(uint64_t id, bool ok);
  // Reads ended. Same return as OnWriteDone.
  bool OnReadsEnded(uint64_t id);
  void OnStreamDone(uint64_t id, const grpc::Status& status);
  // A reactor's last act: after it, the reactor no longer touches the core.
  void OnReactorDestroyed();

 private:
  // Implemented by the reactor template below.
  class Stream {
   public:
    virtual ~Stream() = default;
    virtual void Begin(const std::shared_ptr<grpc::Channel>& channel) = 0;
    virtual void Cancel() = 0;
    virtual void Pump() = 0;
  };
  template <typename Request, typename Response>
  class Reactor;

  struct Ack {
    std::string nonce;
    std::string version;  // SotW: the version_info to send with it.
    std::string error;    // Non-empty for a NACK.
  };
  // Per type, what the open stream still has to send.
  struct TypeStream {
    bool sent = false;  // A request of this type went out on this stream.
    // Delta: locator changes not yet sent.
    std::set<Locator> to_subscribe;
    std::set<Locator> to_unsubscribe;
    // SotW: the locator list changed since the last request.
    bool dirty = false;
    std::string accepted_version;
    std::string last_nonce;
    std::deque<Ack> acks;
  };

  void RunTimers();
  // Opens a stream to server_ (or records why it cannot) and returns it.
  std::shared_ptr<Stream> StartStreamLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the call and its first writes; without the lock, and drops
  // `stream` (possibly the last reference) without it too.
  void Open(std::shared_ptr<Stream> stream, std::shared_ptr<grpc::Channel> channel)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records the end of the current stream and schedules the next one.
  void EndStreamLocked(bool got_response, bool timed_out, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Returns server `index`'s channel, or null when its credentials are
  // unsupported.
  std::shared_ptr<grpc::Channel> ChannelLocked(int index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pops the next ACK/NACK of a type.
  static Ack PopAck(TypeStream& ts);
  bool FillLocked(DeltaDiscoveryRequest* request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool FillLocked(DiscoveryRequest* request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PumpCurrent();
  bool Current(uint64_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stream_ != nullptr && stream_id_ == id;
  }

  const std::vector<UpstreamServer> servers_;
  const Options options_;
  Listener& listener_;
  envoy::config::core::v3::Node node_;  // options_.node plus the client features.

  // Serializes listener calls; never held with mu_.
  absl::Mutex deliver_mu_;

  mutable absl::Mutex mu_;
  absl::CondVar wake_;  // The timer thread's.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::set<Locator>> subscriptions_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
  // The open stream (one at a time) and its state.
  std::shared_ptr<Stream> stream_ ABSL_GUARDED_BY(mu_);
  int live_reactors_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stream_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // Begin() has bound the call.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool got_response_ ABSL_GUARDED_BY(mu_) = false;
  bool timed_out_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time failover_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::map<std::string, TypeStream> types_ ABSL_GUARDED_BY(mu_);
  // Between streams: when the next may start (InfiniteFuture: not wanted
  // yet), and whether the last one's OnDisconnected is still being delivered.
  int server_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time next_start_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  // gRPC's connection backoff from options_.initial_backoff to max_backoff.
  ConnectionBackoff backoff_ ABSL_GUARDED_BY(mu_);
  UpstreamClientStats stats_ ABSL_GUARDED_BY(mu_);

  std::thread timer_thread_;
};

template <typename Request, typename Response>
class UpstreamClient::Core::Reactor final
    : public grpc::ClientBidiReactor<Request, grpc::ByteBuffer>,
      public Core::Stream {
 public:
  Reactor(Core* core, uint64_t id) : count_{core}, id_(id) {
    // gRPC runs the reactions on its threads after this constructor (run on
    // the timer thread), ordered by synchronization ThreadSanitizer cannot
    // see: this release store and each reaction's acquire load say so.
    core_.store(core, std::memory_order_release);
  }

  void Begin(const std::shared_ptr<grpc::Channel>& channel) override {
    // Responses are read as bytes and parsed by the core: one that does not
    // parse as a generated message would end the reads (gRPC reports it as
    // the end of the stream, with the call still open) and leave it unanswered.
    static const std::string* const kMethod = new std::string(
        absl::StrCat("/", AggregatedDiscoveryService::service_full_name(), "/",
                     std::is_same_v<Request, DeltaDiscoveryRequest> ? "DeltaAggregatedResources"
                                                                    : "StreamAggregatedResources"));
    grpc::TemplatedGenericStub<Request, grpc::ByteBuffer> stub(channel);
    stub.PrepareBidiStreamingCall(&context_, *kMethod, grpc::StubOptions(), this);
    // Held until reads have ended and no write is in flight, so that writes
    // started from other threads never race OnDone.
    this->AddHold();
    this->StartRead(&response_);
    this->StartCall();
  }

  void Cancel() override { context_.TryCancel(); }

  void Pump() override {
    if (!core()->TakeRequest(id_, &request_)) return;
    this->StartWrite(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (core()->OnReadsEnded(id_)) this->RemoveHold();
      return;
    }
    core()->template OnResponse<Response>(id_, response_);
    response_.Clear();
    this->StartRead(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (core()->OnWriteDone(id_, ok)) {
      this->RemoveHold();
      return;
    }
    Pump();
  }

  // May destroy this reactor (the core drops its reference).
  void OnDone(const grpc::Status& status) override { core()->OnStreamDone(id_, status); }

 private:
  // Declared first, so destroyed last: tells the core once the context (and
  // its channel reference) is gone.
  struct Count {
    Core* core;
    ~Count() { core->OnReactorDestroyed(); }
  };

  Core* core() const { return core_.load(std::memory_order_acquire); }

  Count count_;
  std::atomic<Core*> core_{nullptr};  // Stored last by the constructor.
  const uint64_t id_;
  grpc::ClientContext context_;
  Request request_;            // The write in flight.
  grpc::ByteBuffer response_;  // The read in flight, a Response.
};

UpstreamClient::Core::Core(std::vector<UpstreamServer> servers, Options options, Listener& listener)
    : servers_(std::move(servers)),
      options_(std::move(options)),
      listener_(listener),
      node_(options_.node),
      channels_(servers_.size()),
      backoff_({.initial = options_.initial_backoff, .max = options_.max_backoff}) {
  if (servers_.empty()) spdlog::error("upstream client has no servers: nothing will connect");
  const auto& features = node_.client_features();
  if (std::find(features.begin(), features.end(), kResourceInSotwFeature) == features.end()) {
    node_.add_client_features(kResourceInSotwFeature);
  }
}

void UpstreamClient::Core::Start() {
  timer_thread_ = std::thread([this] { RunTimers(); });
}

void UpstreamClient::Core::Shutdown() {
  std::shared_ptr<Stream> stream;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    stream = stream_;
    wake_.SignalAll();
  }
  if (stream != nullptr) stream->Cancel();
  stream.reset();  // The wait below is for the reactor's destruction.
  if (timer_thread_.joinable()) timer_thread_.join();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](Core* core) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core->mu_) {
        return core->stream_ == nullptr && !core->ending_ && core->live_reactors_ == 0;
      },
      this));
}

void UpstreamClient::Core::Open(std::shared_ptr<Stream> stream,
                                std::shared_ptr<grpc::Channel> channel) {
  stream->Begin(channel);
  {
    absl::MutexLock lock(&mu_);
    if (stream_ == stream) started_ = true;
  }
  stream->Pump();
}

void UpstreamClient::Core::RunTimers() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time now = absl::Now();
    const bool wanted =
        stream_ == nullptr && !ending_ && !subscriptions_.empty() && !servers_.empty();
    if (wanted && now >= next_start_) {
      next_start_ = absl::InfiniteFuture();
      std::shared_ptr<Stream> stream = StartStreamLocked();
      if (stream == nullptr) continue;
      std::shared_ptr<grpc::Channel> channel = channels_[server_];
      mu_.Unlock();
      Open(std::move(stream), std::move(channel));
      mu_.Lock();
      continue;
    }
    if (stream_ != nullptr && !got_response_ && !timed_out_ && now >= failover_deadline_) {
      timed_out_ = true;
      std::shared_ptr<Stream> stream = stream_;
      spdlog::warn("upstream {}: no response within {}; trying the next server",
                   servers_[server_].server_uri, absl::FormatDuration(options_.failover_timeout));
      mu_.Unlock();
      stream->Cancel();
      stream.reset();  // Never the last reference under the lock.
      mu_.Lock();
      continue;
    }
    absl::Time deadline = absl::InfiniteFuture();
    if (wanted) deadline = next_start_;
    if (stream_ != nullptr && !got_response_ && !timed_out_) deadline = failover_deadline_;
    wake_.WaitWithDeadline(&mu_, deadline);
  }
}

std::shared_ptr<grpc::Channel> UpstreamClient::Core::ChannelLocked(int index) {
  if (channels_[index] != nullptr) return channels_[index];
  const UpstreamServer& server = servers_[index];
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (server.channel_creds == "insecure") {
    credentials = grpc::InsecureChannelCredentials();
  } else if (server.channel_creds == "tls" && server.tls_ca_certificate_file.empty() &&
             server.tls_certificate_file.empty()) {
    credentials = grpc::SslCredentials(grpc::SslCredentialsOptions());
  } else if (server.channel_creds == "tls") {
    // gRFC A65's files, re-read every second (gRPC's minimum) when they
    // change; without a CA file gRPC uses the system roots.
    grpc::experimental::TlsChannelCredentialsOptions tls;
    tls.set_certificate_provider(
        std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            server.tls_private_key_file, server.tls_certificate_file,
            server.tls_ca_certificate_file, /*refresh_interval_sec=*/1));
    if (!server.tls_ca_certificate_file.empty()) tls.watch_root_certs();
    if (!server.tls_certificate_file.empty()) tls.watch_identity_key_cert_pairs();
    credentials = grpc::experimental::TlsCredentials(tls);
  } else {
    return nullptr;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_receive_bytes);
  // gRPC's own reconnection backoff follows ours, so a channel is ready
  // again soon after its server is.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options_.initial_backoff)));
  // Despite its name, C-core takes this as the least time one connection
  // attempt gets (TCP, TLS and HTTP/2 handshakes, up to the server's
  // SETTINGS): as long as a server may take to answer, so that a loaded or
  // distant server is not given up (and failed over from) after 100 ms.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options_.failover_timeout)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options_.max_backoff)));
  channels_[index] = grpc::CreateCustomChannel(server.server_uri, credentials, args);
  return channels_[index];
}

std::shared_ptr<UpstreamClient::Core::Stream> UpstreamClient::Core::StartStreamLocked() {
  ++stats_.streams_started;
  if (stats_.streams_started > 1) ++stats_.reconnects;
  if (ChannelLocked(server_) == nullptr) {
    spdlog::error("upstream {}: unsupported channel_creds \"{}\" (insecure or tls)",
                  servers_[server_].server_uri, servers_[server_].channel_creds);
    EndStreamLocked(/*got_response=*/false, /*timed_out=*/false,
                    absl::InvalidArgumentError("unsupported channel_creds"));
    return nullptr;
  }
  ++stream_id_;
  if (options_.protocol == Protocol::kDelta) {
    stream_ =
        std::make_shared<Reactor<DeltaDiscoveryRequest, DeltaDiscoveryResponse>>(this, stream_id_);
  } else {
    stream_ = std::make_shared<Reactor<DiscoveryRequest, DiscoveryResponse>>(this, stream_id_);
  }
  ++live_reactors_;
  started_ = writing_ = write_failed_ = reads_ended_ = hold_released_ = false;
  got_response_ = timed_out_ = false;
  failover_deadline_ = absl::Now() + options_.failover_timeout;
  stats_.server_index = server_;
  // Every subscription is sent again on a new stream, as if for the first
  // time (no versions claimed), so the server answers each one.
  types_.clear();
  for (const auto& [type_url, locators] : subscriptions_) {
    if (locators.empty()) continue;
    TypeStream& ts = types_[type_url];
    ts.to_subscribe = locators;
    ts.dirty = true;
  }
  return stream_;
}

void UpstreamClient::Core::EndStreamLocked(bool got_response, bool timed_out,
                                           const absl::Status& status) {
  const int ended = server_;
  const int n = static_cast<int>(servers_.size());
  if (got_response) {
    // A healthy stream ended: the same server once more, soon.
    backoff_.Reset();
  } else {
    server_ = (server_ + 1) % n;
    if (server_ != ended) ++stats_.failovers;
  }
  const absl::Duration delay = backoff_.Next();
  spdlog::info("upstream {}: stream ended{} ({}); next stream to {} in {}",
               servers_[ended].server_uri,
               got_response ? "" : (timed_out ? " unanswered" : " before any response"),
               SafeForLog(status.ToString(), kMaxLoggedStatusBytes), servers_[server_].server_uri,
               absl::FormatDuration(delay));
  next_start_ = absl::Now() + delay;
  stats_.connected = false;
  stats_.server_index = -1;
  wake_.Signal();
}

void UpstreamClient::Core::OnReactorDestroyed() {
  absl::MutexLock lock(&mu_);
  --live_reactors_;
}

void UpstreamClient::Core::OnStreamDone(uint64_t id, const grpc::Status& status) {
  // Destroyed last, outside the lock; this may be the reactor calling.
  std::shared_ptr<Stream> ended;
  const absl::Status result = ToAbsl(status);
  bool connected = false;
  int server = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!Current(id)) return;
    connected = got_response_ && !stopping_;  // No listener calls once shutting down.
    server = server_;
    ended = std::move(stream_);
    ending_ = true;
    EndStreamLocked(got_response_, timed_out_, result);
  }
  if (connected) {
    absl::MutexLock deliver(&deliver_mu_);
    listener_.OnDisconnected(server, result);
  }
  absl::MutexLock lock(&mu_);
  ending_ = false;
  wake_.Signal();
}

template <typename Response>
void UpstreamClient::Core::OnResponse(uint64_t id, const grpc::ByteBuffer& buffer) {
  Response response;
  bool answerable = true;
  absl::Status result = ParseResponse(buffer, &response, &answerable);
  UpstreamUpdate update;
  if (result.ok()) result = Decode(response, &update);
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    if (!Current(id)) return;
    first = !got_response_;
    got_response_ = true;
    failover_deadline_ = absl::InfiniteFuture();
    stats_.connected = true;
    ++stats_.responses;
    update.server_index = server_;
    if (stopping_) return;
  }
  if (response.type_url().empty() || !answerable) {
    // Nothing to NACK it with; the stream goes on.
    spdlog::warn(
        "upstream {}: ignoring a response without a readable type_url and nonce{}",
        servers_[update.server_index].server_uri,
        result.ok() ? "" : absl::StrCat(": ", SafeForLog(result.message(), kMaxLoggedStatusBytes)));
    return;
  }
  {
    absl::MutexLock deliver(&deliver_mu_);
    if (first) listener_.OnConnected(update.server_index);
    if (result.ok()) result = listener_.OnUpdate(update);
  }
  if (!result.ok()) {
    spdlog::warn("upstream {}: NACK {} nonce {}: {}", servers_[update.server_index].server_uri,
                 SafeForLog(response.type_url()), SafeForLog(response.nonce()),
                 SafeForLog(result.ToString(), kMaxLoggedStatusBytes));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!Current(id)) return;
    TypeStream& ts = types_[response.type_url()];
    Ack ack;
    ack.nonce = response.nonce();
    if constexpr (std::is_same_v<Response, DiscoveryResponse>) {
      if (result.ok()) ts.accepted_version = response.version_info();
      ack.version = ts.accepted_version;
      ts.last_nonce = response.nonce();
    }
    if (!result.ok()) {
      ack.error = std::string(result.message());
      if (ack.error.empty()) ack.error = result.ToString();
      ++stats_.nacks_sent;
    }
    // Bounded while writes are slow: an ACK replaces an ACK queued last, and
    // beyond kMaxQueuedAcks the oldest goes (the server would find its nonce
    // stale anyway).
    if (!ts.acks.empty() && ts.acks.back().error.empty() && ack.error.empty()) {
      ts.acks.back() = std::move(ack);
    } else {
      ts.acks.push_back(std::move(ack));
      if (ts.acks.size() > kMaxQueuedAcks) ts.acks.pop_front();
    }
  }
  PumpCurrent();
}

UpstreamClient::Core::Ack UpstreamClient::Core::PopAck(TypeStream& ts) {
  Ack ack = std::move(ts.acks.front());
  ts.acks.pop_front();
  return ack;
}

namespace {
void SetError(const std::string& error, google::rpc::Status* status) {
  status->set_code(static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  status->set_message(error);
}
}  // namespace

bool UpstreamClient::Core::FillLocked(DeltaDiscoveryRequest* request) {
  for (auto& [type_url, ts] : types_) {
    if (!ts.sent && ts.to_subscribe.empty()) {
      // Never requested (an unsolicited response): no ACK, which would
      // subscribe listeners and clusters to everything.
      ts.acks.clear();
      ts.to_unsubscribe.clear();
      continue;
    }
    if (ts.acks.empty() && ts.to_unsubscribe.empty() && ts.to_subscribe.empty()) continue;
    request->Clear();
    request->set_type_url(type_url);
    if (!ts.sent) *request->mutable_node() = node_;
    if (!ts.acks.empty()) {
      Ack ack = PopAck(ts);
      request->set_response_nonce(ack.nonce);
      if (!ack.error.empty()) SetError(ack.error, request->mutable_error_detail());
    }
    for (const Locator& locator : ts.to_subscribe) {
      SetLocator(locator, request->add_resource_locators_subscribe());
    }
    for (const Locator& locator : ts.to_unsubscribe) {
      SetLocator(locator, request->add_resource_locators_unsubscribe());
    }
    ts.to_subscribe.clear();
    ts.to_unsubscribe.clear();
    ts.sent = true;
    return true;
  }
  return false;
}

bool UpstreamClient::Core::FillLocked(DiscoveryRequest* request) {
  for (auto& [type_url, ts] : types_) {
    if (ts.acks.empty() && !ts.dirty) continue;
    auto subscribed = subscriptions_.find(type_url);
    const bool any = subscribed != subscriptions_.end() && !subscribed->second.empty();
    if (!ts.sent && !any) {
      // Never ask for nothing first, nor ACK an unsolicited response: for
      // listeners and clusters that is a wildcard subscription.
      ts.dirty = false;
      ts.acks.clear();
      continue;
    }
    request->Clear();
    request->set_type_url(type_url);
    if (!ts.sent) *request->mutable_node() = node_;
    if (!ts.acks.empty()) {
      Ack ack = PopAck(ts);
      request->set_version_info(ack.version);
      request->set_response_nonce(ack.nonce);
      if (!ack.error.empty()) SetError(ack.error, request->mutable_error_detail());
    } else {
      request->set_version_info(ts.accepted_version);
      request->set_response_nonce(ts.last_nonce);
    }
    if (any) {
      for (const Locator& locator : subscribed->second) {
        SetLocator(locator, request->add_resource_locators());
      }
    }
    ts.dirty = false;
    ts.sent = true;
    return true;
  }
  return false;
}

template <typename Request>
bool UpstreamClient::Core::TakeRequest(uint64_t id, Request* request) {
  absl::MutexLock lock(&mu_);
  if (!Current(id) || !started_ || writing_ || write_failed_ || reads_ended_) return false;
  if (!FillLocked(request)) return false;
  writing_ = true;
  ++stats_.requests_sent;
  return true;
}

bool UpstreamClient::Core::OnWriteDone(uint64_t id, bool ok) {
  absl::MutexLock lock(&mu_);
  if (stream_id_ != id) return false;
  writing_ = false;
  // A failed write means the call is over (its reads end too): no more.
  if (!ok) write_failed_ = true;
  if (reads_ended_ && !hold_released_) {
    hold_released_ = true;
    return true;
  }
  return false;
}

bool UpstreamClient::Core::OnReadsEnded(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (stream_id_ != id) return true;
  reads_ended_ = true;
  if (!writing_ && !hold_released_) {
    hold_released_ = true;
    return true;
  }
  return false;
}

void UpstreamClient::Core::PumpCurrent() {
  std::shared_ptr<Stream> stream;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || writing_ || write_failed_ || reads_ended_) return;
    stream = stream_;
  }
  if (stream != nullptr) stream->Pump();
}

void UpstreamClient::Core::Subscribe(const UpstreamSubscription& subscription) {
  {
    absl::MutexLock lock(&mu_);
    Locator locator{subscription.name, subscription.params};
    if (!subscriptions_[subscription.type_url].insert(locator).second) return;
    ++stats_.subscriptions;
    if (stream_ != nullptr) {
      TypeStream& ts = types_[subscription.type_url];
      // Subscribed on the server still, if the unsubscribe was not sent.
      if (ts.to_unsubscribe.erase(locator) == 0) ts.to_subscribe.insert(std::move(locator));
      ts.dirty = true;
    } else {
      // The first stream opens with the first subscription (and a stream
      // not reopened for want of subscriptions, with the next one).
      if (next_start_ == absl::InfiniteFuture()) next_start_ = absl::Now();
      wake_.Signal();
    }
  }
  PumpCurrent();
}

void UpstreamClient::Core::Unsubscribe(const UpstreamSubscription& subscription) {
  {
    absl::MutexLock lock(&mu_);
    auto it = subscriptions_.find(subscription.type_url);
    Locator locator{subscription.name, subscription.params};
    if (it == subscriptions_.end() || it->second.erase(locator) == 0) return;
    --stats_.subscriptions;
    if (it->second.empty()) subscriptions_.erase(it);
    if (stream_ != nullptr) {
      TypeStream& ts = types_[subscription.type_url];
      // Never sent: nothing to withdraw.
      if (ts.to_subscribe.erase(locator) == 0) ts.to_unsubscribe.insert(std::move(locator));
      ts.dirty = true;
    }
  }
  PumpCurrent();
}

UpstreamClientStats UpstreamClient::Core::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

UpstreamClient::UpstreamClient(std::vector<UpstreamServer> servers, Options options,
                               Listener& listener)
    : core_(std::make_shared<Core>(std::move(servers), std::move(options), listener)) {
  core_->Start();
}

UpstreamClient::~UpstreamClient() { core_->Shutdown(); }

void UpstreamClient::Subscribe(const UpstreamSubscription& subscription) {
  core_->Subscribe(subscription);
}

void UpstreamClient::Unsubscribe(const UpstreamSubscription& subscription) {
  core_->Unsubscribe(subscription);
}

UpstreamClientStats UpstreamClient::stats() const { return core_->stats(); }

const std::vector<UpstreamServer>& UpstreamClient::servers() const { return core_->servers(); }

}  // namespace facet::xds
