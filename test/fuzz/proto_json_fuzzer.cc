// Fuzzes strict proto JSON decoding (xds_server/json/proto_json). The first
// byte picks the message type (the served xDS types, the TP2 constraints and
// the ADS request); the rest is the YAML or JSON text. A message that decodes
// is printed as proto JSON by protobuf and must decode again to an equal
// message.
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
    std::abort();  // protobuf's JSON is valid YAML
  }
  std::unique_ptr<google::protobuf::Message> again = NewMessage(data[0]);
  Check(facet::json::ParseMessage(printed, "spec.resource", again.get()).ok());
  Check(google::protobuf::util::MessageDifferencer::Equals(*message, *again));
  return 0;
}
