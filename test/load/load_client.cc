#include "test/load/load_client.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace facet::load {
namespace {

using ::envoy::service::discovery::v3::AggregatedDiscoveryService;
using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::google::protobuf::internal::WireFormatLite;

constexpr absl::string_view kResourceWrapperType =
    "type.googleapis.com/envoy.service.discovery.v3.Resource";

// Returns field 1 (the name of a Listener, RouteConfiguration or Cluster, the
// cluster_name of a ClusterLoadAssignment) of a serialized message, without
// parsing the rest.
std::string FirstFieldString(const std::string& bytes) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  while (uint32_t tag = input.ReadTag()) {
    if (tag == WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      uint32_t length = 0;
      std::string name;
      if (!input.ReadVarint32(&length) || !input.ReadString(&name, static_cast<int>(length))) {
        return "";
      }
      return name;
    }
    if (!WireFormatLite::SkipField(&input, tag)) break;
  }
  return "";
}

// Returns the name a client files `resource` under: a Resource wrapper's
// resource_name.name or name, else the inner message's own name.
std::string ResourceName(const google::protobuf::Any& resource) {
  if (resource.type_url() != kResourceWrapperType) return FirstFieldString(resource.value());
  envoy::service::discovery::v3::Resource wrapper;
  if (!wrapper.ParseFromString(resource.value())) return "";
  return wrapper.has_resource_name() ? wrapper.resource_name().name() : wrapper.name();
}

size_t Fingerprint(std::string_view bytes) { return std::hash<std::string_view>()(bytes); }

envoy::config::core::v3::Node MakeNode(int index, const StreamPlan& plan,
                                       const LoadOptions& options) {
  envoy::config::core::v3::Node node;
  node.set_id(absl::StrCat("facet-load-", index));
  node.mutable_locality();
  node.set_user_agent_name("facet-load");
  // What gRPC C++ 1.51 advertises (grpc-js: neither).
  node.add_client_features("envoy.lb.does_not_support_overprovisioning");
  if (options.resource_in_sotw) node.add_client_features("xds.config.resource-in-sotw");
  if (!options.locators) {
    auto& fields = *node.mutable_metadata()->mutable_fields();
    for (const auto& [key, value] : plan.params) fields[key].set_string_value(value);
  }
  return node;
}

template <typename Locators>
void AddLocators(const std::vector<std::string>& names, const StreamPlan& plan,
                 Locators& locators) {
  for (const std::string& name : names) {
    auto* locator = locators.Add();
    locator->set_name(name);
    locator->mutable_dynamic_parameters()->insert(plan.params.begin(), plan.params.end());
  }
}

// Returns the subscription requests of one stream, the first with the node.
std::vector<DiscoveryRequest> SotwRequests(const LoadOptions& options, int index,
                                           const StreamPlan& plan) {
  std::vector<DiscoveryRequest> requests;
  for (const Subscription& subscription : options.subscriptions) {
    DiscoveryRequest& request = requests.emplace_back();
    request.set_type_url(subscription.type_url);
    if (options.locators && !subscription.names.empty()) {
      AddLocators(subscription.names, plan, *request.mutable_resource_locators());
    } else {
      for (const std::string& name : subscription.names) request.add_resource_names(name);
    }
  }
  *requests.front().mutable_node() = MakeNode(index, plan, options);
  return requests;
}

std::vector<DeltaDiscoveryRequest> DeltaRequests(const LoadOptions& options, int index,
                                                 const StreamPlan& plan) {
  std::vector<DeltaDiscoveryRequest> requests;
  for (const Subscription& subscription : options.subscriptions) {
    DeltaDiscoveryRequest& request = requests.emplace_back();
    request.set_type_url(subscription.type_url);
    if (subscription.names.empty()) {
      request.add_resource_names_subscribe("*");
    } else if (options.locators) {
      AddLocators(subscription.names, plan, *request.mutable_resource_locators_subscribe());
    } else {
      for (const std::string& name : subscription.names) request.add_resource_names_subscribe(name);
    }
  }
  *requests.front().mutable_node() = MakeNode(index, plan, options);
  return requests;
}

}  // namespace

// What LoadClient reads of a stream, whatever its protocol.
class LoadClient::Stream {
 public:
  virtual ~Stream() = default;
  virtual void Start(AggregatedDiscoveryService::Stub& stub) = 0;
  virtual void Cancel() = 0;
  // When the watched resource arrived in its (change+1)-th new version
  // (change 0 is the first version after the one it synced with), if it has.
  virtual std::optional<absl::Time> arrival(int change) const = 0;
  // Responses that carried the watched resource after the first one.
  virtual int watched_pushes() const = 0;
};

// One ADS stream. Reads run one at a time (each StartRead follows the previous
// OnReadDone); writes are queued with one in flight.
template <typename Request, typename Response>
class LoadClient::Reactor final : public LoadClient::Stream,
                                  public grpc::ClientBidiReactor<Request, Response> {
 public:
  static constexpr bool kDelta = std::is_same_v<Request, DeltaDiscoveryRequest>;

  Reactor(LoadClient& client, int index, int generation, std::vector<Request> subscriptions)
      : client_(client),
        index_(index),
        generation_(generation),
        expects_edit_(client.plans_[index].expects_edit),
        subscriptions_(std::move(subscriptions)),
        answered_(subscriptions_.size(), false) {}

  void Start(AggregatedDiscoveryService::Stub& stub) override {
    if constexpr (kDelta) {
      stub.async()->DeltaAggregatedResources(&context_, this);
    } else {
      stub.async()->StreamAggregatedResources(&context_, this);
    }
    for (const Request& request : subscriptions_) Send(request);
    // Later requests carry no node, as gRPC's.
    for (Request& request : subscriptions_) request.clear_node();
    this->StartRead(&response_);
    this->StartCall();
  }

  void Cancel() override { context_.TryCancel(); }

  std::optional<absl::Time> arrival(int change) const override {
    absl::MutexLock lock(&mu_);
    if (change < 0 || change >= static_cast<int>(arrivals_.size())) return std::nullopt;
    return arrivals_[change];
  }

  int watched_pushes() const override {
    absl::MutexLock lock(&mu_);
    return watched_pushes_;
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows with the status.
    const absl::Time now = absl::Now();
    responded_ = true;
    const int subscription = SubscriptionOf(response_.type_url());
    if (subscription >= 0 && !answered_[subscription]) {
      answered_[subscription] = true;
      if (++answered_count_ == static_cast<int>(answered_.size())) {
        client_.OnSynced(index_, generation_);
      }
    }
    if (response_.type_url() == client_.options_.watched_type_url) CheckWatched(now);
    if (subscription >= 0) Send(Ack(subscription));
    this->StartRead(&response_);
  }

  void OnWriteDone(bool ok) override {
    const Request* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      pending_.pop_front();
      if (!ok) pending_.clear();  // The stream is broken; OnDone follows.
      if (pending_.empty()) {
        writing_ = false;
      } else {
        next = &pending_.front();
      }
    }
    if (next != nullptr) this->StartWrite(next);
  }

  // After every other callback, so responded_ is read safely.
  void OnDone(const grpc::Status& status) override { client_.OnDone(index_, status, responded_); }

 private:
  int SubscriptionOf(const std::string& type_url) const {
    for (size_t i = 0; i < subscriptions_.size(); ++i) {
      if (subscriptions_[i].type_url() == type_url) return static_cast<int>(i);
    }
    return -1;
  }

  // Returns the ACK of response_: SotW repeats the subscription with the
  // response's version and nonce; delta names the nonce.
  Request Ack(int subscription) const {
    if constexpr (kDelta) {
      Request ack;
      ack.set_type_url(response_.type_url());
      ack.set_response_nonce(response_.nonce());
      return ack;
    } else {
      Request ack = subscriptions_[subscription];
      ack.set_version_info(response_.version_info());
      ack.set_response_nonce(response_.nonce());
      return ack;
    }
  }

  // Records the watched resource's first version, and the arrival of each
  // version that differs from the one before it.
  void CheckWatched(absl::Time now) {
    const std::string& watched = client_.options_.watched_name;
    for (const auto& resource : response_.resources()) {
      size_t fingerprint = 0;
      if constexpr (kDelta) {
        const std::string& name =
            resource.has_resource_name() ? resource.resource_name().name() : resource.name();
        if (name != watched) continue;
        fingerprint = Fingerprint(resource.version());
      } else {
        if (ResourceName(resource) != watched) continue;
        fingerprint = Fingerprint(resource.value());
      }
      if (!last_.has_value()) {
        last_ = fingerprint;
        continue;
      }
      {
        absl::MutexLock lock(&mu_);
        ++watched_pushes_;
      }
      if (fingerprint == *last_) continue;
      last_ = fingerprint;
      int change = 0;
      {
        absl::MutexLock lock(&mu_);
        arrivals_.push_back(now);
        change = static_cast<int>(arrivals_.size()) - 1;
      }
      client_.OnEdited(expects_edit_, change);
    }
  }

  void Send(Request request) {
    const Request* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      pending_.push_back(std::move(request));
      if (writing_) return;
      writing_ = true;
      next = &pending_.front();
    }
    this->StartWrite(next);
  }

  LoadClient& client_;
  const int index_;
  const int generation_;
  const bool expects_edit_;
  grpc::ClientContext context_;
  // Touched only by the reader callbacks (one at a time) and Start.
  std::vector<Request> subscriptions_;
  Response response_;
  std::vector<bool> answered_;
  int answered_count_ = 0;
  bool responded_ = false;
  std::optional<size_t> last_;  // Fingerprint of the watched resource's last version.

  mutable absl::Mutex mu_;
  std::deque<Request> pending_ ABSL_GUARDED_BY(mu_);  // front() is in flight.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<absl::Time> arrivals_ ABSL_GUARDED_BY(mu_);  // Of each new version.
  int watched_pushes_ ABSL_GUARDED_BY(mu_) = 0;
};

LoadClient::LoadClient(LoadOptions options, std::vector<StreamPlan> plans)
    : options_(std::move(options)), plans_(std::move(plans)), jitter_(options_.seed) {}

LoadClient::~LoadClient() { Shutdown(absl::Now() + absl::Seconds(10)); }

absl::Status LoadClient::Connect(absl::Time deadline) {
  for (int i = 0; i < options_.connections; ++i) {
    grpc::ChannelArguments args;
    // A channel of its own subchannel pool, and distinct arguments, never
    // shares a connection with another.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("facet_load.connection", i);
    args.SetMaxReceiveMessageSize(-1);
    channels_.push_back(
        grpc::CreateCustomChannel(options_.address, grpc::InsecureChannelCredentials(), args));
  }
  for (auto& channel : channels_) {
    if (!channel->WaitForConnected(absl::ToChronoTime(deadline))) {
      return absl::UnavailableError(absl::StrCat("cannot connect to ", options_.address));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<LoadClient::Stream> LoadClient::NewStream(int index, int generation) {
  if (options_.delta) {
    return std::make_unique<Reactor<DeltaDiscoveryRequest, DeltaDiscoveryResponse>>(
        *this, index, generation, DeltaRequests(options_, index, plans_[index]));
  }
  return std::make_unique<Reactor<DiscoveryRequest, DiscoveryResponse>>(
      *this, index, generation, SotwRequests(options_, index, plans_[index]));
}

absl::StatusOr<absl::Duration> LoadClient::OpenAndSync(absl::Time deadline) {
  for (auto& channel : channels_) stubs_.push_back(AggregatedDiscoveryService::NewStub(channel));
  const int count = static_cast<int>(plans_.size());
  for (int i = 0; i < count; ++i) streams_.push_back(NewStream(i, /*generation=*/0));
  {
    absl::MutexLock lock(&mu_);
    started_ += count;
    if (options_.reconnect) {
      backoffs_.reserve(count);
      for (int i = 0; i < count; ++i) {
        backoffs_.emplace_back(options_.backoff, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
          // Called by Next(), under mu_.
          return std::uniform_real_distribution<double>(0.0, 1.0)(jitter_);
        });
      }
      generations_.assign(count, 0);
      reconnections_.resynced.assign(count, std::nullopt);
    }
  }
  if (options_.reconnect) reopener_ = std::thread([this] { ReopenLoop(); });
  const absl::Time start = absl::Now();
  for (int i = 0; i < count; ++i) streams_[i]->Start(*stubs_[i % stubs_.size()]);
  absl::MutexLock lock(&mu_);
  auto synced_or_failed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return synced_ == count || failed_ > 0;
  };
  mu_.AwaitWithDeadline(absl::Condition(&synced_or_failed), deadline);
  const absl::Duration took = absl::Now() - start;
  if (failed_ > 0) return absl::UnavailableError(first_failure_);
  if (synced_ < count) {
    return absl::DeadlineExceededError(
        absl::StrCat(synced_, " of ", count, " streams synced before the deadline"));
  }
  return took;
}

void LoadClient::ReopenLoop() {
  for (;;) {
    std::vector<std::pair<Stream*, int>> due_now;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time wake = due_.empty() ? absl::InfiniteFuture() : due_.begin()->first;
      auto stop_or_earlier = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shutting_down_ || (!due_.empty() && due_.begin()->first < wake);
      };
      mu_.AwaitWithDeadline(absl::Condition(&stop_or_earlier), wake);
      if (shutting_down_) return;
      const absl::Time now = absl::Now();
      while (!due_.empty() && due_.begin()->first <= now) {
        const auto [due, index] = *due_.begin();
        due_.erase(due_.begin());
        reopened_.push_back(NewStream(index, ++generations_[index]));
        ++started_;
        reconnections_.attempts.push_back(due);
        reconnections_.max_start_lag = std::max(reconnections_.max_start_lag, now - due);
        due_now.emplace_back(reopened_.back().get(), index);
      }
    }
    // Started outside the lock: gRPC may run a reaction inline.
    for (auto& [stream, index] : due_now) stream->Start(*stubs_[index % stubs_.size()]);
  }
}

bool LoadClient::WaitForResync(absl::Time deadline) {
  const int count = static_cast<int>(plans_.size());
  absl::MutexLock lock(&mu_);
  auto resynced = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return resynced_count_ == count; };
  return mu_.AwaitWithDeadline(absl::Condition(&resynced), deadline);
}

ReconnectResults LoadClient::Reconnections() const {
  absl::MutexLock lock(&mu_);
  return reconnections_;
}

bool LoadClient::WaitForChange(int change, absl::Time deadline) {
  int expected = 0;
  for (const StreamPlan& plan : plans_) expected += plan.expects_edit ? 1 : 0;
  absl::MutexLock lock(&mu_);
  auto received = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = edited_expected_.find(change);
    return it == edited_expected_.end() ? 0 : it->second;
  };
  auto arrived_or_failed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return received() == expected || failed_ > 0;
  };
  mu_.AwaitWithDeadline(absl::Condition(&arrived_or_failed), deadline);
  return received() == expected;
}

EditResults LoadClient::Edits(int change, absl::Time trigger) const {
  EditResults results;
  for (size_t i = 0; i < streams_.size(); ++i) {
    const std::optional<absl::Time> at = streams_[i]->arrival(change);
    if (plans_[i].expects_edit) {
      ++results.expected;
      if (at.has_value()) results.latencies.push_back(*at - trigger);
    } else if (at.has_value()) {
      ++results.unexpected;
    }
  }
  std::sort(results.latencies.begin(), results.latencies.end());
  return results;
}

std::vector<int> LoadClient::WatchedPushes() const {
  std::vector<int> pushes;
  pushes.reserve(streams_.size());
  for (const auto& stream : streams_) pushes.push_back(stream->watched_pushes());
  return pushes;
}

std::string LoadClient::FirstFailure() const {
  absl::MutexLock lock(&mu_);
  return first_failure_;
}

void LoadClient::Shutdown(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  // Every stream it reopens is started before it returns.
  if (reopener_.joinable()) reopener_.join();
  std::vector<Stream*> all;
  for (auto& stream : streams_) all.push_back(stream.get());
  {
    absl::MutexLock lock(&mu_);
    for (auto& stream : reopened_) all.push_back(stream.get());
  }
  for (Stream* stream : all) stream->Cancel();
  absl::MutexLock lock(&mu_);
  auto all_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ == started_; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&all_done), deadline)) {
    // Reactors still in use by gRPC must not be destroyed.
    for (auto& stream : streams_) stream.release();
    for (auto& stream : reopened_) stream.release();
  }
}

void LoadClient::OnSynced(int index, int generation) {
  absl::MutexLock lock(&mu_);
  if (generation == 0) {
    ++synced_;
  } else if (!reconnections_.resynced[index].has_value()) {
    reconnections_.resynced[index] = absl::Now();
    ++resynced_count_;
  }
}

void LoadClient::OnEdited(bool expected, int change) {
  if (!expected) return;
  absl::MutexLock lock(&mu_);
  ++edited_expected_[change];
}

void LoadClient::OnDone(int index, const grpc::Status& status, bool responded) {
  absl::MutexLock lock(&mu_);
  ++done_;
  if (shutting_down_) return;
  if (options_.reconnect) {
    // As gRPC's xDS client: a stream that had a response starts the backoff
    // over.
    const absl::Time now = absl::Now();
    reconnections_.ended.push_back(now);
    if (responded) backoffs_[index].Reset();
    due_.emplace(now + backoffs_[index].Next(), index);
    return;
  }
  ++failed_;
  if (first_failure_.empty()) {
    first_failure_ = absl::StrCat("stream ", index, " ended: ", status.error_code(), " ",
                                  status.error_message());
  }
}

}  // namespace facet::load
