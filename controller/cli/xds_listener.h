// Starting the ADS gRPC server and writing the ready file: shared by
// `facet serve` and `facet controller`.
#ifndef FACET_CONTROLLER_CLI_XDS_LISTENER_H_
#define FACET_CONTROLLER_CLI_XDS_LISTENER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "xds_server/ads/ads_service.h"

namespace facet::controller {

struct XdsListener {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // "host:port" with the bound port; a wildcard host becomes 127.0.0.1.
};

// Starts a gRPC server for `ads` on `address` (port 0: any free port).
// SO_REUSEPORT is off, so a port in use is an error (Unavailable) rather than
// silently shared.
absl::StatusOr<XdsListener> StartXdsListener(const std::string& address, xds::AdsService& ads,
                                             int max_request_bytes);

// Writes {"xds_address": ..., "admin_address": ...} to `path` atomically
// (temporary file, then rename). Returns false when it cannot.
bool WriteReadyFile(const std::string& path, const std::string& xds_address,
                    const std::string& admin_address);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_XDS_LISTENER_H_
