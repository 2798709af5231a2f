#include "test/ads_client/ads_test_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "xds_server/resources/resource_type.h"

namespace facet::testing {
namespace {

using ::envoy::service::discovery::v3::AggregatedDiscoveryService;
using ::envoy::service::discovery::v3::Resource;
using ::envoy::service::discovery::v3::ResourceLocator;

absl::Status ToAbslStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Returns the name field of an unwrapped resource of a served type.
absl::StatusOr<std::string> InnerName(const google::protobuf::Any& any) {
  const xds::ResourceType* type = xds::FindResourceType(any.type_url());
  if (type == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource has type ", any.type_url(), ", not a served xDS type"));
  }
  std::unique_ptr<google::protobuf::Message> message = type->New();
  if (!message->ParseFromString(any.value())) {
    return absl::InvalidArgumentError(
        absl::StrCat("resource of type ", any.type_url(), " does not parse"));
  }
  return type->GetName(*message);
}

template <typename Response>
absl::StatusOr<std::vector<DecodedResource>> DecodeAll(const Response& response) {
  std::vector<DecodedResource> out;
  for (const auto& resource : response.resources()) {
    absl::StatusOr<DecodedResource> decoded = DecodeResource(resource);
    if (!decoded.ok()) {
      return absl::Status(decoded.status().code(),
                          absl::StrCat(response.type_url(), " response, resource ", out.size(),
                                       ": ", decoded.status().message()));
    }
    out.push_back(*std::move(decoded));
  }
  return out;
}

template <typename Response>
absl::StatusOr<std::vector<std::string>> NamesOf(const Response& response) {
  absl::StatusOr<std::vector<DecodedResource>> decoded = DecodeAll(response);
  if (!decoded.ok()) return decoded.status();
  std::vector<std::string> names;
  for (const DecodedResource& resource : *decoded) names.push_back(resource.name);
  return names;
}

}  // namespace

// --- AdsStream ---------------------------------------------------------------

template <typename Request, typename Response>
AdsStream<Request, Response>::AdsStream(std::unique_ptr<grpc::ClientContext> context,
                                        std::unique_ptr<Stream> stream)
    : context_(std::move(context)), stream_(std::move(stream)) {
  reader_ = std::thread([this] { ReadLoop(); });
}

template <typename Request, typename Response>
AdsStream<Request, Response>::~AdsStream() {
  context_->TryCancel();
  reader_.join();
}

template <typename Request, typename Response>
void AdsStream<Request, Response>::ReadLoop() {
  Response response;
  while (stream_->Read(&response)) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(response));
    response = Response();
  }
  absl::Status status = ToAbslStatus(stream_->Finish());
  absl::MutexLock lock(&mu_);
  final_status_ = std::move(status);
}

template <typename Request, typename Response>
absl::Status AdsStream<Request, Response>::Send(const Request& request) {
  {
    absl::MutexLock lock(&mu_);
    if (final_status_.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the ADS stream has ended: ", final_status_->ToString()));
    }
  }
  absl::MutexLock lock(&write_mu_);
  if (writes_done_) return absl::FailedPreconditionError("the ADS stream is half-closed");
  if (!stream_->Write(request)) {
    return absl::UnavailableError("writing to the ADS stream failed; the stream is broken");
  }
  return absl::OkStatus();
}

template <typename Request, typename Response>
absl::StatusOr<Response> AdsStream<Request, Response>::Pop(absl::string_view type_url,
                                                           absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto find = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (type_url.empty() || it->type_url() == type_url) return it;
    }
    return queue_.end();
  };
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return find() != queue_.end() || final_status_.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (auto it = find(); it != queue_.end()) {
    Response response = std::move(*it);
    queue_.erase(it);
    return response;
  }
  if (final_status_.has_value()) {
    if (final_status_->ok()) {
      return absl::UnavailableError("the server ended the ADS stream with OK");
    }
    return *final_status_;
  }
  return absl::DeadlineExceededError(
      absl::StrCat("no ", type_url.empty() ? "" : absl::StrCat(type_url, " "), "response within ",
                   absl::FormatDuration(timeout), " (", queue_.size(), " other responses queued)"));
}

template <typename Request, typename Response>
absl::StatusOr<Response> AdsStream<Request, Response>::Next(absl::Duration timeout) {
  return Pop("", timeout);
}

template <typename Request, typename Response>
absl::StatusOr<Response> AdsStream<Request, Response>::NextOfType(absl::string_view type_url,
                                                                  absl::Duration timeout) {
  return Pop(type_url, timeout);
}

template <typename Request, typename Response>
size_t AdsStream<Request, Response>::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

template <typename Request, typename Response>
absl::Status AdsStream<Request, Response>::CloseAndWait(absl::Duration timeout) {
  {
    absl::MutexLock lock(&write_mu_);
    if (!writes_done_) {
      writes_done_ = true;
      stream_->WritesDone();
    }
  }
  absl::MutexLock lock(&mu_);
  auto ended = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return final_status_.has_value(); };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ended), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("the server did not end the half-closed ADS stream within ",
                     absl::FormatDuration(timeout)));
  }
  return *final_status_;
}

template <typename Request, typename Response>
void AdsStream<Request, Response>::Cancel() {
  context_->TryCancel();
}

template class AdsStream<DiscoveryRequest, DiscoveryResponse>;
template class AdsStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;

// --- AdsTestClient -----------------------------------------------------------

AdsTestClient::AdsTestClient(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)), stub_(AggregatedDiscoveryService::NewStub(channel_)) {}

absl::StatusOr<std::unique_ptr<AdsTestClient>> AdsTestClient::Connect(absl::string_view address,
                                                                      absl::Duration timeout) {
  return Connect(address, grpc::InsecureChannelCredentials(), grpc::ChannelArguments(), timeout);
}

absl::StatusOr<std::unique_ptr<AdsTestClient>> AdsTestClient::Connect(
    absl::string_view address, std::shared_ptr<grpc::ChannelCredentials> credentials,
    const grpc::ChannelArguments& args, absl::Duration timeout) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(std::string(address), credentials, args);
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::UnavailableError(absl::StrCat("could not connect to the ADS server at ", address,
                                               " within ", absl::FormatDuration(timeout)));
  }
  return std::unique_ptr<AdsTestClient>(new AdsTestClient(std::move(channel)));
}

absl::StatusOr<std::unique_ptr<SotwStream>> AdsTestClient::OpenSotw() {
  auto context = std::make_unique<grpc::ClientContext>();
  std::unique_ptr<SotwStream::Stream> stream = stub_->StreamAggregatedResources(context.get());
  if (stream == nullptr) return absl::InternalError("could not start StreamAggregatedResources");
  return std::unique_ptr<SotwStream>(new SotwStream(std::move(context), std::move(stream)));
}

absl::StatusOr<std::unique_ptr<DeltaStream>> AdsTestClient::OpenDelta() {
  auto context = std::make_unique<grpc::ClientContext>();
  std::unique_ptr<DeltaStream::Stream> stream = stub_->DeltaAggregatedResources(context.get());
  if (stream == nullptr) return absl::InternalError("could not start DeltaAggregatedResources");
  return std::unique_ptr<DeltaStream>(new DeltaStream(std::move(context), std::move(stream)));
}

// --- Requests ----------------------------------------------------------------

envoy::config::core::v3::Node MakeNode(absl::string_view id,
                                       const std::map<std::string, std::string>& metadata,
                                       const std::vector<std::string>& client_features) {
  envoy::config::core::v3::Node node;
  node.set_id(std::string(id));
  node.mutable_locality();
  node.set_user_agent_name("facet-ads-test-client");
  auto& fields = *node.mutable_metadata()->mutable_fields();
  for (const auto& [key, value] : metadata) fields[key].set_string_value(value);
  for (const std::string& feature : client_features) node.add_client_features(feature);
  return node;
}

ResourceLocator MakeLocator(absl::string_view name,
                            const std::map<std::string, std::string>& parameters) {
  ResourceLocator locator;
  locator.set_name(std::string(name));
  locator.mutable_dynamic_parameters()->insert(parameters.begin(), parameters.end());
  return locator;
}

DiscoveryRequest MakeRequest(absl::string_view type_url,
                             const std::vector<std::string>& resource_names,
                             const std::vector<ResourceLocator>& locators) {
  DiscoveryRequest request;
  request.set_type_url(std::string(type_url));
  for (const std::string& name : resource_names) request.add_resource_names(name);
  for (const ResourceLocator& locator : locators) *request.add_resource_locators() = locator;
  return request;
}

DiscoveryRequest Ack(const DiscoveryResponse& response, const DiscoveryRequest& subscription) {
  DiscoveryRequest request;
  request.set_type_url(response.type_url());
  *request.mutable_resource_names() = subscription.resource_names();
  *request.mutable_resource_locators() = subscription.resource_locators();
  request.set_version_info(response.version_info());
  request.set_response_nonce(response.nonce());
  return request;
}

DiscoveryRequest Nack(const DiscoveryResponse& response, const DiscoveryRequest& subscription,
                      absl::string_view previous_version, absl::string_view message) {
  DiscoveryRequest request = Ack(response, subscription);
  request.set_version_info(std::string(previous_version));
  request.mutable_error_detail()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  request.mutable_error_detail()->set_message(std::string(message));
  return request;
}

DeltaDiscoveryRequest MakeDeltaRequest(absl::string_view type_url,
                                       const std::vector<std::string>& subscribe,
                                       const std::vector<std::string>& unsubscribe,
                                       const std::vector<ResourceLocator>& locators_subscribe,
                                       const std::vector<ResourceLocator>& locators_unsubscribe) {
  DeltaDiscoveryRequest request;
  request.set_type_url(std::string(type_url));
  for (const std::string& name : subscribe) request.add_resource_names_subscribe(name);
  for (const std::string& name : unsubscribe) request.add_resource_names_unsubscribe(name);
  for (const ResourceLocator& locator : locators_subscribe) {
    *request.add_resource_locators_subscribe() = locator;
  }
  for (const ResourceLocator& locator : locators_unsubscribe) {
    *request.add_resource_locators_unsubscribe() = locator;
  }
  return request;
}

DeltaDiscoveryRequest DeltaAck(const DeltaDiscoveryResponse& response) {
  DeltaDiscoveryRequest request;
  request.set_type_url(response.type_url());
  request.set_response_nonce(response.nonce());
  return request;
}

DeltaDiscoveryRequest DeltaNack(const DeltaDiscoveryResponse& response, absl::string_view message) {
  DeltaDiscoveryRequest request = DeltaAck(response);
  request.mutable_error_detail()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  request.mutable_error_detail()->set_message(std::string(message));
  return request;
}

// --- Decoding ----------------------------------------------------------------

absl::StatusOr<DecodedResource> DecodeResource(const google::protobuf::Any& any) {
  if (any.type_url() == kResourceWrapperTypeUrl) {
    Resource wrapper;
    if (!any.UnpackTo(&wrapper)) {
      return absl::InvalidArgumentError("a Resource wrapper does not parse");
    }
    return DecodeResource(wrapper);
  }
  absl::StatusOr<std::string> name = InnerName(any);
  if (!name.ok()) return name.status();
  DecodedResource decoded;
  decoded.name = *std::move(name);
  decoded.resource = any;
  return decoded;
}

absl::StatusOr<DecodedResource> DecodeResource(const Resource& resource) {
  DecodedResource decoded;
  decoded.wrapped = true;
  decoded.wrapper_name = resource.name();
  decoded.resource_name = resource.resource_name().name();
  decoded.has_constraints = resource.resource_name().has_dynamic_parameter_constraints();
  decoded.constraints = resource.resource_name().dynamic_parameter_constraints();
  decoded.version = resource.version();
  decoded.resource = resource.resource();
  std::string inner_name;
  if (resource.has_resource()) {
    absl::StatusOr<std::string> name = InnerName(resource.resource());
    if (!name.ok()) {
      return absl::Status(name.status().code(),
                          absl::StrCat("inside the Resource wrapper of \"", resource.name(),
                                       "\": ", name.status().message()));
    }
    inner_name = *std::move(name);
  }
  decoded.name = !decoded.resource_name.empty()  ? decoded.resource_name
                 : !decoded.wrapper_name.empty() ? decoded.wrapper_name
                                                 : inner_name;
  return decoded;
}

absl::StatusOr<std::vector<DecodedResource>> DecodeResources(const DiscoveryResponse& response) {
  return DecodeAll(response);
}

absl::StatusOr<std::vector<DecodedResource>> DecodeResources(
    const DeltaDiscoveryResponse& response) {
  return DecodeAll(response);
}

absl::StatusOr<std::vector<std::string>> ResourceNames(const DiscoveryResponse& response) {
  return NamesOf(response);
}

absl::StatusOr<std::vector<std::string>> ResourceNames(const DeltaDiscoveryResponse& response) {
  return NamesOf(response);
}

}  // namespace facet::testing
