// Strict proto3-JSON decoding of YAML/JSON documents into protobuf messages.
//
// protobuf's own JSON parser (3.21) accepts several things proto3 JSON does
// not allow (a scalar where a list is expected, "yes" for a bool) and loses
// the field path inside google.protobuf.Any. ParseMessage first checks the
// document against the message descriptor, with exact paths, then converts it
// with protobuf's parser.
#ifndef FACET_XDS_SERVER_JSON_PROTO_JSON_H_
#define FACET_XDS_SERVER_JSON_PROTO_JSON_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "yaml-cpp/yaml.h"

namespace facet::json {

// Longest JSON form of one message ParseMessage accepts (a variant's
// resource, its constraints), in bytes.
inline constexpr size_t kMaxMessageJsonBytes = 1024 * 1024;
// Most items in one repeated field, or entries in one map field, of a
// message ParseMessage accepts.
inline constexpr size_t kMaxRepeatedFieldItems = 10'000;

// Parses `node` into `message` (which is cleared first). Field names may be
// proto names or lowerCamel JSON names. Types inside google.protobuf.Any are
// resolved from the generated descriptor pool. Fails with InvalidArgument whose
// message starts with the path of the offending node (`path` is the node's own
// path, e.g. "spec.variants[0].resource") and says what was expected, or
// which limit (kMaxMessageJsonBytes, kMaxRepeatedFieldItems) was exceeded.
absl::Status ParseMessage(const YAML::Node& node, absl::string_view path,
                          google::protobuf::Message* message);

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_JSON_PROTO_JSON_H_
