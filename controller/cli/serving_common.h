// What the serving commands share below their runner (serving_runner.h): the
// flags they take and the xDS gRPC server with its bounds.
#ifndef FACET_CONTROLLER_CLI_SERVING_COMMON_H_
#define FACET_CONTROLLER_CLI_SERVING_COMMON_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/cli/flags.h"
#include "controller/server/tls/tls_files.h"
#include "grpcpp/grpcpp.h"
#include "xds_server/ads/ads_service.h"

namespace facet::controller {

// Applies --log-level and parses --node-metadata-params. Errors name the flag
// and the reason.
absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> ApplyCommonFlags(const Flags& flags);

// Server-level bounds of the xDS gRPC port, and the per-stream bounds of the
// ADS service behind it. The defaults are the flags' defaults.
struct XdsServerOptions {
  // The server pings each connection this often and closes it when a ping is
  // not acknowledged within keepalive_timeout. Zero: no server pings.
  absl::Duration keepalive_time = absl::Minutes(1);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // Clients may ping this often (gRPC C++ and grpc-js xDS clients ping every
  // 5 minutes); a client pinging more often is sent GOAWAY ENHANCE_YOUR_CALM
  // "too_many_pings" after gRPC's two strikes.
  absl::Duration min_client_ping_interval = absl::Minutes(1);
  // Whether clients may ping, and the server pings, connections without calls.
  bool keepalive_permit_without_calls = true;
  // A connection is sent GOAWAY after this age (gRPC adds +-10% jitter) and
  // closed after a further grace, ending its streams with UNAVAILABLE so
  // clients reconnect and spread over replicas. Zero: no age limit.
  absl::Duration max_connection_age = absl::Minutes(30);
  absl::Duration max_connection_age_grace = absl::Minutes(1);
  // Concurrent streams per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS):
  // clients queue further streams until one ends.
  int max_concurrent_streams = 1000;
  // Memory gRPC's transport may use for the whole server (a
  // grpc::ResourceQuota); under pressure gRPC shrinks buffers and windows.
  // Zero: unlimited.
  int64_t memory_budget_bytes = int64_t{1} << 30;
  // With tls.enabled(), the port serves TLS with these files (re-read every
  // second when they change) and, with a client CA, requires client
  // certificates that chain to it.
  TlsFiles tls;
  // The ADS service's options: max_request_bytes (also the server's maximum
  // receive size) and the per-stream bounds. `mapping` is left to the caller.
  xds::AdsService::Options ads;
};

// Defines --PREFIX-cert, --PREFIX-key and --PREFIX-client-ca (e.g. prefix
// "admin-tls"), the TLS files of the port `port` names in their help.
void DefineTlsFlags(Flags& flags, const std::string& prefix, const std::string& port);

// Reads the flags DefineTlsFlags defined and checks the files (see
// CheckTlsFiles). InvalidArgument naming the flag for a certificate without
// a key (or the reverse) or a client CA without a certificate;
// FailedPrecondition naming the flag for a file that cannot be read or
// used.
absl::StatusOr<TlsFiles> TlsFilesFromFlags(const Flags& flags, const std::string& prefix);

// Defines the flags XdsServerOptionsFromFlags reads (--grpc-keepalive-time,
// --max-request-bytes, --max-names-per-stream, --xds-tls-cert, ...), with
// XdsServerOptions' defaults.
void DefineXdsServerFlags(Flags& flags);

// Reads the flags DefineXdsServerFlags defined. InvalidArgument naming the
// flag for a value that does not parse or is out of range;
// FailedPrecondition naming the flag for an unusable TLS file.
absl::StatusOr<XdsServerOptions> XdsServerOptionsFromFlags(const Flags& flags);

// Returns the process exit code for an error from the functions above: 2
// for a usage error (InvalidArgument), else 1.
int ExitCodeFor(const absl::Status& status);

// Returns a one-line description of the bounds in `options`, for the start-up
// log (gRPC exposes no counters for them).
std::string DescribeXdsServerBounds(const XdsServerOptions& options);

struct XdsListener {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // "host:port" with the bound port; a wildcard host becomes 127.0.0.1.
};

// Starts a gRPC server for `ads` on `address` (port 0: any free port) with
// the server-level bounds of `options` (options.ads.max_request_bytes is the
// largest message received), over TLS when options.tls is enabled (gRPC's
// FileWatcherCertificateProvider re-reads the files every second; open
// connections keep their certificates). SO_REUSEPORT is off, so a port in use is an
// error (Unavailable) rather than silently shared. Logs the bounds in effect.
absl::StatusOr<XdsListener> StartXdsListener(const std::string& address, xds::AdsService& ads,
                                             const XdsServerOptions& options);

// The defaults that differ between the serving commands' shared flags.
struct ServingFlagDefaults {
  std::string admin_address = "127.0.0.1:18080";
  // The admin endpoints the command serves, for --admin-address's help.
  std::string admin_endpoints = "/healthz, /readyz, /metrics, /status, /clients, /explain";
};

// Defines the flags every serving command takes: --xds-address,
// --admin-address, --node-metadata-params, --ready-file, --log-level, the
// xDS server flags (DefineXdsServerFlags) and --admin-tls-*.
void DefineServingFlags(Flags& flags, const ServingFlagDefaults& defaults = {});

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_SERVING_COMMON_H_
