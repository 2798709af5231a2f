// Helpers shared by StreamState's tests: a small world of objects (a
// listener, a route with a prod and another variant, clusters, endpoints),
// requests and a decoded view of SotW responses. Test-only.
#ifndef FACET_XDS_SERVER_ADS_STREAM_STATE_TEST_SUPPORT_H_
#define FACET_XDS_SERVER_ADS_STREAM_STATE_TEST_SUPPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "gtest/gtest.h"
#include "xds_server/ads/serving_snapshot.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/snapshot/builder.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds::stream_state_testing {

using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::Resource;

inline const std::string kLds = ListenerType().type_url();
inline const std::string kRds = RouteConfigurationType().type_url();
inline const std::string kCds = ClusterType().type_url();
inline const std::string kEds = ClusterLoadAssignmentType().type_url();

struct V {
  std::string match;
  std::string resource;
  std::string label;
};

inline ResourceObject Object(const std::string& name, const std::string& type,
                             const std::vector<V>& variants) {
  ResourceObject object;
  object.ref = {kXdsResourceKind, "demo", name};
  ResourceSpec spec;
  spec.type = type;
  spec.name = name;
  for (const V& v : variants) {
    VariantSpec variant;
    variant.label = v.label;
    if (!v.match.empty()) variant.constraints = *CompileMatch(YAML::Load(v.match), "m");
    variant.resource = YAML::Load(v.resource);
    spec.variants.push_back(std::move(variant));
  }
  object.spec = std::move(spec);
  return object;
}

inline std::string Listener(const std::string& route) {
  return R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: )" +
         route +
         R"(, config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})";
}
inline std::string Route(const std::string& cluster) {
  return R"({virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: ""}, route: {cluster: )" +
         cluster + "}}]}]}";
}
inline std::string Cluster() { return "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"; }
inline std::string Endpoints(int port) {
  return "{endpoints: [{locality: {}, load_balancing_weight: 1, lb_endpoints: [{endpoint: "
         "{address: "
         "{socket_address: {address: 127.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}

// greeter listener -> route (prod/other variants) -> clusters c-prod, c-test -> endpoints.
inline std::vector<ResourceObject> Base(int prod_port = 1) {
  return {
      Object("greeter", "listener", {{"", Listener("r"), "all"}}),
      Object("r", "route",
             {{"{env: prod}", Route("c-prod"), "prod"},
              {"{env: {not: prod}}", Route("c-test"), "other"}}),
      Object("c-prod", "cluster", {{"", Cluster(), "all"}}),
      Object("c-test", "cluster", {{"", Cluster(), "all"}}),
      Object("e-prod", "endpoint", {{"", Endpoints(prod_port), "all"}}),
      Object("e-test", "endpoint", {{"", Endpoints(2), "all"}}),
  };
}

inline std::shared_ptr<const ServingSnapshot> Serve(std::vector<ResourceObject> objects) {
  // Endpoint objects are named e-*, but serve the cluster names c-*.
  for (auto& object : objects) {
    if (object.spec->type == "endpoint") object.spec->name = "c-" + object.spec->name.substr(2);
  }
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  BuildResult result = BuildSnapshot(objects, {}, nullptr, options);
  for (const auto& status : result.statuses) {
    EXPECT_TRUE(status.accepted) << status.ref.ToString()
                                 << (status.findings.empty() ? "" : status.findings[0].message);
  }
  return std::make_shared<ServingSnapshot>(result.snapshot);
}

inline envoy::config::core::v3::Node NodeWith(const std::string& env,
                                              bool resource_in_sotw = false) {
  envoy::config::core::v3::Node node;
  node.set_id("client");
  if (!env.empty()) (*node.mutable_metadata()->mutable_fields())["env"].set_string_value(env);
  if (resource_in_sotw) node.add_client_features(kResourceInSotwFeature);
  return node;
}

inline DiscoveryRequest Sotw(const std::string& type, std::vector<std::string> names,
                             const std::string& nonce = "") {
  DiscoveryRequest request;
  request.set_type_url(type);
  for (auto& n : names) request.add_resource_names(n);
  request.set_response_nonce(nonce);
  return request;
}

inline void AddLocator(DiscoveryRequest* request, const std::string& name,
                       const ParameterSet& params) {
  auto* locator = request->add_resource_locators();
  locator->set_name(name);
  for (const auto& [k, v] : params) (*locator->mutable_dynamic_parameters())[k] = v;
}

// Decoded view of one resource in a response.
struct Item {
  std::string name;
  std::string constraints;  // ToString of the constraints, "" when not sent.
  bool wrapped = false;
  std::string route_cluster;  // For RouteConfigurations: the first route's cluster.
  std::string label_hint;
};

inline std::vector<Item> Decode(const DiscoveryResponse& response) {
  std::vector<Item> items;
  for (const auto& any : response.resources()) {
    Item item;
    google::protobuf::Any inner = any;
    if (any.type_url() == "type.googleapis.com/envoy.service.discovery.v3.Resource") {
      Resource wrapper;
      wrapper.ParseFromString(any.value());
      item.wrapped = true;
      item.name = wrapper.has_resource_name() ? wrapper.resource_name().name() : wrapper.name();
      if (wrapper.has_resource_name()) {
        auto c = Constraint::Compile(wrapper.resource_name().dynamic_parameter_constraints());
        item.constraints = c.ok() ? c->ToString() : "?";
      }
      inner = wrapper.resource();
    }
    if (inner.type_url() == kRds) {
      envoy::config::route::v3::RouteConfiguration route;
      inner.UnpackTo(&route);
      if (item.name.empty()) item.name = route.name();
      item.route_cluster = route.virtual_hosts(0).routes(0).route().cluster();
    } else if (inner.type_url() == kCds) {
      envoy::config::cluster::v3::Cluster cluster;
      inner.UnpackTo(&cluster);
      if (item.name.empty()) item.name = cluster.name();
    } else if (inner.type_url() == kEds) {
      envoy::config::endpoint::v3::ClusterLoadAssignment cla;
      inner.UnpackTo(&cla);
      if (item.name.empty()) item.name = cla.cluster_name();
    } else if (inner.type_url() == kLds) {
      envoy::config::listener::v3::Listener listener;
      inner.UnpackTo(&listener);
      if (item.name.empty()) item.name = listener.name();
    }
    items.push_back(item);
  }
  return items;
}

inline std::vector<std::string> Names(const DiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const Item& item : Decode(response)) names.push_back(item.name);
  return names;
}

}  // namespace facet::xds::stream_state_testing

#endif  // FACET_XDS_SERVER_ADS_STREAM_STATE_TEST_SUPPORT_H_
