// Checks of the encoded resources Facet serves or relays, made on the bytes
// themselves: what every client's protobuf parser requires of them, and the
// bounds a resource has however it reached Facet (a manifest, the Kubernetes
// API, an upstream server).
#ifndef FACET_XDS_SERVER_RESOURCES_WIRE_CHECK_H_
#define FACET_XDS_SERVER_RESOURCES_WIRE_CHECK_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "xds_server/json/proto_json.h"
#include "xds_server/resources/resource_type.h"

namespace facet::xds {

// Largest encoded resource message Facet serves or relays, in bytes: the
// bound on a resource's JSON form, applied to its encoded form too.
inline constexpr size_t kMaxResourceBytes = json::kMaxMessageJsonBytes;

// A problem found in an encoded message.
struct EncodedProblem {
  std::string field;   // Path inside the message ("virtual_hosts[0].name"); empty: all of it.
  std::string reason;  // E.g. "is not valid UTF-8 (at byte 3)".

  // Returns "<field>: <reason>", or the reason alone.
  std::string ToString() const;
};

// Checks `bytes`, an encoded message of `descriptor`, field by field without
// building the message: every string field, at any depth (inside the value of
// a google.protobuf.Any of a generated type too), is valid UTF-8, as proto3
// parsers require; no repeated field holds more than
// json::kMaxRepeatedFieldItems items. Returns the first problem, or nullopt.
// Bytes that are not a well-formed encoding past what was checked are left
// for protobuf's parser to refuse.
std::optional<EncodedProblem> CheckEncodedMessage(const google::protobuf::Descriptor& descriptor,
                                                  absl::string_view bytes);

// Checks one encoded resource of `type`: at most kMaxResourceBytes, then
// CheckEncodedMessage.
std::optional<EncodedProblem> CheckEncodedResource(const ResourceType& type,
                                                   absl::string_view bytes);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_RESOURCES_WIRE_CHECK_H_
