// What each connected client holds, as the server sees it: the data behind
// CSDS (envoy.service.status.v3) and the admin port's /clients.
#ifndef FACET_XDS_SERVER_ADS_CLIENT_STATUS_H_
#define FACET_XDS_SERVER_ADS_CLIENT_STATUS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "envoy/config/core/v3/base.pb.h"
#include "envoy/service/status/v3/csds.pb.h"
#include "xds_server/constraints/constraints.h"
#include "xds_server/snapshot/client_access.h"

namespace facet::xds {

// The node metadata key under which a ClientConfig's node carries the
// parameters Facet derived from it (a Struct of key -> string value).
inline constexpr char kDerivedParametersKey[] = "facet.dev/parameters";

// One resource variant a client holds or asked for.
struct ResourceStatus {
  enum class State {
    kRequested,     // Subscribed and not answered yet, or sent and not ACKed yet.
    kAcked,         // Sent (or claimed by the client on reconnect) and ACKed.
    kNacked,        // The last response carrying it was NACKed.
    kDoesNotExist,  // Answered: nothing is served for the client's parameters.
  };
  std::string type_url;
  std::string name;
  // The version of the variant the client holds; empty when it holds none.
  std::string version;
  State state = State::kRequested;
  // For kNacked: the rejected variant's version and the client's error
  // detail (shared by every resource of the NACKed response).
  std::string nacked_version;
  std::shared_ptr<const std::string> error_detail;
  // The object serving the name now ("namespace/name"; "" when nothing
  // serves it), and the label and canonical constraints ("" when
  // unconstrained) of the variant the client holds ("" when none).
  std::string object;
  std::string variant;
  std::string constraints;
  // Set while the client has not ACKed the last response carrying the
  // resource (in flight, or NACKed): when the first response it has not
  // ACKed since was sent.
  std::optional<absl::Time> stale_since;
};

// One connected client (one ADS stream).
struct ClientStatus {
  uint64_t stream_id = 0;
  std::string peer;
  // Who the client is by its verified certificate when the xDS port has
  // mTLS (as CSDS sees it); without one, has_certificate is false.
  ClientIdentity identity;
  bool delta = false;
  envoy::config::core::v3::Node node;  // Empty until the first request names one.
  ParameterSet parameters;             // Derived from the node (plain-name subscriptions).
  std::vector<ResourceStatus> resources;
  // Resources left out because the response reached its byte bound.
  int64_t omitted_resources = 0;
};

// Which clients to report and how much.
struct ClientStatusQuery {
  // Only the client(s) whose node id is exactly this; every client when unset.
  bool filter_node_id = false;
  std::string node_id;
  // Only the clients of streams with a greater id (the next page).
  uint64_t after_stream_id = 0;
  // When set, the first client that does not fit ends the report (the rest
  // are counted as omitted), so that the report is a page the next one
  // continues; otherwise later clients that fit are still reported.
  bool prefix_only = false;
  // Stop adding clients and resources once the estimated size of the
  // report reaches this many bytes.
  size_t max_bytes = 4 << 20;
  // When set, the resources of authorities `reader` may not read
  // (ClientAccess::MayRead) are left out of every client, as if nobody held
  // or asked for them: CSDS on the xDS port tells its caller no more about a
  // restricted authority than ADS would.
  std::shared_ptr<const ClientAccess> access;
  ClientIdentity reader;
  // When set, only the clients whose identity is the reader's
  // (SameIdentity) are reported: CSDS on the xDS port shows a caller that is
  // not a CSDS reader only the clients that connected as itself.
  bool only_readers_identity = false;

  // Returns whether the client of a stream with `identity` and `node` (null
  // until its first request names one) is reported.
  bool Selects(const ClientIdentity& identity, const envoy::config::core::v3::Node* node) const;
};

// What the server reports for a query.
struct ClientStatusReport {
  std::vector<ClientStatus> clients;  // By stream id.
  // Clients left out because the report reached its byte bound.
  int64_t omitted_clients = 0;
  int64_t omitted_resources = 0;  // Over every client.
  // Set when clients were left out after the query, to fit a byte bound.
  bool truncated = false;
};

// Returns the bytes a resource status adds to a report (an estimate of its
// encoded size, used for the byte bound).
size_t EstimatedBytes(const ResourceStatus& resource);

// Reads a CSDS request into a query. Supports node_matchers with one
// matcher whose node_id is an exact StringMatcher; anything else is
// Unimplemented with a message naming the field.
absl::StatusOr<ClientStatusQuery> QueryFromRequest(
    const envoy::service::status::v3::ClientStatusRequest& request, size_t max_bytes);

// Returns the CSDS form of a client: its node (with kDerivedParametersKey
// added to the metadata) and one GenericXdsConfig per resource.
envoy::service::status::v3::ClientConfig ToClientConfig(const ClientStatus& client);

// Returns one client as /clients reports it, as JSON without whitespace:
// {"client_config": the ToClientConfig message in proto3 JSON (its fields in
// field order, map keys sorted), "node_id",
// "omitted_resources", "parameters", "peer", "protocol", "resources": [{
// "constraints", "name", "object", "status", "type", "variant", "version",
// and "error_detail", "nacked_version" when NACKED, "stale_since" (RFC 3339,
// UTC) when stale}], "stream_id"}. Keys are sorted (but within
// client_config).
std::string ClientToJson(const ClientStatus& client);

// Returns the report as JSON for the admin port's /clients: {"clients": [one
// ClientToJson a line], "next_after" (when clients were left out: the last
// stream id reported, for ?after=), "omitted_clients", "omitted_resources",
// "truncated" (when set)}. Keys are sorted.
std::string ReportToJson(const ClientStatusReport& report);

// Returns ReportToJson of `report` cut to at most `max_bytes` (the query's
// byte bound is an estimate of the CSDS encoding, and JSON is larger): the
// clients that do not fit, from the first one that does not on, are left out
// and counted in "omitted_clients", and "truncated": true says so (a first
// client too large alone keeps the resources that fit, the rest counted in
// its "omitted_resources"). A report of no clients is never cut. Costs one
// ClientToJson per client kept, and one more.
std::string ReportToJson(ClientStatusReport report, size_t max_bytes);

// Returns the CSDS name of a state: "ACKED", "NACKED", "REQUESTED",
// "DOES_NOT_EXIST".
absl::string_view StateName(ResourceStatus::State state);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_CLIENT_STATUS_H_
