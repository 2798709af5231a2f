#include "controller/cli/serving_common.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/server/http/http_server.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "spdlog/spdlog.h"
#include "xds_server/ads/csds_service.h"

namespace facet::controller {

absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> ApplyCommonFlags(const Flags& flags) {
  const std::string& level_name = flags.Get("log-level");
  const spdlog::level::level_enum level = spdlog::level::from_str(level_name);
  if (level == spdlog::level::off && level_name != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: unknown level \"", level_name, "\""));
  }
  spdlog::set_level(level);
  absl::StatusOr<xds::ParameterMapping> mapping =
      xds::ParameterMapping::Parse(flags.Get("node-metadata-params"));
  if (!mapping.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-metadata-params: ", mapping.status().message()));
  }
  return std::make_shared<const xds::ParameterMapping>(*std::move(mapping));
}

namespace {

std::string DurationFlag(absl::Duration d) {
  return d == absl::InfiniteDuration() ? "inf" : absl::FormatDuration(d);
}

absl::StatusOr<absl::Duration> ParseDurationFlag(const Flags& flags, const std::string& name) {
  absl::Duration d;
  if (!absl::ParseDuration(flags.Get(name), &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, ": \"", flags.Get(name),
        "\" is not a duration of zero or more (a number with a unit: 500ms, 20s, 30m, 2h)"));
  }
  return d;
}

absl::StatusOr<int64_t> ParseIntFlag(const Flags& flags, const std::string& name, int64_t min,
                                     int64_t max) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(flags.Get(name), &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, ": \"", flags.Get(name), "\" is not a whole number from ", min, " to ", max));
  }
  return value;
}

// Returns `d` in whole milliseconds for a gRPC channel argument: a positive
// duration is at least 1 ms, and zero (when `zero_is_unlimited`) or anything
// beyond INT_MAX ms is INT_MAX, gRPC's "unlimited".
int ChannelArgMillis(absl::Duration d, bool zero_is_unlimited) {
  if (d == absl::ZeroDuration()) return zero_is_unlimited ? INT_MAX : 0;
  const int64_t millis = absl::ToInt64Milliseconds(absl::Ceil(d, absl::Milliseconds(1)));
  return static_cast<int>(std::min<int64_t>(millis, INT_MAX));
}

// How often gRPC re-reads the xDS port's certificate files (its minimum).
constexpr unsigned int kTlsRefreshSeconds = 1;

std::shared_ptr<grpc::ServerCredentials> XdsServerCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.client_ca_file, kTlsRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions tls_options(provider);
  tls_options.watch_identity_key_cert_pairs();
  if (tls.client_ca_file.empty()) {
    tls_options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    tls_options.watch_root_certs();
    tls_options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  return grpc::experimental::TlsServerCredentials(tls_options);
}

}  // namespace

void DefineTlsFlags(Flags& flags, const std::string& prefix, const std::string& port) {
  flags.Define(prefix + "-cert", "",
               absl::StrCat("PEM certificate (then intermediates): serve ", port,
                            " over TLS (with --", prefix, "-key; re-read when changed)"));
  flags.Define(prefix + "-key", "", absl::StrCat("PEM private key of --", prefix, "-cert"));
  flags.Define(prefix + "-client-ca", "",
               absl::StrCat("PEM CA certificates: ", port,
                            " requires client certificates signed by them (mTLS)"));
}

absl::StatusOr<TlsFiles> TlsFilesFromFlags(const Flags& flags, const std::string& prefix) {
  TlsFiles files{flags.Get(prefix + "-cert"), flags.Get(prefix + "-key"),
                 flags.Get(prefix + "-client-ca")};
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        files.cert_file.empty() ? absl::StrCat("--", prefix, "-key: needs --", prefix, "-cert")
                                : absl::StrCat("--", prefix, "-cert: needs --", prefix, "-key"));
  }
  if (!files.client_ca_file.empty() && files.cert_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", prefix, "-client-ca: needs --", prefix, "-cert and --", prefix, "-key"));
  }
  if (files.enabled()) {
    if (absl::Status checked = CheckTlsFiles(files, prefix); !checked.ok()) return checked;
  }
  return files;
}

int ExitCodeFor(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

void DefineXdsServerFlags(Flags& flags) {
  const XdsServerOptions d;
  flags.Define("grpc-keepalive-time", DurationFlag(d.keepalive_time),
               "the server pings each connection this often (0: never)");
  flags.Define("grpc-keepalive-timeout", DurationFlag(d.keepalive_timeout),
               "close a connection whose ping, or any data sent on it, is not acknowledged "
               "within this (gRPC sets it as the TCP user timeout)");
  flags.Define("grpc-min-client-ping-interval", DurationFlag(d.min_client_ping_interval),
               "clients pinging more often are sent GOAWAY too_many_pings");
  flags.Define("grpc-keepalive-permit-without-calls",
               d.keepalive_permit_without_calls ? "true" : "false",
               "allow pings on connections without calls", /*is_bool=*/true);
  flags.Define("grpc-max-connection-age", DurationFlag(d.max_connection_age),
               "send GOAWAY to a connection this old, +-10% (0: never)");
  flags.Define("grpc-max-connection-age-grace", DurationFlag(d.max_connection_age_grace),
               "then close it after this, ending its streams with UNAVAILABLE");
  flags.Define("grpc-max-concurrent-streams", absl::StrCat(d.max_concurrent_streams),
               "streams per connection; clients queue more");
  flags.Define("grpc-memory-budget-bytes", absl::StrCat(d.memory_budget_bytes),
               "memory gRPC's transport may use for the server (0: unlimited)");
  flags.Define("max-request-bytes", absl::StrCat(d.ads.max_request_bytes),
               "largest request message; larger ones end the stream with RESOURCE_EXHAUSTED");
  flags.Define("max-names-per-stream", absl::StrCat(d.ads.stream_limits.max_names),
               "names subscribed per stream, cumulative across delta requests");
  flags.Define("max-types-per-stream", absl::StrCat(d.ads.stream_limits.max_types),
               "distinct type URLs per stream");
  flags.Define("max-subscription-bytes-per-stream", absl::StrCat(d.ads.stream_limits.max_bytes),
               "bytes of names and locator parameters subscribed per stream, cumulative");
  flags.Define("max-subscription-bytes-per-connection",
               absl::StrCat(d.ads.max_subscription_memory_per_connection),
               "memory the subscriptions of all streams on one connection may hold (0: unlimited)");
  flags.Define("max-subscription-bytes", absl::StrCat(d.ads.max_subscription_memory),
               "memory the subscriptions of all streams may hold (0: unlimited)");
  flags.Define("max-nack-records", absl::StrCat(d.ads.max_nack_records),
               "NACK records kept; later ones are only counted");
  flags.Define("max-error-detail-bytes", absl::StrCat(d.ads.max_error_detail_bytes),
               "bytes of a NACK's error detail kept and logged");
  flags.Define("write-stall-timeout", DurationFlag(d.ads.write_stall_timeout),
               "cancel a stream whose write has not completed for this long (0: never)");
  flags.Define("response-memory-budget-bytes", absl::StrCat(d.ads.response_memory_budget_bytes),
               "bytes of responses being written at once; more wait (0: unlimited)");
  flags.Define("push-walkers", absl::StrCat(d.ads.push_walkers),
               "threads that push a change waking many streams (0: the CPUs the process may run "
               "on, at most 4)");
  flags.Define("csds-readers", "",
               "client identities (SPIFFE IDs, spiffe://td/path/* or DNS SANs, comma-separated) "
               "whose CSDS calls see every client; others see only their own identity's");
  DefineTlsFlags(flags, "xds-tls", "the xDS port");
}

absl::StatusOr<XdsServerOptions> XdsServerOptionsFromFlags(const Flags& flags) {
  XdsServerOptions options;
  struct DurationField {
    const char* flag;
    absl::Duration* field;
  };
  for (const DurationField& f : {
           DurationField{"grpc-keepalive-time", &options.keepalive_time},
           DurationField{"grpc-keepalive-timeout", &options.keepalive_timeout},
           DurationField{"grpc-min-client-ping-interval", &options.min_client_ping_interval},
           DurationField{"grpc-max-connection-age", &options.max_connection_age},
           DurationField{"grpc-max-connection-age-grace", &options.max_connection_age_grace},
           DurationField{"write-stall-timeout", &options.ads.write_stall_timeout},
       }) {
    absl::StatusOr<absl::Duration> d = ParseDurationFlag(flags, f.flag);
    if (!d.ok()) return d.status();
    *f.field = *d;
  }
  if (options.keepalive_time != absl::ZeroDuration() &&
      options.keepalive_timeout == absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--grpc-keepalive-timeout: must be more than 0 while --grpc-keepalive-time is set");
  }
  options.keepalive_permit_without_calls = flags.GetBool("grpc-keepalive-permit-without-calls");
  struct IntField {
    const char* flag;
    int64_t min;
    int64_t max;
    std::function<void(int64_t)> set;
  };
  for (const IntField& f : {
           IntField{"grpc-max-concurrent-streams", 1, INT_MAX,
                    [&](int64_t v) { options.max_concurrent_streams = static_cast<int>(v); }},
           IntField{"grpc-memory-budget-bytes", 0, INT64_MAX,
                    [&](int64_t v) { options.memory_budget_bytes = v; }},
           IntField{"max-request-bytes", 1, INT_MAX,
                    [&](int64_t v) { options.ads.max_request_bytes = static_cast<int>(v); }},
           IntField{"max-names-per-stream", 1, INT_MAX,
                    [&](int64_t v) { options.ads.stream_limits.max_names = static_cast<int>(v); }},
           IntField{"max-types-per-stream", 1, INT_MAX,
                    [&](int64_t v) { options.ads.stream_limits.max_types = static_cast<int>(v); }},
           IntField{"max-subscription-bytes-per-stream", 1, INT64_MAX,
                    [&](int64_t v) { options.ads.stream_limits.max_bytes = v; }},
           IntField{"max-subscription-bytes-per-connection", 0, INT64_MAX,
                    [&](int64_t v) { options.ads.max_subscription_memory_per_connection = v; }},
           IntField{"max-subscription-bytes", 0, INT64_MAX,
                    [&](int64_t v) { options.ads.max_subscription_memory = v; }},
           IntField{"max-nack-records", 0, INT_MAX,
                    [&](int64_t v) { options.ads.max_nack_records = static_cast<int>(v); }},
           IntField{"max-error-detail-bytes", 0, INT_MAX,
                    [&](int64_t v) { options.ads.max_error_detail_bytes = static_cast<int>(v); }},
           IntField{"response-memory-budget-bytes", 0, INT64_MAX,
                    [&](int64_t v) { options.ads.response_memory_budget_bytes = v; }},
           IntField{"push-walkers", 0, 64,
                    [&](int64_t v) { options.ads.push_walkers = static_cast<int>(v); }},
       }) {
    absl::StatusOr<int64_t> value = ParseIntFlag(flags, f.flag, f.min, f.max);
    if (!value.ok()) return value.status();
    f.set(*value);
  }
  if (const std::string readers = flags.Get("csds-readers"); !readers.empty()) {
    absl::StatusOr<std::vector<xds::AllowedClient>> parsed = xds::ParseAllowedClientList(readers);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--csds-readers: ", parsed.status().message()));
    }
    options.ads.csds_readers = *std::move(parsed);
  }
  absl::StatusOr<TlsFiles> tls = TlsFilesFromFlags(flags, "xds-tls");
  if (!tls.ok()) return tls.status();
  options.tls = *std::move(tls);
  return options;
}

std::string DescribeXdsServerBounds(const XdsServerOptions& o) {
  auto or_never = [](absl::Duration d) {
    return d == absl::ZeroDuration() ? std::string("never") : DurationFlag(d);
  };
  return absl::StrCat(
      "xDS server bounds: ",
      o.keepalive_time == absl::ZeroDuration()
          ? std::string("no server pings")
          : absl::StrCat("server pings every ", DurationFlag(o.keepalive_time), " (timeout ",
                         DurationFlag(o.keepalive_timeout), ")"),
      "; clients may ping every ", DurationFlag(o.min_client_ping_interval),
      o.keepalive_permit_without_calls ? " (also without calls)" : " (only with calls)",
      o.max_connection_age == absl::ZeroDuration()
          ? std::string("; no connection age limit")
          : absl::StrCat("; connections get GOAWAY at age ", DurationFlag(o.max_connection_age),
                         " and close ", DurationFlag(o.max_connection_age_grace), " later"),
      "; ", o.max_concurrent_streams, " streams per connection; requests up to ",
      o.ads.max_request_bytes, " bytes; gRPC memory budget ",
      o.memory_budget_bytes == 0 ? std::string("unlimited")
                                 : absl::StrCat(o.memory_budget_bytes, " bytes"),
      "; response memory budget ",
      o.ads.response_memory_budget_bytes == 0
          ? std::string("unlimited")
          : absl::StrCat(o.ads.response_memory_budget_bytes, " bytes"),
      "; per stream: ", o.ads.stream_limits.max_names, " names of up to ",
      o.ads.stream_limits.max_bytes, " bytes, ", o.ads.stream_limits.max_types,
      " types, write stall ", or_never(o.ads.write_stall_timeout),
      "; subscription memory per connection ",
      o.ads.max_subscription_memory_per_connection == 0
          ? std::string("unlimited")
          : absl::StrCat(o.ads.max_subscription_memory_per_connection, " bytes"),
      ", in all ",
      o.ads.max_subscription_memory == 0 ? std::string("unlimited")
                                         : absl::StrCat(o.ads.max_subscription_memory, " bytes"),
      "; ", o.ads.max_nack_records, " NACK records of up to ", o.ads.max_error_detail_bytes,
      " bytes");
}

namespace {

// Returns why HOST:PORT cannot be bound (in use, not a local address, not
// resolvable), in one line, or OK. gRPC reports a failed bind only as a
// kilobyte of its internal error tree on stderr, so the serving commands try
// the address first (the socket is closed again at once; port 0 always binds).
absl::Status CheckCanBind(const std::string& host, int port) {
  if (port == 0) return absl::OkStatus();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const std::string service = std::to_string(port);
  if (int error = getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses); error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", host, ":", port, ": ", gai_strerror(error)));
  }
  absl::Status status = absl::OkStatus();
  for (addrinfo* a = addresses; a != nullptr && status.ok(); a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
      status = absl::UnavailableError(
          absl::StrCat("cannot listen on ", host, ":", port, ": ", std::strerror(errno)));
    }
    close(fd);
  }
  freeaddrinfo(addresses);
  return status;
}

}  // namespace

absl::StatusOr<XdsListener> StartXdsListener(const std::string& address, xds::AdsService& ads,
                                             const XdsServerOptions& options) {
  auto host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  if (absl::Status bindable = CheckCanBind(host_port->first, host_port->second); !bindable.ok()) {
    return bindable;
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, XdsServerCredentials(options.tls), &port);
  builder.RegisterService(&ads);
  builder.RegisterService(&ads.client_status_service());  // CSDS on the same port.
  builder.SetMaxReceiveMessageSize(options.ads.max_request_bytes);
  // gRPC sets SO_REUSEPORT by default: a second process could then share the
  // port silently. Fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             ChannelArgMillis(options.keepalive_time, /*zero_is_unlimited=*/true));
  builder.AddChannelArgument(
      GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
      ChannelArgMillis(options.keepalive_timeout, /*zero_is_unlimited=*/false));
  // Keep pinging a connection whose streams are quiet (an ADS stream can be
  // silent for hours): gRPC otherwise stops after two pings without data.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      ChannelArgMillis(options.min_client_ping_interval, /*zero_is_unlimited=*/false));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                             options.keepalive_permit_without_calls ? 1 : 0);
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_AGE_MS,
      ChannelArgMillis(options.max_connection_age, /*zero_is_unlimited=*/true));
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
      ChannelArgMillis(options.max_connection_age_grace, /*zero_is_unlimited=*/false));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  if (options.memory_budget_bytes > 0) {
    grpc::ResourceQuota quota("facet-xds");
    quota.Resize(static_cast<size_t>(options.memory_budget_bytes));
    builder.SetResourceQuota(quota);
  }
  XdsListener listener;
  listener.server = builder.BuildAndStart();
  if (listener.server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  spdlog::info("{}", DescribeXdsServerBounds(options));
  std::vector<std::string> readers;
  for (const xds::AllowedClient& reader : options.ads.csds_readers) readers.push_back(reader.value);
  spdlog::info("CSDS: callers see the clients with their own identity{}",
               readers.empty() ? std::string()
                               : absl::StrCat("; every client: ", absl::StrJoin(readers, ", ")));
  if (options.tls.enabled()) {
    spdlog::info(
        "xDS over TLS with {}{}", options.tls.cert_file,
        options.tls.client_ca_file.empty()
            ? std::string()
            : absl::StrCat("; client certificates must be signed by ", options.tls.client_ca_file));
  }
  std::string host = host_port->first;
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  listener.address = JoinHostPort(host, port);
  return listener;
}

void DefineServingFlags(Flags& flags, const ServingFlagDefaults& defaults) {
  flags.Define("xds-address", "0.0.0.0:18000", "HOST:PORT for the ADS server (port 0: any free)");
  flags.Define("admin-address", defaults.admin_address,
               absl::StrCat("HOST:PORT for ", defaults.admin_endpoints, " (empty: disabled)"));
  flags.Define("node-metadata-params", "",
               "PARAM[=METADATA_KEY],... taken from node.metadata for plain-name subscriptions "
               "(empty: every top-level string field)");
  flags.Define("ready-file", "",
               "write {\"xds_address\",\"admin_address\"} JSON here once serving");
  flags.Define("log-level", "info", "trace, debug, info, warn or error");
  DefineXdsServerFlags(flags);
  DefineTlsFlags(flags, "admin-tls", "the admin port");
}

}  // namespace facet::controller
