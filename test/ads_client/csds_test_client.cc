#include "test/ads_client/csds_test_client.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

absl::Status ToAbsl(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

}  // namespace

ClientStatusRequest NodeIdRequest(absl::string_view node_id) {
  ClientStatusRequest request;
  request.add_node_matchers()->mutable_node_id()->set_exact(std::string(node_id));
  return request;
}

const ClientConfig* FindClient(const ClientStatusResponse& response, absl::string_view node_id) {
  for (const ClientConfig& config : response.config()) {
    if (config.node().id() == node_id) return &config;
  }
  return nullptr;
}

const ClientConfig::GenericXdsConfig* FindResource(const ClientConfig& config,
                                                   absl::string_view type_url,
                                                   absl::string_view name) {
  for (const auto& resource : config.generic_xds_configs()) {
    if (resource.type_url() == type_url && resource.name() == name) return &resource;
  }
  return nullptr;
}

CsdsTestClient::CsdsTestClient(absl::string_view address, absl::Duration timeout)
    : stub_(envoy::service::status::v3::ClientStatusDiscoveryService::NewStub(
          grpc::CreateChannel(std::string(address), grpc::InsecureChannelCredentials()))),
      timeout_(timeout) {}

CsdsTestClient::CsdsTestClient(absl::string_view address,
                               std::shared_ptr<grpc::ChannelCredentials> credentials,
                               absl::Duration timeout)
    : timeout_(timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  stub_ = envoy::service::status::v3::ClientStatusDiscoveryService::NewStub(
      grpc::CreateCustomChannel(std::string(address), std::move(credentials), args));
}

absl::StatusOr<ClientStatusResponse> CsdsTestClient::Fetch(const ClientStatusRequest& request,
                                                           std::string* omitted_clients) {
  grpc::ClientContext context;
  SetDeadline(context, timeout_);
  ClientStatusResponse response;
  grpc::Status status = stub_->FetchClientStatus(&context, request, &response);
  if (!status.ok()) return ToAbsl(status);
  if (omitted_clients != nullptr) {
    omitted_clients->clear();
    const auto& trailers = context.GetServerTrailingMetadata();
    auto it = trailers.find("facet-csds-omitted-clients");
    if (it != trailers.end()) omitted_clients->assign(it->second.data(), it->second.size());
  }
  return response;
}

absl::StatusOr<std::vector<ClientStatusResponse>> CsdsTestClient::Stream(
    const std::vector<ClientStatusRequest>& requests) {
  grpc::ClientContext context;
  SetDeadline(context, timeout_);
  auto stream = stub_->StreamClientStatus(&context);
  std::vector<ClientStatusResponse> responses;
  for (const ClientStatusRequest& request : requests) {
    ClientStatusResponse response;
    if (!stream->Write(request) || !stream->Read(&response)) break;
    responses.push_back(std::move(response));
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!status.ok()) return ToAbsl(status);
  if (responses.size() != requests.size()) {
    return absl::UnavailableError(absl::StrCat("stream ended after ", responses.size(), " of ",
                                               requests.size(), " answers"));
  }
  return responses;
}

}  // namespace facet::testing
