#include "test/kube_api_server/services.h"

#include <arpa/inet.h>

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "test/kube_api_server/names.h"

namespace facet::testing {
namespace {

constexpr uint32_t kCidrBase = (10u << 24) | (96u << 16);  // 10.96.0.0
constexpr uint32_t kCidrSize = 1u << 20;                   // /12
// Dynamic allocation takes the lowest free address above the range's lower
// band (the first 256 addresses, kept for static ones; KEP-3070).
constexpr uint32_t kFirstDynamic = kCidrBase + 256 + 1;  // 10.96.1.1
constexpr int64_t kNodePortFirst = 30000;
constexpr int64_t kNodePortLast = 32767;

std::optional<uint32_t> ParseIpv4(const std::string& text) {
  in_addr address{};
  if (inet_pton(AF_INET, text.c_str(), &address) != 1) return std::nullopt;
  return ntohl(address.s_addr);
}

std::string FormatIpv4(uint32_t ip) {
  return absl::StrFormat("%d.%d.%d.%d", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

bool NeedsClusterIp(const std::string& type) { return type != "ExternalName"; }
bool NeedsNodePorts(const std::string& type) {
  return type == "NodePort" || type == "LoadBalancer";
}

std::string Quoted(const Json& value) {
  return value.is_string() ? absl::StrCat("\"", value.get<std::string>(), "\"") : Dump(value);
}

std::string ClusterIpsValue(const std::string& ip) {
  return absl::StrCat("[]string{\"", ip, "\"}");
}

// The cluster IP as written: spec.clusterIP, else spec.clusterIPs[0].
std::string RequestedClusterIp(const Json& spec) {
  std::string ip = GetString(spec, {"clusterIP"});
  if (ip.empty()) {
    const Json* ips = Find(spec, "clusterIPs");
    if (ips != nullptr && ips->is_array() && !ips->empty() && ips->at(0).is_string()) {
      ip = ips->at(0).get<std::string>();
    }
  }
  return ip;
}

void SetClusterIp(Json& spec, const std::string& ip) {
  spec["clusterIP"] = ip;
  spec["clusterIPs"] = Json::array({ip});
}

// Applies SetDefaults_Service and checks the fields every Service has (type,
// ports); allocation is the caller's.
std::optional<FieldError> DefaultAndValidate(Json& service) {
  Json& spec = Member(service, "spec");
  if (!Find(spec, "type")) spec["type"] = "ClusterIP";
  const std::string type = GetString(spec, {"type"});
  if (type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer" &&
      type != "ExternalName") {
    return FieldError{"spec.type",
                      absl::StrCat("Unsupported value: ", Quoted(spec["type"]),
                                   ": supported values: \"ClusterIP\", \"ExternalName\", "
                                   "\"LoadBalancer\", \"NodePort\"")};
  }
  if (!Find(spec, "sessionAffinity")) spec["sessionAffinity"] = "None";
  if (type == "ExternalName") {
    if (GetString(spec, {"externalName"}).empty()) {
      return FieldError{"spec.externalName", "Required value"};
    }
    if (!RequestedClusterIp(spec).empty()) {
      return FieldError{"spec.clusterIPs",
                        absl::StrCat("Invalid value: ", ClusterIpsValue(RequestedClusterIp(spec)),
                                     ": may not be set for ExternalName services")};
    }
  } else {
    if (!Find(spec, "internalTrafficPolicy")) spec["internalTrafficPolicy"] = "Cluster";
    if (!Find(spec, "ipFamilies")) spec["ipFamilies"] = Json::array({"IPv4"});
    if (!Find(spec, "ipFamilyPolicy")) spec["ipFamilyPolicy"] = "SingleStack";
  }
  if (NeedsNodePorts(type) && !Find(spec, "externalTrafficPolicy")) {
    spec["externalTrafficPolicy"] = "Cluster";
  }
  if (type == "LoadBalancer" && !Find(spec, "allocateLoadBalancerNodePorts")) {
    spec["allocateLoadBalancerNodePorts"] = true;
  }
  Json& ports = spec["ports"];
  if (ports.is_null()) ports = Json::array();
  if (!ports.is_array()) return FieldError{"spec.ports", "Invalid value: must be a list"};
  if (ports.empty()) {
    spec.erase("ports");
    if (type != "ExternalName") return FieldError{"spec.ports", "Required value"};
    return std::nullopt;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string field = absl::StrCat("spec.ports[", i, "]");
    Json& port = ports[i];
    if (!port.is_object()) return FieldError{field, "Invalid value: must be an object"};
    const Json* number = Find(port, "port");
    int64_t value = number != nullptr && number->is_number_integer() ? number->get<int64_t>() : 0;
    if (value < 1 || value > 65535) {
      return FieldError{absl::StrCat(field, ".port"),
                        absl::StrCat("Invalid value: ", number != nullptr ? Dump(*number) : "0",
                                     ": must be between 1 and 65535, inclusive")};
    }
    if (!Find(port, "protocol")) port["protocol"] = "TCP";
    const std::string protocol = GetString(port, {"protocol"});
    if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
      return FieldError{absl::StrCat(field, ".protocol"),
                        absl::StrCat("Unsupported value: ", Quoted(port["protocol"]),
                                     ": supported values: \"SCTP\", \"TCP\", \"UDP\"")};
    }
    const std::string name = GetString(port, {"name"});
    if (name.empty() && ports.size() > 1) {
      return FieldError{absl::StrCat(field, ".name"), "Required value"};
    }
    if (!name.empty() && !IsDnsLabel(name)) {
      return FieldError{absl::StrCat(field, ".name"),
                        absl::StrCat("Invalid value: \"", name, "\": ", kLabelMessage)};
    }
    if (!name.empty() && !names.insert(name).second) {
      return FieldError{absl::StrCat(field, ".name"),
                        absl::StrCat("Duplicate value: \"", name, "\"")};
    }
    const Json* target = Find(port, "targetPort");
    if (target == nullptr || target->is_null() || (target->is_number() && *target == 0) ||
        (target->is_string() && target->get<std::string>().empty())) {
      port["targetPort"] = value;
    }
    if (Find(port, "nodePort") != nullptr && !NeedsNodePorts(type)) {
      return FieldError{absl::StrCat(field, ".nodePort"),
                        absl::StrCat("Forbidden: may not be used when `type` is '", type, "'")};
    }
  }
  return std::nullopt;
}

// Gives `spec` the cluster IP it asks for ("" → the lowest free one).
std::optional<FieldError> AllocateClusterIp(Json& spec, const ServiceAllocations& in_use) {
  const std::string type = GetString(spec, {"type"});
  const std::string requested = RequestedClusterIp(spec);
  if (requested == "None") {
    if (type != "ClusterIP") {
      return FieldError{"spec.clusterIPs[0]",
                        absl::StrCat("Invalid value: ", ClusterIpsValue(requested),
                                     ": may not be set to 'None' for ", type, " services")};
    }
    SetClusterIp(spec, "None");
    return std::nullopt;
  }
  if (!requested.empty()) {
    std::optional<uint32_t> ip = ParseIpv4(requested);
    const std::string prefix = absl::StrCat("Invalid value: ", ClusterIpsValue(requested),
                                            ": failed to allocate IP ", requested, ": ");
    if (!ip.has_value()) {
      return FieldError{"spec.clusterIPs[0]",
                        absl::StrCat("Invalid value: ", ClusterIpsValue(requested),
                                     ": must be a valid IP address")};
    }
    if (*ip <= kCidrBase || *ip >= kCidrBase + kCidrSize - 1) {
      return FieldError{
          "spec.clusterIPs",
          absl::StrCat(prefix, "the provided IP (", requested,
                       ") is not in the valid range. The range of valid IPs is ", kServiceCidr)};
    }
    if (in_use.cluster_ips.count(*ip) > 0) {
      return FieldError{"spec.clusterIPs",
                        absl::StrCat(prefix, "provided IP is already allocated")};
    }
    SetClusterIp(spec, FormatIpv4(*ip));
    return std::nullopt;
  }
  for (uint32_t ip = kFirstDynamic; ip < kCidrBase + kCidrSize - 1; ++ip) {
    if (in_use.cluster_ips.count(ip) == 0) {
      SetClusterIp(spec, FormatIpv4(ip));
      return std::nullopt;
    }
  }
  return FieldError{"spec.clusterIPs", "Internal error: range is full"};
}

// Gives every port of `spec` without a nodePort the lowest free one (those
// in `in_use` or already given to another port are taken).
std::optional<FieldError> AllocateNodePorts(Json& spec, const ServiceAllocations& in_use) {
  Json* ports = &spec["ports"];
  std::set<int64_t> taken = in_use.node_ports;
  for (const Json& port : *ports) {
    const Json* node_port = Find(port, "nodePort");
    if (node_port != nullptr && node_port->is_number_integer())
      taken.insert(node_port->get<int64_t>());
  }
  int64_t next = kNodePortFirst;
  for (Json& port : *ports) {
    if (Find(port, "nodePort") != nullptr) continue;
    while (next <= kNodePortLast && taken.count(next) > 0) ++next;
    if (next > kNodePortLast) return FieldError{"spec.ports", "Internal error: range is full"};
    port["nodePort"] = next;
    taken.insert(next);
  }
  return std::nullopt;
}

}  // namespace

void ServiceAllocations::Add(const Json& service) {
  if (std::optional<uint32_t> ip = ParseIpv4(GetString(service, {"spec", "clusterIP"}))) {
    cluster_ips.insert(*ip);
  }
  const Json* ports = FindPath(service, {"spec", "ports"});
  if (ports == nullptr || !ports->is_array()) return;
  for (const Json& port : *ports) {
    const Json* node_port = Find(port, "nodePort");
    if (node_port != nullptr && node_port->is_number_integer()) {
      node_ports.insert(node_port->get<int64_t>());
    }
  }
}

std::optional<FieldError> PrepareServiceForCreate(Json& service, const ServiceAllocations& in_use) {
  if (std::optional<FieldError> error = DefaultAndValidate(service)) return error;
  Json& spec = service["spec"];
  const std::string type = GetString(spec, {"type"});
  if (NeedsClusterIp(type)) {
    if (std::optional<FieldError> error = AllocateClusterIp(spec, in_use)) return error;
  }
  if (NeedsNodePorts(type)) {
    if (std::optional<FieldError> error = AllocateNodePorts(spec, in_use)) return error;
  }
  service["status"] = Json::object();
  service["status"]["loadBalancer"] = Json::object();
  return std::nullopt;
}

std::optional<FieldError> PrepareServiceForUpdate(const Json& current, Json& service,
                                                  const ServiceAllocations& in_use) {
  if (std::optional<FieldError> error = DefaultAndValidate(service)) return error;
  Json& spec = service["spec"];
  const std::string type = GetString(spec, {"type"});
  const std::string old_type = GetString(current, {"spec", "type"});
  const std::string old_ip = GetString(current, {"spec", "clusterIP"});
  if (NeedsClusterIp(type) && NeedsClusterIp(old_type) && !old_ip.empty()) {
    // patchAllocatedValues: what the request leaves out is kept.
    const std::string requested = RequestedClusterIp(spec);
    if (requested.empty()) {
      SetClusterIp(spec, old_ip);
    } else if (requested != old_ip) {
      return FieldError{
          "spec.clusterIPs[0]",
          absl::StrCat("Invalid value: ", ClusterIpsValue(requested), ": may not change once set")};
    } else {
      SetClusterIp(spec, old_ip);
    }
  } else if (NeedsClusterIp(type)) {
    if (std::optional<FieldError> error = AllocateClusterIp(spec, in_use)) return error;
  } else {
    spec.erase("clusterIP");
    spec.erase("clusterIPs");
  }
  if (NeedsNodePorts(type)) {
    if (NeedsNodePorts(old_type)) {
      // A port keeps its node port when its number and protocol stay.
      std::map<std::pair<int64_t, std::string>, Json> old_node_ports;
      if (const Json* ports = FindPath(current, {"spec", "ports"}); ports != nullptr) {
        for (const Json& port : *ports) {
          if (const Json* node_port = Find(port, "nodePort"); node_port != nullptr) {
            old_node_ports[{port.value("port", int64_t{0}), GetString(port, {"protocol"})}] =
                *node_port;
          }
        }
      }
      for (Json& port : spec["ports"]) {
        auto it =
            old_node_ports.find({port.value("port", int64_t{0}), GetString(port, {"protocol"})});
        if (Find(port, "nodePort") == nullptr && it != old_node_ports.end()) {
          port["nodePort"] = it->second;
        }
      }
    }
    if (std::optional<FieldError> error = AllocateNodePorts(spec, in_use)) return error;
  }
  return std::nullopt;
}

Json KubernetesService() {
  Json service = Json::object();
  service["apiVersion"] = "v1";
  service["kind"] = "Service";
  service["metadata"]["name"] = "kubernetes";
  service["metadata"]["namespace"] = "default";
  service["metadata"]["labels"]["component"] = "apiserver";
  service["metadata"]["labels"]["provider"] = "kubernetes";
  Json port = Json::object();
  port["name"] = "https";
  port["port"] = 443;
  port["protocol"] = "TCP";
  port["targetPort"] = 6443;
  service["spec"]["ports"] = Json::array({port});
  service["spec"]["clusterIP"] = kKubernetesServiceIp;
  return service;
}

}  // namespace facet::testing
