#include "xds_server/resources/resource_type.h"

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/clusters/aggregate/v3/cluster.pb.h"
#include "envoy/extensions/filters/http/fault/v3/fault.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "google/protobuf/descriptor.h"
#include "xds_server/common/log_text.h"
#include "xds_server/json/proto_json.h"
#include "xds_server/json/yaml_json.h"
#include "xds_server/names/names.h"

namespace facet::xds {

using ::envoy::config::cluster::v3::Cluster;
using ::envoy::config::endpoint::v3::ClusterLoadAssignment;
using ::envoy::config::listener::v3::Listener;
using ::envoy::config::route::v3::RouteAction;
using ::envoy::config::route::v3::RouteConfiguration;
using ::envoy::extensions::clusters::aggregate::v3::ClusterConfig;
using ::envoy::extensions::filters::http::router::v3::Router;
using ::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
using ::google::protobuf::Message;

struct ResourceType::Traits {
  const Message& prototype;
  absl::string_view alias;
  absl::string_view name_field;
  int push_rank;
  bool full_state;
  absl::Status (*references)(const Message& message, absl::string_view served_name,
                             std::vector<ResourceReference>* out);
  void (*lint)(const Message& message, std::vector<LintFinding>* out);
  std::string type_url =
      absl::StrCat("type.googleapis.com/", prototype.GetDescriptor()->full_name());
};

namespace {

constexpr absl::string_view kHcmTypeUrl =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."
    "HttpConnectionManager";
constexpr absl::string_view kRouterTypeUrl =
    "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
constexpr absl::string_view kAggregateClusterTypeUrl =
    "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig";

// Makes the extension types that appear inside google.protobuf.Any known to
// the generated descriptor pool: descriptor() is defined out of line, so these
// calls keep the generated code in the link.
bool RegisterExtensionTypes() {
  return HttpConnectionManager::descriptor() != nullptr && Router::descriptor() != nullptr &&
         envoy::extensions::filters::http::fault::v3::HTTPFault::descriptor() != nullptr &&
         ClusterConfig::descriptor() != nullptr;
}

// ---- RouteConfiguration ---------------------------------------------------

void RouteReferences(const RouteConfiguration& route, absl::string_view prefix,
                     std::vector<ResourceReference>* out) {
  for (int v = 0; v < route.virtual_hosts_size(); ++v) {
    const auto& vhost = route.virtual_hosts(v);
    for (int r = 0; r < vhost.routes_size(); ++r) {
      const auto& entry = vhost.routes(r);
      if (!entry.has_route()) continue;
      const RouteAction& action = entry.route();
      std::string path = absl::StrCat(prefix, "virtual_hosts[", v, "].routes[", r, "].route");
      if (action.cluster_specifier_case() == RouteAction::kCluster) {
        out->push_back({&ClusterType(), action.cluster(), absl::StrCat(path, ".cluster")});
      } else if (action.cluster_specifier_case() == RouteAction::kWeightedClusters) {
        for (int c = 0; c < action.weighted_clusters().clusters_size(); ++c) {
          out->push_back({&ClusterType(), action.weighted_clusters().clusters(c).name(),
                          absl::StrCat(path, ".weighted_clusters.clusters[", c, "].name")});
        }
      }
    }
  }
}

absl::Status RouteConfigurationReferences(const Message& message, absl::string_view,
                                          std::vector<ResourceReference>* out) {
  RouteReferences(static_cast<const RouteConfiguration&>(message), "", out);
  return absl::OkStatus();
}

void LintRoute(const RouteConfiguration& route, absl::string_view prefix,
               std::vector<LintFinding>* out) {
  for (int v = 0; v < route.virtual_hosts_size(); ++v) {
    const auto& vhost = route.virtual_hosts(v);
    std::string vpath = absl::StrCat(prefix, "virtual_hosts[", v, "]");
    if (vhost.domains_size() == 0) {
      out->push_back(
          {absl::StrCat(vpath, ".domains"),
           "virtual host has no domains; gRPC C++ rejects the whole RouteConfiguration"});
    }
    for (int d = 0; d < vhost.domains_size(); ++d) {
      const std::string& domain = vhost.domains(d);
      if (domain != absl::AsciiStrToLower(domain)) {
        out->push_back({absl::StrCat(vpath, ".domains[", d, "]"),
                        absl::StrCat("domain \"", domain,
                                     "\" is not lower-case; gRPC C++ lower-cases the target but "
                                     "grpc-js compares case-sensitively, so use lower-case")});
      }
    }
    for (int r = 0; r < vhost.routes_size(); ++r) {
      const auto& entry = vhost.routes(r);
      std::string rpath = absl::StrCat(vpath, ".routes[", r, "]");
      if (!entry.has_route() && !entry.has_non_forwarding_action()) {
        out->push_back({rpath,
                        "route action is neither route nor non_forwarding_action; gRPC clients "
                        "ignore or NACK it (redirect and direct_response are not supported)"});
        continue;
      }
      if (!entry.has_route()) continue;
      const RouteAction& action = entry.route();
      if (action.cluster_specifier_case() == RouteAction::kWeightedClusters) {
        const auto& weighted = action.weighted_clusters();
        uint64_t sum = 0;
        for (const auto& cluster : weighted.clusters()) sum += cluster.weight().value();
        const uint64_t total = weighted.has_total_weight() ? weighted.total_weight().value() : 100;
        if (sum != total && weighted.has_total_weight()) {
          out->push_back({absl::StrCat(rpath, ".route.weighted_clusters"),
                          absl::StrCat("weights sum to ", sum, " but total_weight is ", total,
                                       "; gRPC C++ rejects the route")});
        }
        if (sum == 0) {
          out->push_back({absl::StrCat(rpath, ".route.weighted_clusters"),
                          "weights sum to 0; gRPC clients reject the route"});
        }
      } else if (action.cluster_specifier_case() != RouteAction::kCluster) {
        out->push_back({absl::StrCat(rpath, ".route"),
                        "route action names no cluster or weighted_clusters; gRPC clients support "
                        "only those two"});
      }
    }
  }
}

void LintRouteConfiguration(const Message& message, std::vector<LintFinding>* out) {
  LintRoute(static_cast<const RouteConfiguration&>(message), "", out);
}

// ---- Listener -------------------------------------------------------------

absl::Status ListenerReferences(const Message& message, absl::string_view,
                                std::vector<ResourceReference>* out) {
  const auto& listener = static_cast<const Listener&>(message);
  if (!listener.has_api_listener() ||
      listener.api_listener().api_listener().type_url() != kHcmTypeUrl) {
    return absl::OkStatus();
  }
  HttpConnectionManager hcm;
  if (!listener.api_listener().api_listener().UnpackTo(&hcm)) {
    return absl::InvalidArgumentError(
        "api_listener.api_listener: could not unpack HttpConnectionManager");
  }
  if (hcm.has_rds()) {
    out->push_back({&RouteConfigurationType(), hcm.rds().route_config_name(),
                    "api_listener.api_listener.rds.route_config_name"});
  } else if (hcm.has_route_config()) {
    RouteReferences(hcm.route_config(), "api_listener.api_listener.route_config.", out);
  }
  return absl::OkStatus();
}

void LintListener(const Message& message, std::vector<LintFinding>* out) {
  const auto& listener = static_cast<const Listener&>(message);
  if (!listener.has_api_listener()) {
    out->push_back({"api_listener",
                    "no api_listener; proxyless gRPC clients need an api_listener holding an "
                    "HttpConnectionManager"});
    return;
  }
  const auto& any = listener.api_listener().api_listener();
  if (any.type_url() != kHcmTypeUrl) {
    out->push_back({"api_listener.api_listener",
                    absl::StrCat("holds ", any.type_url(),
                                 "; gRPC clients accept only HttpConnectionManager")});
    return;
  }
  HttpConnectionManager hcm;
  if (!any.UnpackTo(&hcm)) return;
  const std::string prefix = "api_listener.api_listener.";
  if (!hcm.has_rds() && !hcm.has_route_config()) {
    out->push_back({absl::StrCat(prefix, "rds"),
                    "neither rds nor route_config is set; gRPC clients NACK the Listener"});
  } else if (hcm.has_rds() && !hcm.rds().config_source().has_ads() &&
             !hcm.rds().config_source().has_self()) {
    out->push_back({absl::StrCat(prefix, "rds.config_source"),
                    "config_source is neither ads nor self; gRPC clients NACK the Listener"});
  }
  if (hcm.has_route_config())
    LintRoute(hcm.route_config(), absl::StrCat(prefix, "route_config."), out);
  if (hcm.http_filters_size() == 0) {
    out->push_back({absl::StrCat(prefix, "http_filters"),
                    "no http_filters; gRPC C++ NACKs a Listener without the router filter"});
  }
  for (int i = 0; i < hcm.http_filters_size(); ++i) {
    const auto& filter = hcm.http_filters(i);
    const bool is_router = filter.typed_config().type_url() == kRouterTypeUrl;
    const bool is_last = i + 1 == hcm.http_filters_size();
    std::string path = absl::StrCat(prefix, "http_filters[", i, "]");
    if (!filter.has_typed_config()) {
      out->push_back({path, "filter has no typed_config; gRPC clients NACK the Listener"});
    } else if (is_router && !is_last) {
      out->push_back({path, "the router filter must be last; gRPC clients NACK the Listener"});
    } else if (!is_router && is_last) {
      out->push_back({path, "the last filter is not the router; gRPC clients NACK the Listener"});
    }
  }
}

// ---- Cluster --------------------------------------------------------------

absl::Status ClusterReferences(const Message& message, absl::string_view served_name,
                               std::vector<ResourceReference>* out) {
  const auto& cluster = static_cast<const Cluster&>(message);
  if (cluster.cluster_discovery_type_case() == Cluster::kType && cluster.type() == Cluster::EDS) {
    const std::string& service_name = cluster.eds_cluster_config().service_name();
    if (!service_name.empty()) {
      out->push_back(
          {&ClusterLoadAssignmentType(), service_name, "eds_cluster_config.service_name"});
    } else if (IsXdstpName(served_name)) {
      return absl::InvalidArgumentError(
          "eds_cluster_config.service_name: must be set for an EDS cluster with an xdstp:// "
          "name (gRFC A47): the endpoint name cannot default to the cluster name");
    } else {
      out->push_back({&ClusterLoadAssignmentType(), std::string(served_name),
                      "name (EDS service name defaults to the cluster name)"});
    }
  } else if (cluster.cluster_discovery_type_case() == Cluster::kClusterType &&
             cluster.cluster_type().typed_config().type_url() == kAggregateClusterTypeUrl) {
    ClusterConfig aggregate;
    if (!cluster.cluster_type().typed_config().UnpackTo(&aggregate)) {
      return absl::InvalidArgumentError(
          "cluster_type.typed_config: could not unpack ClusterConfig");
    }
    for (int i = 0; i < aggregate.clusters_size(); ++i) {
      out->push_back({&ClusterType(), aggregate.clusters(i),
                      absl::StrCat("cluster_type.typed_config.clusters[", i, "]")});
    }
  }
  return absl::OkStatus();
}

void LintCluster(const Message& message, std::vector<LintFinding>* out) {
  const auto& cluster = static_cast<const Cluster&>(message);
  if (cluster.cluster_discovery_type_case() == Cluster::kType) {
    if (cluster.type() == Cluster::EDS) {
      const auto& source = cluster.eds_cluster_config().eds_config();
      if (!source.has_ads() && !source.has_self()) {
        out->push_back({"eds_cluster_config.eds_config",
                        "eds_config is neither ads nor self; gRPC clients NACK the Cluster"});
      }
    } else if (cluster.type() != Cluster::LOGICAL_DNS) {
      out->push_back({"type", absl::StrCat("type ", Cluster::DiscoveryType_Name(cluster.type()),
                                           " is not supported by gRPC clients (EDS, LOGICAL_DNS "
                                           "or an aggregate cluster)")});
    }
  } else if (cluster.cluster_type().typed_config().type_url() != kAggregateClusterTypeUrl) {
    out->push_back({"cluster_type", "gRPC clients support only the aggregate cluster_type"});
  }
  if (cluster.lb_policy() != Cluster::ROUND_ROBIN && cluster.lb_policy() != Cluster::RING_HASH &&
      !cluster.has_load_balancing_policy()) {
    out->push_back({"lb_policy",
                    absl::StrCat("lb_policy ", Cluster::LbPolicy_Name(cluster.lb_policy()),
                                 " is not supported by gRPC clients (ROUND_ROBIN or RING_HASH)")});
  }
}

// ---- ClusterLoadAssignment ------------------------------------------------

absl::Status NoReferences(const Message&, absl::string_view, std::vector<ResourceReference>*) {
  return absl::OkStatus();
}

void LintClusterLoadAssignment(const Message& message, std::vector<LintFinding>* out) {
  const auto& cla = static_cast<const ClusterLoadAssignment&>(message);
  uint32_t max_priority = 0;
  std::vector<bool> priorities(cla.endpoints_size() + 1, false);
  for (int i = 0; i < cla.endpoints_size(); ++i) {
    const auto& locality = cla.endpoints(i);
    std::string path = absl::StrCat("endpoints[", i, "]");
    if (!locality.has_load_balancing_weight() || locality.load_balancing_weight().value() == 0) {
      out->push_back({absl::StrCat(path, ".load_balancing_weight"),
                      "locality has no load_balancing_weight (or 0); gRPC clients silently drop "
                      "it and RPCs to this cluster fail"});
    }
    if (locality.priority() < priorities.size()) priorities[locality.priority()] = true;
    max_priority = std::max(max_priority, locality.priority());
    for (int e = 0; e < locality.lb_endpoints_size(); ++e) {
      const auto& endpoint = locality.lb_endpoints(e);
      const auto& address = endpoint.endpoint().address();
      std::string epath = absl::StrCat(path, ".lb_endpoints[", e, "].endpoint.address");
      if (!address.has_socket_address() || address.socket_address().port_specifier_case() !=
                                               envoy::config::core::v3::SocketAddress::kPortValue) {
        out->push_back({epath, "gRPC clients need socket_address with port_value"});
      }
    }
  }
  for (uint32_t p = 0; p <= max_priority && cla.endpoints_size() > 0; ++p) {
    if (p >= priorities.size() || !priorities[p]) {
      out->push_back({"endpoints", absl::StrCat("priorities are not contiguous from 0 (", p,
                                                " is missing); gRPC clients NACK the resource")});
      break;
    }
  }
}

const ResourceType::Traits& ListenerTraits() {
  static const auto* const kTraits = new ResourceType::Traits{
      .prototype = Listener::default_instance(),
      .alias = "listener",
      .name_field = "name",
      .push_rank = 3,
      .full_state = true,
      .references = &ListenerReferences,
      .lint = &LintListener,
  };
  return *kTraits;
}
const ResourceType::Traits& RouteTraits() {
  static const auto* const kTraits = new ResourceType::Traits{
      .prototype = RouteConfiguration::default_instance(),
      .alias = "route",
      .name_field = "name",
      .push_rank = 2,
      .full_state = false,
      .references = &RouteConfigurationReferences,
      .lint = &LintRouteConfiguration,
  };
  return *kTraits;
}
const ResourceType::Traits& ClusterTraits() {
  static const auto* const kTraits = new ResourceType::Traits{
      .prototype = Cluster::default_instance(),
      .alias = "cluster",
      .name_field = "name",
      .push_rank = 1,
      .full_state = true,
      .references = &ClusterReferences,
      .lint = &LintCluster,
  };
  return *kTraits;
}
const ResourceType::Traits& EndpointTraits() {
  static const auto* const kTraits = new ResourceType::Traits{
      .prototype = ClusterLoadAssignment::default_instance(),
      .alias = "endpoint",
      .name_field = "cluster_name",
      .push_rank = 0,
      .full_state = false,
      .references = &NoReferences,
      .lint = &LintClusterLoadAssignment,
  };
  return *kTraits;
}

}  // namespace

absl::string_view ResourceType::type_name() const {
  return traits_.prototype.GetDescriptor()->full_name();
}
const std::string& ResourceType::type_url() const { return traits_.type_url; }
absl::string_view ResourceType::alias() const { return traits_.alias; }
absl::string_view ResourceType::name_field() const { return traits_.name_field; }
int ResourceType::push_rank() const { return traits_.push_rank; }
bool ResourceType::full_state() const { return traits_.full_state; }

std::unique_ptr<Message> ResourceType::New() const {
  return std::unique_ptr<Message>(traits_.prototype.New());
}

std::string ResourceType::GetName(const Message& message) const {
  const auto* field = message.GetDescriptor()->FindFieldByName(std::string(traits_.name_field));
  return message.GetReflection()->GetString(message, field);
}

void ResourceType::SetName(absl::string_view name, Message* message) const {
  const auto* field = message->GetDescriptor()->FindFieldByName(std::string(traits_.name_field));
  message->GetReflection()->SetString(message, field, std::string(name));
}

absl::StatusOr<std::vector<ResourceReference>> ResourceType::References(
    const Message& message, absl::string_view served_name) const {
  std::vector<ResourceReference> out;
  if (absl::Status s = traits_.references(message, served_name, &out); !s.ok()) return s;
  return out;
}

void ResourceType::Lint(const Message& message, std::vector<LintFinding>* findings) const {
  traits_.lint(message, findings);
}

const ResourceType& ListenerType() {
  static const ResourceType* const kType = new ResourceType(ListenerTraits());
  return *kType;
}
const ResourceType& RouteConfigurationType() {
  static const ResourceType* const kType = new ResourceType(RouteTraits());
  return *kType;
}
const ResourceType& ClusterType() {
  static const ResourceType* const kType = new ResourceType(ClusterTraits());
  return *kType;
}
const ResourceType& ClusterLoadAssignmentType() {
  static const ResourceType* const kType = new ResourceType(EndpointTraits());
  return *kType;
}

absl::Span<const ResourceType* const> AllResourceTypes() {
  static const bool kRegistered = RegisterExtensionTypes();
  (void)kRegistered;
  static const std::array<const ResourceType*, 4> kTypes = {
      &ClusterLoadAssignmentType(), &ClusterType(), &RouteConfigurationType(), &ListenerType()};
  return kTypes;
}

const ResourceType* FindResourceType(absl::string_view type_or_alias) {
  absl::string_view name = type_or_alias;
  absl::ConsumePrefix(&name, "type.googleapis.com/");
  for (const ResourceType* type : AllResourceTypes()) {
    if (name == type->type_name() || (name == type_or_alias && name == type->alias())) {
      return type;
    }
  }
  return nullptr;
}

std::string ResourceTypeForLog(absl::string_view type_url) {
  const ResourceType* type = FindResourceType(type_url);
  return type != nullptr ? std::string(type->alias()) : SafeForLog(type_url);
}

std::string DescribeResourceTypes() {
  return absl::StrJoin(AllResourceTypes(), ", ", [](std::string* out, const ResourceType* type) {
    absl::StrAppend(out, type->alias(), " (", type->type_name(), ")");
  });
}

absl::StatusOr<std::unique_ptr<Message>> DecodeResource(const ResourceType& type,
                                                        const YAML::Node& document,
                                                        absl::string_view path,
                                                        absl::string_view served_name) {
  (void)AllResourceTypes();  // Registers the extension types used inside Any.
  if (!document.IsDefined() || document.IsNull()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is required"));
  }
  if (!document.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a map (the proto3 JSON of ",
                                                   type.type_name(), "), found ",
                                                   json::DescribeNode(document)));
  }
  // The document is only read: assigning its nodes into another tree would
  // merge yaml-cpp memory pools (quadratic over many documents, and unsafe
  // for copies of the document held elsewhere).
  YAML::Node body = document;
  for (const auto& entry : document) {
    if (!entry.first.IsScalar() || entry.first.Scalar() != "@type") continue;
    if (!entry.second.IsScalar() || entry.second.Scalar() != type.type_url()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".@type: is \"", entry.second.IsScalar() ? entry.second.Scalar() : "?",
                       "\" but spec.type is ", type.type_name(), "; @type must be \"",
                       type.type_url(), "\" or omitted"));
    }
    body.reset(YAML::Clone(document));  // A private copy without "@type".
    body.remove("@type");
    break;
  }
  std::unique_ptr<Message> message = type.New();
  if (absl::Status s = json::ParseMessage(body, path, message.get()); !s.ok()) return s;

  const std::string name = type.GetName(*message);
  if (name.empty()) {
    type.SetName(served_name, message.get());
  } else {
    absl::StatusOr<std::string> normalized = NormalizeResourceName(name);
    if (!normalized.ok() || *normalized != served_name) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".", type.name_field(), ": \"", name, "\" does not match the served name \"",
          served_name, "\"; omit it and Facet fills it in"));
    }
    type.SetName(served_name, message.get());
  }
  return message;
}

}  // namespace facet::xds
