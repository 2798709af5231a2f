// Read authorization by client identity: which clients may read the
// resources of an xdstp:// authority whose XdsAuthority lists
// spec.allowedClients, and the identities (from verified client
// certificates) it is checked against.
#ifndef FACET_XDS_SERVER_SNAPSHOT_CLIENT_ACCESS_H_
#define FACET_XDS_SERVER_SNAPSHOT_CLIENT_ACCESS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "xds_server/snapshot/objects.h"

namespace facet::xds {

// Bounds on XdsAuthority spec.allowedClients.
inline constexpr size_t kMaxAllowedClients = 256;
inline constexpr size_t kMaxSpiffeIdBytes = 2048;  // The SPIFFE standard's limit.
inline constexpr size_t kMaxDnsNameBytes = 253;

// Who a client is, from the certificate it presented and the server
// verified (mTLS). Empty for a stream without one: plaintext, or TLS without
// client certificates.
struct ClientIdentity {
  std::string spiffe_id;               // Empty: none (no URI SAN, or more than one).
  std::vector<std::string> dns_names;  // The certificate's DNS SANs.
  // Whether the client presented a certificate the server verified; true
  // also for a certificate with neither a SPIFFE ID nor a DNS SAN.
  bool has_certificate = false;

  bool empty() const { return spiffe_id.empty() && dns_names.empty(); }
  // Returns the identity for logs: "spiffe://..." and/or "dns:a.example,...",
  // or "none".
  std::string ToString() const;
};

// Returns OK when `client` is a valid allowedClients entry, or InvalidArgument
// whose message says why in words (it does not name the field).
absl::Status CheckAllowedClient(const AllowedClient& client);

// Returns whether the valid entry `client` admits `identity`: a SPIFFE ID
// equals the identity's, or, written as "spiffe://td/path/*", the identity's
// is a valid SPIFFE ID below "spiffe://td/path/"; a DNS name equals one of
// the identity's DNS SANs, ignoring ASCII case.
bool Admits(const AllowedClient& client, const ClientIdentity& identity);

// Returns whether `a` and `b` are the same client identity: both without a
// certificate, or both with certificates of the same SPIFFE ID (or none)
// and the same set of DNS SANs (ignoring ASCII case, order and repeats). A
// certificate with neither a SPIFFE ID nor a DNS SAN has no identity to
// compare: it is the same as no other.
bool SameIdentity(const ClientIdentity& a, const ClientIdentity& b);

// Parses a comma-separated list of client identities as a flag takes them:
// each a SPIFFE ID (anything with "://"; "spiffe://td/path/*" for every ID
// below a path) or a DNS name, checked as CheckAllowedClient checks
// allowedClients; 1 to kMaxAllowedClients entries. InvalidArgument naming
// the entry and the reason otherwise.
absl::StatusOr<std::vector<AllowedClient>> ParseAllowedClientList(absl::string_view list);

// The restricted authorities of a snapshot and who may read each.
// Immutable (thread-safe).
class ClientAccess {
 public:
  using Restrictions = std::map<std::string, std::vector<AllowedClient>, std::less<>>;

  // `restricted`: authority -> the clients that may read its resources
  // (each list non-empty and valid). Authorities not in it are open.
  explicit ClientAccess(Restrictions restricted);

  // Returns whether a client with `identity` may read the resource served
  // under the (normalised) name `name`. Old-style names and names of open
  // authorities are readable by every client; a name of a restricted
  // authority only by the clients it lists (never by a client without an
  // identity).
  bool MayRead(absl::string_view name, const ClientIdentity& identity) const;

  // Returns the authorities whose restrictions differ between `a` and `b`
  // (null: nothing is restricted).
  static std::set<std::string> Differences(const ClientAccess* a, const ClientAccess* b);

  const Restrictions& restricted() const { return restricted_; }
  // Returns a digest of the restrictions: equal for equal restrictions.
  uint64_t digest() const { return digest_; }

 private:
  Restrictions restricted_;
  uint64_t digest_ = 0;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_CLIENT_ACCESS_H_
