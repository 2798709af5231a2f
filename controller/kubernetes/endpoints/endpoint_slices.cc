#include "controller/kubernetes/endpoints/endpoint_slices.h"

#include <map>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"

namespace facet::controller {
namespace {

using kube::FieldAt;
using kube::StringAt;

// A condition that is absent reads as `missing`.
bool Condition(const YAML::Node& endpoint, absl::string_view name, bool missing) {
  const YAML::Node value = FieldAt(endpoint, {"conditions", name});
  if (!value.IsDefined() || !value.IsScalar()) return missing;
  return value.Scalar() == "true";
}

// Returns the port of `slice` that `from` names, or 0.
int ResolvePort(const YAML::Node& slice, const xds::EndpointsFrom& from) {
  const YAML::Node ports = FieldAt(slice, {"ports"});
  if (from.match_name_only) {
    if (!ports.IsDefined() || !ports.IsSequence()) return 0;
    for (const YAML::Node& port : ports) {
      int number = 0;
      if (StringAt(port, {"name"}) == from.port_name &&
          absl::SimpleAtoi(StringAt(port, {"port"}), &number)) {
        return number;
      }
    }
    return 0;
  }
  if (!ports.IsDefined() || !ports.IsSequence() || ports.size() == 0) {
    // No ports: the slice covers all ports; only a number can be used.
    return from.port_number;
  }
  for (const YAML::Node& port : ports) {
    int number = 0;
    const bool has_number = absl::SimpleAtoi(StringAt(port, {"port"}), &number);
    if (!from.port_name.empty()) {
      if (StringAt(port, {"name"}) == from.port_name && has_number) return number;
    } else if (!has_number || number == from.port_number) {
      // A port without a number means "all ports".
      return from.port_number;
    }
  }
  return 0;
}

}  // namespace

SlicedEndpoints ClusterLoadAssignmentFromSlices(const std::vector<YAML::Node>& slices,
                                                const xds::EndpointsFrom& from,
                                                absl::string_view field) {
  SlicedEndpoints out;
  auto warn = [&](const std::string& message) {
    out.findings.push_back(
        {xds::Severity::kWarning, "EndpointsFromService", std::string(field), message});
  };
  const std::string port_text = from.match_name_only && from.port_name.empty() ? "(unnamed)"
                                : from.port_name.empty() ? absl::StrCat(from.port_number)
                                                         : from.port_name;
  // zone -> (address, port) -> draining
  std::map<std::string, std::map<std::pair<std::string, int>, bool>> zones;
  for (const YAML::Node& slice : slices) {
    const std::string name = StringAt(slice, {"metadata", "name"});
    const std::string type = StringAt(slice, {"addressType"});
    if (type != "IPv4" && type != "IPv6") {
      warn(absl::StrCat("EndpointSlice ", name, " has addressType ", type.empty() ? "(none)" : type,
                        "; only IPv4 and IPv6 slices are used"));
      continue;
    }
    const int port = ResolvePort(slice, from);
    if (port <= 0 || port > 65535) {
      warn(absl::StrCat("EndpointSlice ", name, " has no port ", port_text, "; it is skipped"));
      continue;
    }
    for (const YAML::Node& endpoint : FieldAt(slice, {"endpoints"})) {
      const bool ready = Condition(endpoint, "ready", true);
      const bool terminating = Condition(endpoint, "terminating", false);
      const bool serving = Condition(endpoint, "serving", ready);
      if (!ready && !(serving && terminating)) continue;
      const std::string zone = StringAt(endpoint, {"zone"});
      for (const YAML::Node& address : FieldAt(endpoint, {"addresses"})) {
        if (!address.IsScalar() || address.Scalar().empty()) continue;
        // Ready wins when the same address is listed twice.
        auto [it, inserted] = zones[zone].emplace(std::make_pair(address.Scalar(), port), !ready);
        if (!inserted && ready) it->second = false;
      }
    }
  }
  YAML::Node endpoints(YAML::NodeType::Sequence);
  size_t ready_count = 0;
  for (const auto& [zone, addresses] : zones) {
    YAML::Node locality;
    if (!zone.empty()) locality["locality"]["zone"] = zone;
    else locality["locality"] = YAML::Node(YAML::NodeType::Map);
    locality["load_balancing_weight"] = 1;
    YAML::Node lb_endpoints(YAML::NodeType::Sequence);
    for (const auto& [address_port, draining] : addresses) {
      YAML::Node lb_endpoint;
      YAML::Node socket = lb_endpoint["endpoint"]["address"]["socket_address"];
      socket["address"] = address_port.first;
      socket["port_value"] = address_port.second;
      lb_endpoint["health_status"] = draining ? "DRAINING" : "HEALTHY";
      if (!draining) ++ready_count;
      lb_endpoints.push_back(lb_endpoint);
    }
    locality["lb_endpoints"] = lb_endpoints;
    endpoints.push_back(locality);
  }
  out.resource = YAML::Node(YAML::NodeType::Map);
  out.resource["endpoints"] = endpoints;
  if (ready_count == 0) {
    warn(absl::StrCat("Service ", from.service, " has no ready endpoints on port ", port_text,
                      slices.empty() ? " (no EndpointSlices)" : "",
                      "; clients selecting this variant get no endpoints"));
  }
  return out;
}

}  // namespace facet::controller
