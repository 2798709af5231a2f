// The relay's configuration file: JSON in the shape of a gRPC xDS bootstrap
// (gRFC A47): the upstream servers, per-authority servers, and the relay's own
// node.
#ifndef FACET_XDS_SERVER_RELAY_CONFIG_RELAY_CONFIG_H_
#define FACET_XDS_SERVER_RELAY_CONFIG_RELAY_CONFIG_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "envoy/config/core/v3/base.pb.h"
#include "xds_server/upstream/upstream_client.h"

namespace facet::xds {

// Bounds on a relay configuration, so that a mistaken file cannot make the
// relay read, hold or dial without limit.
inline constexpr std::size_t kMaxRelayConfigBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr std::size_t kMaxRelayAuthorities = 1000;
// Longest xds_servers, channel_creds or server_features list.
inline constexpr std::size_t kMaxRelayListLength = 64;

// A parsed relay configuration. Immutable once parsed; safe to read from any
// thread.
struct RelayConfig {
  // Upstreams for old-style names and for authorities without their own
  // list, in failover order. Never empty.
  std::vector<UpstreamServer> xds_servers;
  // Authority name -> its servers in failover order (the top-level list when
  // the authority sets no xds_servers).
  std::map<std::string, std::vector<UpstreamServer>> authorities;
  // The relay's identity upstream.
  envoy::config::core::v3::Node node;
};

// Parses a relay configuration. Unknown fields, wrong JSON types and bad
// values are InvalidArgument errors naming `source` and the field path (e.g.
// `relay.json: authorities["a.example"].xds_servers[0].server_uri: must not
// be empty`); malformed JSON is InvalidArgument naming the line and column.
// Bootstrap fields a relay does not use (listener name templates,
// certificate_providers) are accepted and ignored. Of each server's
// channel_creds the first entry of a type the relay supports ("insecure",
// "tls") is used; it is an error if there is none. A "tls" entry's config
// takes gRFC A65's ca_certificate_file, certificate_file and
// private_key_file (the last two together); each must name a readable
// regular file of at most kMaxCertificateFileBytes (read here, without
// blocking; the only access to the file system). Inputs above the bounds
// above are InvalidArgument. Messages are escaped (EscapeText): they may
// quote the configuration's bytes. Thread-safe.
absl::StatusOr<RelayConfig> ParseRelayConfig(absl::string_view json, absl::string_view source);

// Reads and parses the file at `path` (errors name the path): NotFound if it
// does not exist, PermissionDenied if it may not be read, FailedPrecondition
// if it is not a regular file (a FIFO is refused at once, not waited on),
// InvalidArgument if it is larger than kMaxRelayConfigBytes or does not
// parse.
absl::StatusOr<RelayConfig> LoadRelayConfig(const std::string& path);

// Returns the servers a resource name is fetched from: the authority's for
// `xdstp://AUTHORITY/...` names (the authority compared after percent-decoding,
// case-sensitively), the top-level list for old-style names. The pointer
// borrows from `config`. NotFound (naming the authority) for an xdstp name
// whose authority the configuration does not list; InvalidArgument for an
// xdstp name that does not parse (see ParseXdstpName).
absl::StatusOr<const std::vector<UpstreamServer>*> ServersFor(const RelayConfig& config,
                                                              absl::string_view name);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_RELAY_CONFIG_RELAY_CONFIG_H_
