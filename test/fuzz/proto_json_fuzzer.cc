// Fuzzes strict proto JSON decoding (xds_server/json/proto_json). The first
// byte picks the message type (the served xDS types, the TP2 constraints and
// the ADS request); the rest is the YAML or JSON text. A message that decodes
// is printed as proto JSON by protobuf and must decode again to an equal
// message. (JSON and YAML differ in one place the round trip can reach: YAML
// limits an implicit mapping key to 1,024 characters of source text, so a
// printed Struct key longer than that, "\u0000" two hundred times say, is
// JSON that yaml-cpp rightly refuses.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "xds_server/json/proto_json.h"
#include "yaml-cpp/yaml.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using facet::fuzz::Check;

std::unique_ptr<google::protobuf::Message> NewMessage(uint8_t selector) {
  switch (selector % 6) {
    case 0:
      return std::make_unique<envoy::config::listener::v3::Listener>();
    case 1:
      return std::make_unique<envoy::config::route::v3::RouteConfiguration>();
    case 2:
      return std::make_unique<envoy::config::cluster::v3::Cluster>();
    case 3:
      return std::make_unique<envoy::config::endpoint::v3::ClusterLoadAssignment>();
    case 4:
      return std::make_unique<envoy::service::discovery::v3::DynamicParameterConstraints>();
    default:
      return std::make_unique<envoy::service::discovery::v3::DiscoveryRequest>();
  }
}

// Whether `value` has an object key longer than YAML's 1,024-character limit
// for implicit keys, counted as protobuf prints it (escaped, quotes included;
// yaml-cpp refuses a quoted key of 1,025 characters and reads one of 1,024).
bool HasOverlongKey(const google::protobuf::Value& value) {
  if (value.has_list_value()) {
    for (const google::protobuf::Value& element : value.list_value().values()) {
      if (HasOverlongKey(element)) return true;
    }
  }
  if (!value.has_struct_value()) return false;
  for (const auto& [key, field] : value.struct_value().fields()) {
    google::protobuf::Value printed_key;
    printed_key.set_string_value(key);
    std::string quoted;
    Check(google::protobuf::util::MessageToJsonString(printed_key, &quoted).ok());
    if (quoted.size() > 1024 || HasOverlongKey(field)) return true;
  }
  return false;
}

// The same for protobuf's JSON text `json`.
bool HasOverlongKey(const std::string& json) {
  google::protobuf::Value value;
  Check(google::protobuf::util::JsonStringToMessage(json, &value).ok());
  return HasOverlongKey(value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::unique_ptr<google::protobuf::Message> message = NewMessage(data[0]);
  YAML::Node node;
  try {
    node = YAML::Load(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const YAML::Exception&) {
    return 0;
  }
  if (!facet::json::ParseMessage(node, "spec.resource", message.get()).ok()) return 0;

  std::string json;
  Check(google::protobuf::util::MessageToJsonString(*message, &json).ok());
  YAML::Node printed;
  try {
    printed = YAML::Load(json);
  } catch (const YAML::Exception&) {
    // protobuf's JSON is valid YAML but for keys over YAML's length limit.
    Check(HasOverlongKey(json));
    return 0;
  }
  std::unique_ptr<google::protobuf::Message> again = NewMessage(data[0]);
  Check(facet::json::ParseMessage(printed, "spec.resource", again.get()).ok());
  Check(google::protobuf::util::MessageDifferencer::Equals(*message, *again));
  return 0;
}
