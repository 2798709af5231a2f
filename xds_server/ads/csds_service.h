// The Client Status Discovery Service (envoy.service.status.v3) on the xDS
// port: what each client connected to an AdsService holds, per resource.
#ifndef FACET_XDS_SERVER_ADS_CSDS_SERVICE_H_
#define FACET_XDS_SERVER_ADS_CSDS_SERVICE_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "envoy/service/status/v3/csds.grpc.pb.h"
#include "xds_server/ads/client_status.h"

namespace facet::xds {

class AdsService;

// Answers FetchClientStatus, and each request of a StreamClientStatus stream,
// with one ClientConfig per open ADS stream of `ads` (ToClientConfig), by
// stream id, within a byte bound: clients that no longer fit are left out and
// counted in the trailing metadata kOmittedClientsHeader (FetchClientStatus)
// and in the log. node_matchers: see QueryFromRequest (Unimplemented
// otherwise). A caller (IdentityOf its auth context) sees only the clients
// that connected with its own identity (SameIdentity: without a
// certificate, the clients without one), unless a reader entry admits it
// (Admits), and of every client only the resources it may read.
// Thread-safe.
class ClientStatusService final
    : public envoy::service::status::v3::ClientStatusDiscoveryService::CallbackService {
 public:
  // Trailing metadata of FetchClientStatus when clients were left out.
  static constexpr char kOmittedClientsHeader[] = "facet-csds-omitted-clients";
  // The default bound of one response, in bytes (what gRPC clients accept
  // by default).
  static constexpr size_t kDefaultMaxResponseBytes = 4 << 20;

  // `ads` must outlive the service. `readers`: the valid allowedClients
  // entries whose callers see every client.
  explicit ClientStatusService(const AdsService& ads, std::vector<AllowedClient> readers = {},
                               size_t max_response_bytes = kDefaultMaxResponseBytes)
      : ads_(ads), readers_(std::move(readers)), max_response_bytes_(max_response_bytes) {}

  grpc::ServerUnaryReactor* FetchClientStatus(
      grpc::CallbackServerContext* context,
      const envoy::service::status::v3::ClientStatusRequest* request,
      envoy::service::status::v3::ClientStatusResponse* response) override;

  grpc::ServerBidiReactor<envoy::service::status::v3::ClientStatusRequest,
                          envoy::service::status::v3::ClientStatusResponse>*
  StreamClientStatus(grpc::CallbackServerContext* context) override;

  // Returns whether a caller with `identity` sees every client (a reader
  // entry admits it), not only the clients with its own identity.
  bool SeesEveryClient(const ClientIdentity& identity) const;

  // Answers one request from `reader` (the caller's identity: IdentityOf
  // its auth context): the response, its count of omitted clients, or
  // Unimplemented for a node matcher Facet does not support. Only the
  // clients with the reader's identity, unless SeesEveryClient, and of
  // them no resource of an authority the reader may not read
  // (ClientStatusQuery).
  grpc::Status Answer(const envoy::service::status::v3::ClientStatusRequest& request,
                      const ClientIdentity& reader,
                      envoy::service::status::v3::ClientStatusResponse* response,
                      int64_t* omitted_clients) const;

 private:
  class Stream;

  const AdsService& ads_;
  const std::vector<AllowedClient> readers_;
  const size_t max_response_bytes_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_CSDS_SERVICE_H_
