// A project-owned CSDS (envoy.service.status.v3) client for tests: asks an
// xDS port what each connected client holds, unary or on one stream.
#ifndef FACET_TEST_ADS_CLIENT_CSDS_TEST_CLIENT_H_
#define FACET_TEST_ADS_CLIENT_CSDS_TEST_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "envoy/service/status/v3/csds.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace facet::testing {

using ::envoy::service::status::v3::ClientConfig;
using ::envoy::service::status::v3::ClientStatusRequest;
using ::envoy::service::status::v3::ClientStatusResponse;

// Returns a request for the client(s) whose node id is exactly `node_id`.
ClientStatusRequest NodeIdRequest(absl::string_view node_id);

// Returns the config of the first client with `node_id` in `response`, or null.
const ClientConfig* FindClient(const ClientStatusResponse& response, absl::string_view node_id);
// Returns the status of resource (`type_url`, `name`) in `config`, or null.
const ClientConfig::GenericXdsConfig* FindResource(const ClientConfig& config,
                                                   absl::string_view type_url,
                                                   absl::string_view name);

// Thread-safe.
class CsdsTestClient {
 public:
  // Connects an insecure channel to `address` (host:port). Calls wait up to
  // `timeout` each.
  explicit CsdsTestClient(absl::string_view address, absl::Duration timeout = absl::Seconds(10));
  // Connects to `address` with `credentials` (e.g. TLS with a client
  // certificate), on a channel of its own (no connection shared with other
  // clients of the process, so each presents its own certificate).
  CsdsTestClient(absl::string_view address, std::shared_ptr<grpc::ChannelCredentials> credentials,
                 absl::Duration timeout = absl::Seconds(10));

  // FetchClientStatus. Fails with the call's status (as absl::Status).
  // `omitted_clients`, when given, receives the trailing metadata
  // facet-csds-omitted-clients ("" when absent).
  absl::StatusOr<ClientStatusResponse> Fetch(const ClientStatusRequest& request,
                                             std::string* omitted_clients = nullptr);
  // Sends `requests` in turn on one StreamClientStatus stream, reading the
  // answer to each before the next, then half-closes. Fails with the
  // stream's status when it ends early.
  absl::StatusOr<std::vector<ClientStatusResponse>> Stream(
      const std::vector<ClientStatusRequest>& requests);

 private:
  std::unique_ptr<envoy::service::status::v3::ClientStatusDiscoveryService::Stub> stub_;
  const absl::Duration timeout_;
};

}  // namespace facet::testing

#endif  // FACET_TEST_ADS_CLIENT_CSDS_TEST_CLIENT_H_
