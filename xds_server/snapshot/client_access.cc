#include "xds_server/snapshot/client_access.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "xds_server/common/digest.h"
#include "xds_server/names/names.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds {
namespace {

constexpr absl::string_view kSpiffeScheme = "spiffe://";
constexpr absl::string_view kPrefixSuffix = "/*";

bool IsTrustDomainChar(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' || c == '-' || c == '_';
}

bool IsPathChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_'; }

// Checks `id` against the SPIFFE ID syntax: "spiffe://" trust-domain path,
// the trust domain of lower-case letters, digits, '.', '-' and '_', each path
// segment non-empty, of letters, digits, '.', '-' and '_', and neither "." nor
// "..".
absl::Status CheckSpiffeId(absl::string_view id) {
  if (id.size() > kMaxSpiffeIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("is ", id.size(), " bytes long; a SPIFFE ID has at most ", kMaxSpiffeIdBytes));
  }
  if (!absl::StartsWith(id, kSpiffeScheme)) {
    return absl::InvalidArgumentError("must start with \"spiffe://\"");
  }
  absl::string_view rest = id.substr(kSpiffeScheme.size());
  const size_t slash = rest.find('/');
  const absl::string_view trust_domain = rest.substr(0, slash);
  if (trust_domain.empty()) {
    return absl::InvalidArgumentError("has an empty trust domain (spiffe://<trust domain>/...)");
  }
  for (char c : trust_domain) {
    if (!IsTrustDomainChar(c)) {
      return absl::InvalidArgumentError(
          "has a trust domain with characters other than lower-case letters, digits, '.', '-' "
          "and '_' (no port, user or upper case)");
    }
  }
  if (slash == absl::string_view::npos) return absl::OkStatus();
  for (absl::string_view segment : absl::StrSplit(rest.substr(slash + 1), '/')) {
    if (segment.empty()) {
      return absl::InvalidArgumentError("has an empty path segment (\"//\" or a trailing '/')");
    }
    if (segment == "." || segment == "..") {
      return absl::InvalidArgumentError("has a \".\" or \"..\" path segment");
    }
    for (char c : segment) {
      if (!IsPathChar(c)) {
        return absl::InvalidArgumentError(
            "has a path with characters other than letters, digits, '.', '-', '_' and '/' "
            "(no query, fragment or percent-encoding)");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDnsName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("is empty");
  if (name.size() > kMaxDnsNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("is ", name.size(), " bytes long; a DNS name has at most ", kMaxDnsNameBytes));
  }
  if (absl::StrContains(name, '*')) {
    return absl::InvalidArgumentError(
        "contains '*': wildcards are not supported; list each DNS name, or use SPIFFE IDs "
        "with a \"spiffe://<trust domain>/<path>/*\" prefix");
  }
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty() || label.size() > 63) {
      return absl::InvalidArgumentError(
          "is not a DNS name: each dot-separated label has 1 to 63 characters (no leading, "
          "trailing or double dot)");
    }
    for (char c : label) {
      if (!absl::ascii_isalnum(c) && c != '-') {
        return absl::InvalidArgumentError("is not a DNS name: labels are letters, digits and '-'");
      }
    }
    if (label.front() == '-' || label.back() == '-') {
      return absl::InvalidArgumentError("is not a DNS name: a label starts or ends with '-'");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ClientIdentity::ToString() const {
  std::vector<std::string> parts;
  if (!spiffe_id.empty()) parts.push_back(spiffe_id);
  if (!dns_names.empty()) parts.push_back(absl::StrCat("dns:", absl::StrJoin(dns_names, ",")));
  return parts.empty() ? "none" : absl::StrJoin(parts, " ");
}

absl::Status CheckAllowedClient(const AllowedClient& client) {
  if (client.kind == AllowedClient::Kind::kDnsName) return CheckDnsName(client.value);
  absl::string_view id = client.value;
  if (absl::EndsWith(id, kPrefixSuffix)) {
    id.remove_suffix(1);  // Keep the '/': "spiffe://td/ns/x/".
    if (id.size() > kSpiffeScheme.size() && id.back() == '/') id.remove_suffix(1);
  }
  if (absl::StrContains(id, '*')) {
    return absl::InvalidArgumentError(
        "contains '*' other than as a whole last path segment (\"spiffe://<trust "
        "domain>/<path>/*\")");
  }
  return CheckSpiffeId(id);
}

bool Admits(const AllowedClient& client, const ClientIdentity& identity) {
  if (client.kind == AllowedClient::Kind::kDnsName) {
    for (const std::string& name : identity.dns_names) {
      if (absl::EqualsIgnoreCase(name, client.value)) return true;
    }
    return false;
  }
  if (identity.spiffe_id.empty()) return false;
  if (!absl::EndsWith(client.value, kPrefixSuffix)) return identity.spiffe_id == client.value;
  // "spiffe://td/ns/x/*": IDs strictly below "spiffe://td/ns/x/", well formed
  // (no "." or ".." segments that would step out of it).
  const absl::string_view prefix =
      absl::string_view(client.value).substr(0, client.value.size() - 1);
  return identity.spiffe_id.size() > prefix.size() &&
         absl::StartsWith(identity.spiffe_id, prefix) && CheckSpiffeId(identity.spiffe_id).ok();
}

bool SameIdentity(const ClientIdentity& a, const ClientIdentity& b) {
  if (a.has_certificate != b.has_certificate) return false;
  if (!a.has_certificate) return true;
  if (a.empty() || b.empty() || a.spiffe_id != b.spiffe_id) return false;
  auto names = [](const ClientIdentity& identity) {
    std::set<std::string> out;
    for (const std::string& name : identity.dns_names) out.insert(absl::AsciiStrToLower(name));
    return out;
  };
  return names(a) == names(b);
}

absl::StatusOr<std::vector<AllowedClient>> ParseAllowedClientList(absl::string_view list) {
  std::vector<AllowedClient> clients;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    AllowedClient client;
    client.kind = absl::StrContains(entry, "://") ? AllowedClient::Kind::kSpiffeId
                                                  : AllowedClient::Kind::kDnsName;
    client.value = std::string(entry);
    if (absl::Status valid = CheckAllowedClient(client); !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          client.kind == AllowedClient::Kind::kSpiffeId ? "SPIFFE ID \"" : "DNS name \"",
          absl::CHexEscape(entry.substr(0, 256)), entry.size() > 256 ? "...\" " : "\" ",
          valid.message()));
    }
    clients.push_back(std::move(client));
  }
  if (clients.size() > kMaxAllowedClients) {
    return absl::InvalidArgumentError(absl::StrCat("has ", clients.size(), " entries; at most ",
                                                   kMaxAllowedClients, " are allowed"));
  }
  return clients;
}

ClientAccess::ClientAccess(Restrictions restricted) : restricted_(std::move(restricted)) {
  std::string text;
  for (const auto& [authority, clients] : restricted_) {
    absl::StrAppend(&text, authority.size(), ":", authority, "[");
    for (const AllowedClient& client : clients) {
      absl::StrAppend(&text, static_cast<int>(client.kind), client.value.size(), ":", client.value);
    }
    text.push_back(']');
  }
  digest_ = Digest64(text);
}

bool ClientAccess::MayRead(absl::string_view name, const ClientIdentity& identity) const {
  if (restricted_.empty() || !IsXdstpName(name)) return true;
  absl::StatusOr<XdstpName> parsed = ParseXdstpName(name);
  if (!parsed.ok()) return false;  // Served names parse; refuse rather than guess.
  auto it = restricted_.find(parsed->authority);
  if (it == restricted_.end()) return true;
  for (const AllowedClient& client : it->second) {
    if (Admits(client, identity)) return true;
  }
  return false;
}

std::set<std::string> ClientAccess::Differences(const ClientAccess* a, const ClientAccess* b) {
  static const Restrictions kNone;
  const Restrictions& before = a == nullptr ? kNone : a->restricted_;
  const Restrictions& after = b == nullptr ? kNone : b->restricted_;
  std::set<std::string> out;
  for (const auto& [authority, clients] : before) {
    auto it = after.find(authority);
    if (it == after.end() || !(it->second == clients)) out.insert(authority);
  }
  for (const auto& [authority, clients] : after) {
    if (before.find(authority) == before.end()) out.insert(authority);
  }
  return out;
}

}  // namespace facet::xds
