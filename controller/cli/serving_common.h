// What `facet serve` and `facet controller` share: shutdown signals, the
// flags both take, starting the ADS gRPC server, and the ready file.
#ifndef FACET_CONTROLLER_CLI_SERVING_COMMON_H_
#define FACET_CONTROLLER_CLI_SERVING_COMMON_H_

#include <signal.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "controller/cli/flags.h"
#include "grpcpp/grpcpp.h"
#include "xds_server/ads/ads_service.h"

namespace facet::controller {

// Returns {SIGTERM, SIGINT}, the signals a serving command waits for.
sigset_t ShutdownSignals();

// Blocks ShutdownSignals() in the calling thread, and so in every thread it
// starts later: call before any library starts a thread, then sigwait.
void BlockShutdownSignals();

// Applies --log-level and parses --node-metadata-params. Errors name the flag
// and the reason.
absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> ApplyCommonFlags(const Flags& flags);

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

#endif  // FACET_CONTROLLER_CLI_SERVING_COMMON_H_
