#include "test/load/null_ads_service.h"

#include <deque>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"
#include "test/load/world.h"

namespace facet::load {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;

constexpr absl::string_view kAdsService = "/envoy.service.discovery.v3.AggregatedDiscoveryService/";
constexpr absl::string_view kTypePrefix = "type.googleapis.com/";

// Returns `json` parsed as `Message` and serialized, or "" if it does not parse.
template <typename Message>
std::string SerializeJson(const std::string& json) {
  Message message;
  if (auto status = google::protobuf::util::JsonStringToMessage(json, &message); !status.ok()) {
    std::cerr << "facet_null_server: cannot parse " << Message::descriptor()->full_name() << ": "
              << status.ToString() << "\n";
    return "";
  }
  return message.SerializeAsString();
}

// A served resource: its name and serialized message.
struct NamedResource {
  std::string name;
  std::string bytes;
};

// Returns the world's resources of `type_url` named `names` (empty: every
// resource of the type, for Listeners and Clusters), as the null server serves
// them: routes as the variant env=prod selects.
std::vector<NamedResource> WorldResources(const std::string& type_url,
                                          const std::set<std::string>& names, int services,
                                          bool edited) {
  // Any's JSON names these types: link their descriptors in.
  static const google::protobuf::Descriptor* const kAnyTypes[] = {
      envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager::
          descriptor(),
      envoy::extensions::filters::http::router::v3::Router::descriptor()};
  (void)kAnyTypes;
  std::vector<std::string> wanted(names.begin(), names.end());
  const std::string type = type_url.substr(std::min(type_url.size(), kTypePrefix.size()));
  const bool clusters = type == "envoy.config.cluster.v3.Cluster";
  if (wanted.empty()) {
    for (int i = 0; i < services; ++i) {
      const std::string service = ServiceName(i);
      if (clusters) {
        wanted.push_back(PrimaryClusterName(service));
        wanted.push_back(SecondaryClusterName(service));
      } else {
        wanted.push_back(service);
      }
    }
  }
  std::vector<NamedResource> out;
  for (const std::string& name : wanted) {
    std::string bytes;
    if (type == "envoy.config.listener.v3.Listener") {
      bytes = SerializeJson<envoy::config::listener::v3::Listener>(ListenerJson(name));
    } else if (type == "envoy.config.route.v3.RouteConfiguration") {
      bytes = SerializeJson<envoy::config::route::v3::RouteConfiguration>(
          RouteJson(name, {{"env", "prod"}}, edited));
    } else if (clusters) {
      bytes = SerializeJson<envoy::config::cluster::v3::Cluster>(ClusterJson(name));
    } else if (type == "envoy.config.endpoint.v3.ClusterLoadAssignment") {
      bytes =
          SerializeJson<envoy::config::endpoint::v3::ClusterLoadAssignment>(EndpointsJson(name));
    } else {
      return {};
    }
    if (!bytes.empty()) out.push_back({name, std::move(bytes)});
  }
  return out;
}

// Returns a SotW or delta response of `resources`, with `version` as its
// version and nonce (and, in delta, each resource's version), serialized.
template <typename Response>
grpc::ByteBuffer SerializeResponse(const std::string& type_url, const std::string& version,
                                   const std::vector<NamedResource>& resources) {
  Response response;
  response.set_type_url(type_url);
  response.set_nonce(version);
  for (const NamedResource& resource : resources) {
    google::protobuf::Any* any = nullptr;
    if constexpr (std::is_same_v<Response, DeltaDiscoveryResponse>) {
      auto* entry = response.add_resources();
      entry->set_name(resource.name);
      entry->set_version(version);
      any = entry->mutable_resource();
    } else {
      any = response.add_resources();
    }
    any->set_type_url(type_url);
    any->set_value(resource.bytes);
  }
  if constexpr (std::is_same_v<Response, DeltaDiscoveryResponse>) {
    response.set_system_version_info(version);
  } else {
    response.set_version_info(version);
  }
  grpc::Slice slice(response.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

template <typename Message>
bool Parse(grpc::ByteBuffer& buffer, Message& message) {
  grpc::ProtoBufferReader reader(&buffer);
  return message.ParseFromZeroCopyStream(&reader);
}

}  // namespace

// One ADS stream (SotW or delta). Deletes itself in OnDone.
class NullAdsService::Stream final : public grpc::ServerGenericBidiReactor {
 public:
  Stream(NullAdsService& service, bool delta) : service_(service), delta_(delta) {
    StartRead(&request_);
  }

  // Queues the route response, edited or as it was, if this stream should
  // get it; returns whether it did. Called with service_.mu_ held.
  bool PushEdit(bool selected_only, bool edited) {
    if (routes_ == nullptr || (selected_only && !selected_)) return false;
    Enqueue(edited ? routes_->edited : routes_->initial);
    return true;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      bool finish = false;
      {
        absl::MutexLock lock(&mu_);
        read_closed_ = true;
        finish = FinishDueLocked();
      }
      if (finish) Finish(grpc::Status::OK);
      return;
    }
    if (delta_) {
      DeltaDiscoveryRequest request;
      if (Parse(request_, request)) HandleDelta(request);
    } else {
      DiscoveryRequest request;
      if (Parse(request_, request)) HandleSotw(request);
    }
    request_.Clear();
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    const grpc::ByteBuffer* next = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      queue_.pop_front();
      if (!ok) queue_.clear();
      if (!queue_.empty()) {
        next = &queue_.front();
      } else {
        writing_ = false;
        finish = FinishDueLocked();
      }
    }
    if (next != nullptr) StartWrite(next);
    if (finish) Finish(grpc::Status::OK);
  }

  void OnDone() override {
    service_.Unregister(this);
    delete this;
  }

 private:
  // Records the stream's parameters from its first request: the first
  // locator's dynamic parameters, else the node metadata's string fields.
  template <typename Locators>
  void NoteParameters(const envoy::config::core::v3::Node& node, const Locators& locators) {
    if (seen_first_) return;
    seen_first_ = true;
    std::map<std::string, std::string> params;
    if (!locators.empty()) {
      params.insert(locators[0].dynamic_parameters().begin(),
                    locators[0].dynamic_parameters().end());
    } else {
      for (const auto& [key, value] : node.metadata().fields()) {
        if (value.has_string_value()) params[key] = value.string_value();
      }
    }
    selected_ = SelectsEditedVariant(params);
    service_.Register(this);
  }

  void HandleSotw(const DiscoveryRequest& request) {
    NoteParameters(request.node(), request.resource_locators());
    if (!request.response_nonce().empty()) return;  // An ACK or NACK.
    std::set<std::string> names(request.resource_names().begin(), request.resource_names().end());
    for (const auto& locator : request.resource_locators()) names.insert(locator.name());
    names.erase("*");
    Answer(request.type_url(), names);
  }

  void HandleDelta(const DeltaDiscoveryRequest& request) {
    NoteParameters(request.node(), request.resource_locators_subscribe());
    if (!request.response_nonce().empty()) return;  // An ACK or NACK.
    std::set<std::string> names(request.resource_names_subscribe().begin(),
                                request.resource_names_subscribe().end());
    for (const auto& locator : request.resource_locators_subscribe()) names.insert(locator.name());
    names.erase("*");
    Answer(request.type_url(), names);
  }

  void Answer(const std::string& type_url, const std::set<std::string>& names) {
    std::shared_ptr<const Responses> responses = service_.ResponsesFor(delta_, type_url, names);
    if (responses == nullptr) return;
    if (absl::EndsWith(type_url, ".RouteConfiguration")) {
      absl::MutexLock lock(&service_.mu_);
      routes_ = responses;
    }
    Enqueue(responses->initial);
  }

  void Enqueue(const grpc::ByteBuffer& response) {
    const grpc::ByteBuffer* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      queue_.push_back(response);  // Shares the slices; copies no bytes.
      if (writing_) return;
      writing_ = true;
      next = &queue_.front();
    }
    StartWrite(next);
  }

  bool FinishDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || !read_closed_ || writing_) return false;
    finished_ = true;
    return true;
  }

  NullAdsService& service_;
  const bool delta_;
  // Touched only by the reader callbacks (one at a time).
  grpc::ByteBuffer request_;
  bool seen_first_ = false;
  bool selected_ = false;
  // The route subscription's responses; guarded by service_.mu_.
  std::shared_ptr<const Responses> routes_;

  absl::Mutex mu_;
  std::deque<grpc::ByteBuffer> queue_ ABSL_GUARDED_BY(mu_);  // front() is in flight.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool read_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

NullAdsService::NullAdsService(Options options) : options_(options) {}

grpc::ServerGenericBidiReactor* NullAdsService::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  const std::string& method = context->method();
  if (method == absl::StrCat(kAdsService, "StreamAggregatedResources")) {
    return new Stream(*this, /*delta=*/false);
  }
  if (method == absl::StrCat(kAdsService, "DeltaAggregatedResources")) {
    return new Stream(*this, /*delta=*/true);
  }
  return grpc::CallbackGenericService::CreateReactor(context);  // UNIMPLEMENTED.
}

int NullAdsService::PushEdit() {
  absl::MutexLock lock(&mu_);
  const bool edited = pushes_++ % 2 == 0;
  int pushed = 0;
  for (Stream* stream : streams_) {
    if (stream->PushEdit(options_.push_selected_only, edited)) ++pushed;
  }
  return pushed;
}

std::shared_ptr<const NullAdsService::Responses> NullAdsService::ResponsesFor(
    bool delta, const std::string& type_url, const std::set<std::string>& names) {
  const std::string key = absl::StrCat(delta, " ", type_url, " ", absl::StrJoin(names, ","));
  // Built under the lock, once: streams opening together wait for it rather
  // than all building it.
  absl::MutexLock lock(&mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  auto responses = std::make_shared<Responses>();
  for (const bool edited : {false, true}) {
    const std::vector<NamedResource> resources =
        WorldResources(type_url, names, options_.services, edited);
    if (resources.empty()) return nullptr;
    const std::string version = edited ? "2" : "1";
    grpc::ByteBuffer& out = edited ? responses->edited : responses->initial;
    out = delta ? SerializeResponse<DeltaDiscoveryResponse>(type_url, version, resources)
                : SerializeResponse<DiscoveryResponse>(type_url, version, resources);
  }
  return cache_.emplace(key, std::move(responses)).first->second;
}

void NullAdsService::Register(Stream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.insert(stream);
}

void NullAdsService::Unregister(Stream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

}  // namespace facet::load
