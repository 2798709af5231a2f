#include "xds_server/ads/csds_service.h"

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/ads_service.h"

namespace facet::xds {

using ::envoy::service::status::v3::ClientStatusRequest;
using ::envoy::service::status::v3::ClientStatusResponse;

bool ClientStatusService::SeesEveryClient(const ClientIdentity& identity) const {
  for (const AllowedClient& reader : readers_) {
    if (Admits(reader, identity)) return true;
  }
  return false;
}

grpc::Status ClientStatusService::Answer(const ClientStatusRequest& request,
                                         const ClientIdentity& reader,
                                         ClientStatusResponse* response,
                                         int64_t* omitted_clients) const {
  absl::StatusOr<ClientStatusQuery> query = QueryFromRequest(request, max_response_bytes_);
  if (!query.ok()) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, std::string(query.status().message()));
  }
  query->reader = reader;
  query->only_readers_identity = !SeesEveryClient(reader);
  if (std::shared_ptr<const Snapshot> snapshot = ads_.CurrentSnapshot(); snapshot != nullptr) {
    query->access = snapshot->shared_access();
  }
  const ClientStatusReport report = ads_.ClientStatuses(*query);
  response->Clear();
  for (const ClientStatus& client : report.clients) {
    *response->add_config() = ToClientConfig(client);
  }
  *omitted_clients = report.omitted_clients;
  if (report.omitted_clients > 0 || report.omitted_resources > 0) {
    spdlog::warn("CSDS: response bound of {} bytes reached: {} clients and {} resources left out "
                 "(filter by node id to see them)",
                 max_response_bytes_, report.omitted_clients, report.omitted_resources);
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* ClientStatusService::FetchClientStatus(
    grpc::CallbackServerContext* context, const ClientStatusRequest* request,
    ClientStatusResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  int64_t omitted = 0;
  grpc::Status status = Answer(*request, IdentityOf(*context->auth_context()), response, &omitted);
  if (status.ok() && omitted > 0) {
    context->AddTrailingMetadata(kOmittedClientsHeader, absl::StrCat(omitted));
  }
  reactor->Finish(status);
  return reactor;
}

// One StreamClientStatus stream: each request is answered in turn, one read
// or write in flight at a time (gRPC serializes the reactions).
class ClientStatusService::Stream final
    : public grpc::ServerBidiReactor<ClientStatusRequest, ClientStatusResponse> {
 public:
  Stream(const ClientStatusService& service, ClientIdentity reader) : reader_(std::move(reader)) {
    // gRPC runs the reactions on its threads after this constructor, ordered
    // by synchronization ThreadSanitizer cannot see: this release store and
    // each reaction's acquire load say so.
    service_.store(&service, std::memory_order_release);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    int64_t omitted = 0;
    grpc::Status status = service()->Answer(request_, reader_, &response_, &omitted);
    if (!status.ok()) {
      Finish(status);
      return;
    }
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  const ClientStatusService* service() const { return service_.load(std::memory_order_acquire); }

  std::atomic<const ClientStatusService*> service_{nullptr};  // Stored by the constructor.
  const ClientIdentity reader_;
  ClientStatusRequest request_;
  ClientStatusResponse response_;
};

grpc::ServerBidiReactor<ClientStatusRequest, ClientStatusResponse>*
ClientStatusService::StreamClientStatus(grpc::CallbackServerContext* context) {
  return new Stream(*this, IdentityOf(*context->auth_context()));
}

}  // namespace facet::xds
