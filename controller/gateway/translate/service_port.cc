#include "controller/gateway/translate/service_port.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "controller/gateway/translate/xds_yaml.h"
#include "controller/kubernetes/endpoints/endpoint_slices.h"

namespace facet::controller::gateway {
namespace {

using internal::EmptyMap;
using internal::GeneratedObject;
using internal::String;

std::string PortOrigin(const GatewayObject& service, const ServicePort& port) {
  return absl::StrCat("Service ", service.ref.namespace_, "/", service.ref.name, " port ",
                      port.port);
}

// Stamps the Service's generation and location on `object`.
xds::ResourceObject FromService(const GatewayObject& service, xds::ResourceObject object) {
  object.generation = service.generation;
  object.location = service.location;
  return object;
}

// The ADS config source every generated reference uses.
YAML::Node AdsConfigSource() {
  YAML::Node source;
  source["ads"] = EmptyMap();
  source["resource_api_version"] = String("V3");
  return source;
}

YAML::Node TypedFilter(absl::string_view name, absl::string_view type) {
  YAML::Node filter;
  filter["name"] = String(name);
  filter["typed_config"]["@type"] = String(absl::StrCat("type.googleapis.com/", type));
  return filter;
}

YAML::Node EdsCluster(absl::string_view name) {
  YAML::Node cluster;
  cluster["type"] = String("EDS");
  cluster["eds_cluster_config"]["eds_config"] = AdsConfigSource();
  cluster["eds_cluster_config"]["service_name"] = String(name);
  cluster["lb_policy"] = String("ROUND_ROBIN");
  return cluster;
}

}  // namespace

std::string ServicePortName(const xds::ObjectRef& service, int port,
                            absl::string_view cluster_domain) {
  return absl::StrCat(service.name, ".", service.namespace_, ".svc.", cluster_domain, ":", port);
}

xds::ObjectRef GeneratedRef(absl::string_view ns, absl::string_view alias, absl::string_view name) {
  return {xds::kGeneratedKind, std::string(ns), absl::StrCat(alias, "/", name)};
}

bool IsServedPort(const ServiceInfo& service, const ServicePort& port) {
  return service.type != "ExternalName" && port.protocol == "TCP";
}

ServicePortObjects TranslateServicePort(const GatewayObject& service, const ServicePort& port,
                                        const std::vector<YAML::Node>& slices,
                                        const TranslateOptions& options) {
  const std::string name = ServicePortName(service.ref, port.port, options.cluster_domain);
  const std::string& ns = service.ref.namespace_;
  ServicePortObjects out;

  YAML::Node hcm;
  hcm["@type"] = String(
      "type.googleapis.com/"
      "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager");
  hcm["rds"]["route_config_name"] = String(name);
  hcm["rds"]["config_source"] = AdsConfigSource();
  // The fault filter is always there, so that a route edit that adds an
  // abort never touches the Listener (an override for a filter the
  // Listener lacks is ignored by the clients).
  hcm["http_filters"].push_back(
      TypedFilter(internal::kFaultFilterName, "envoy.extensions.filters.http.fault.v3.HTTPFault"));
  hcm["http_filters"].push_back(
      TypedFilter("envoy.filters.http.router", "envoy.extensions.filters.http.router.v3.Router"));
  YAML::Node listener;
  listener["api_listener"]["api_listener"] = hcm;
  out.listener = FromService(
      service, GeneratedObject(ns, "listener", name, listener, PortOrigin(service, port)));

  out.route_configuration = DefaultRouteConfiguration(service, port, options);
  out.cluster = FromService(
      service, GeneratedObject(ns, "cluster", name, EdsCluster(name), PortOrigin(service, port)));
  out.endpoints = PortEndpoints(service, port, slices, options);
  return out;
}

xds::ResourceObject DefaultRouteConfiguration(const GatewayObject& service, const ServicePort& port,
                                              const TranslateOptions& options) {
  const std::string name = ServicePortName(service.ref, port.port, options.cluster_domain);
  YAML::Node route;
  route["name"] = String(kDefaultRouteName);
  route["match"]["prefix"] = String("");
  route["route"]["cluster"] = String(name);
  YAML::Node host;
  host["name"] = String(name);
  host["domains"].push_back(String("*"));
  host["routes"].push_back(route);
  YAML::Node config;
  config["virtual_hosts"].push_back(host);
  return FromService(service, GeneratedObject(service.ref.namespace_, "route", name, config,
                                              PortOrigin(service, port)));
}

xds::ResourceObject PortEndpoints(const GatewayObject& service, const ServicePort& port,
                                  const std::vector<YAML::Node>& slices,
                                  const TranslateOptions& options) {
  const std::string name = ServicePortName(service.ref, port.port, options.cluster_domain);
  xds::EndpointsFrom from;
  from.service = service.ref.name;
  from.port_name = port.name;
  from.match_name_only = true;
  SlicedEndpoints built = ClusterLoadAssignmentFromSlices(slices, from, "");
  xds::ResourceObject object =
      FromService(service, GeneratedObject(service.ref.namespace_, "endpoint", name,
                                           std::move(built.resource), PortOrigin(service, port)));
  object.findings = std::move(built.findings);
  return object;
}

std::vector<xds::ResourceObject> UnroutableObjects() {
  constexpr char kFrom[] = "calls that GRPCRoutes fail (fault aborts)";
  YAML::Node endpoints;
  endpoints["endpoints"] = YAML::Node(YAML::NodeType::Sequence);
  std::vector<xds::ResourceObject> out;
  out.push_back(GeneratedObject(kGlobalNamespace, "cluster", kUnroutableName,
                                EdsCluster(kUnroutableName), kFrom));
  out.push_back(GeneratedObject(kGlobalNamespace, "endpoint", kUnroutableName, endpoints, kFrom));
  return out;
}

}  // namespace facet::controller::gateway
