// What the SotW and delta halves of StreamState share besides the class
// itself: request checks, subscription keys and the version of what is held.
// Only for stream_state*.cc.
#ifndef FACET_XDS_SERVER_ADS_STREAM_STATE_INTERNAL_H_
#define FACET_XDS_SERVER_ADS_STREAM_STATE_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "xds_server/resources/resource_type.h"
#include "xds_server/snapshot/snapshot.h"

namespace facet::xds::stream_state_internal {

// The name that subscribes to every resource of a type.
inline constexpr char kWildcard[] = "*";

// Whether SotW responses of `type` (null: a type Facet does not serve)
// carry the complete set (ResourceType::full_state).
inline bool IsFullStateType(const ResourceType* type) {
  return type != nullptr && type->full_state();
}

// Returns `name` normalised, or as it is when it does not normalise (it is
// then answered as a name that does not exist).
std::string CanonicalName(const std::string& name);

// What a subscription counts against Limits::max_bytes: its name and a
// locator's parameters.
template <typename ParameterMap>
int64_t SubscriptionBytes(size_t name_size, bool locator, const ParameterMap& params) {
  int64_t bytes = static_cast<int64_t>(name_size);
  if (!locator) return bytes;
  for (const auto& [key, value] : params) bytes += static_cast<int64_t>(key.size() + value.size());
  return bytes;
}

// Refuse a type URL (in a `request` of that message name) or a resource
// name (in `field`) no served resource can have: they would otherwise be
// kept (and logged) at any size. InvalidArgument naming the bound.
absl::Status CheckTypeUrl(const std::string& type_url, absl::string_view request);
absl::Status CheckName(const std::string& name, const std::string& type_url,
                       absl::string_view field);

// Returns the key of a subscription or held variant: its form (locator or
// plain) and `rest` (canonical parameters, or a variant version).
inline std::string FormKey(bool locator, const std::string& rest) {
  return absl::StrCat(locator ? "L" : "P", rest);
}

// Returns HeldVariantDigest(name, locator, variant.version), a held
// variant's share of its type's version_info: the variant's kept digest when
// `name` is its served name, as a stream's (normalised) names are.
inline uint64_t HeldDigest(const std::string& name, bool locator, const Variant& variant) {
  return name == variant.name ? variant.HeldDigest(locator)
                              : HeldVariantDigest(name, locator, variant.version);
}

// Sets *version to a type's version_info (and delta system_version_info)
// for the sum (mod 2^64) of its held variants' HeldDigest: sixteen lowercase
// hex digits, order-independent and the same on every replica and build.
// Written into the string's own room: no allocation once it has 16 bytes.
void SetDigestVersion(uint64_t digest, std::string* version);
inline std::string DigestVersion(uint64_t digest) {
  std::string version;
  SetDigestVersion(digest, &version);
  return version;
}

}  // namespace facet::xds::stream_state_internal

#endif  // FACET_XDS_SERVER_ADS_STREAM_STATE_INTERNAL_H_
