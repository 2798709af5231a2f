// Step one of the Gateway API translation: what every port of a Service
// serves without any GRPCRoute (GEP-1294's default mesh behaviour), as
// generated objects for the snapshot builder. All four xDS resources of
// Service port S/N:P share the name "S.N.svc.<cluster domain>:P", the
// target a client dials (xds:///S.N.svc.cluster.local:P).
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_SERVICE_PORT_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_SERVICE_PORT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controller/gateway/model/gateway_object.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// The shared Cluster and ClusterLoadAssignment with no endpoints, reached
// only behind fault aborts (calls that must fail).
inline constexpr char kUnroutableName[] = "facet.dev/unroutable";
// The namespace of the generated objects that belong to no Service.
inline constexpr char kGlobalNamespace[] = "facet.dev";
// The route of a Service port no GRPCRoute serves.
inline constexpr char kDefaultRouteName[] = "facet/default";

struct TranslateOptions {
  // The cluster's DNS domain (--cluster-domain), lower case.
  std::string cluster_domain = "cluster.local";
  // The client parameter (node metadata or locator) holding a client's
  // namespace (--gateway-client-namespace-param): consumer routes apply to
  // the clients whose parameter is the route's namespace. Empty: consumer
  // routes are not served (ConsumerRoutesDisabled).
  std::string client_namespace_param = "namespace";
};

// Returns "S.N.svc.<cluster_domain>:P", the name of every xDS resource of
// Service port `service`:`port` (`service` is the Service's ObjectRef).
std::string ServicePortName(const xds::ObjectRef& service, int port,
                            absl::string_view cluster_domain);

// Returns the reference of the object generated for the xDS resource of
// spec.type `alias` (listener, route, cluster, endpoint) named `name` in
// namespace `ns`: {Generated, ns, "<alias>/<name>"}.
xds::ObjectRef GeneratedRef(absl::string_view ns, absl::string_view alias, absl::string_view name);

// Returns whether Facet serves `port` of `service`: every TCP port of a
// Service that is not ExternalName (headless ones included: their endpoints
// are the pods).
bool IsServedPort(const ServiceInfo& service, const ServicePort& port);

// The generated objects of one Service port, each with one unconstrained
// variant and generated_from "Service N/S port P".
struct ServicePortObjects {
  // An API listener (HttpConnectionManager) with RDS for the
  // RouteConfiguration of the same name, the fault filter, then the router.
  // The same whatever routes the port has.
  xds::ResourceObject listener;
  // The RouteConfiguration without GRPCRoutes: DefaultRouteConfiguration.
  xds::ResourceObject route_configuration;
  // An EDS Cluster (service_name: the CLA of the same name), ROUND_ROBIN.
  xds::ResourceObject cluster;
  // The endpoints: PortEndpoints.
  xds::ResourceObject endpoints;
};

// Returns the objects of `port` of `service` (a Service GatewayObject),
// which must be served (IsServedPort). `slices` are the Service's
// EndpointSlices (any order). The objects carry the Service's generation
// and location. Pure; thread-safe.
ServicePortObjects TranslateServicePort(const GatewayObject& service, const ServicePort& port,
                                        const std::vector<YAML::Node>& slices,
                                        const TranslateOptions& options);

// Returns the RouteConfiguration a served port has while no GRPCRoute is
// attached to it: one virtual host (domains ["*"]) with the one route
// kDefaultRouteName, every call to the port's own Cluster.
xds::ResourceObject DefaultRouteConfiguration(const GatewayObject& service, const ServicePort& port,
                                              const TranslateOptions& options);

// Returns the port's ClusterLoadAssignment from the Service's `slices`:
// the slice port whose name is the Service port's name ("" the unnamed
// one), never matched by number (kube-proxy's mapping). Warnings (no ready
// endpoints, a slice without the port) are the object's findings.
xds::ResourceObject PortEndpoints(const GatewayObject& service, const ServicePort& port,
                                  const std::vector<YAML::Node>& slices,
                                  const TranslateOptions& options);

// Returns the shared kUnroutableName Cluster and ClusterLoadAssignment (no
// endpoints), in namespace kGlobalNamespace.
std::vector<xds::ResourceObject> UnroutableObjects();

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_SERVICE_PORT_H_
