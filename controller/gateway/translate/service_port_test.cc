// What a Service port serves without GRPCRoutes: the Listener, the default
// RouteConfiguration, the Cluster and the ClusterLoadAssignment, and the
// shared unroutable pair.
#include "controller/gateway/translate/service_port.h"

#include <string>
#include <variant>
#include <vector>

#include "controller/gateway/translate/translate_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::BuildFindings;
using ::facet::controller::gateway::testing::Json;
using ::facet::controller::gateway::testing::Parse;
using ::facet::controller::gateway::testing::ResourceJson;
using ::facet::controller::gateway::testing::Service;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kName[] = "greeter.demo.svc.cluster.local:50051";

const GatewayObject& Greeter() {
  static const GatewayObject* const kService =
      new GatewayObject(Service("greeter",
                                "{ports: [{name: grpc, port: 50051, targetPort: 9000}, "
                                "{name: admin, port: 8080}]}"));
  return *kService;
}

const ServicePort& PortOf(const GatewayObject& service, size_t i) {
  return std::get<ServiceInfo>(service.spec).ports.at(i);
}

YAML::Node Slice(const std::string& name, const std::string& ports, const std::string& endpoints) {
  return YAML::Load(absl::StrCat(
      "{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: ", name,
      ", namespace: demo, labels: {kubernetes.io/service-name: greeter}}, addressType: IPv4, "
      "ports: ",
      ports, ", endpoints: ", endpoints, "}"));
}

TEST(ServicePortTest, NamesEveryResourceAfterTheDialTarget) {
  EXPECT_EQ(ServicePortName({"Service", "demo", "greeter"}, 50051, "cluster.local"), kName);
  EXPECT_EQ(ServicePortName({"Service", "demo", "greeter"}, 80, "corp.example"),
            "greeter.demo.svc.corp.example:80");
  const ServicePortObjects objects =
      TranslateServicePort(Greeter(), PortOf(Greeter(), 0), {}, TranslateOptions());
  for (const xds::ResourceObject* object :
       {&objects.listener, &objects.route_configuration, &objects.cluster, &objects.endpoints}) {
    EXPECT_EQ(object->spec->name, kName);
    EXPECT_EQ(object->ref.kind, xds::kGeneratedKind);
    EXPECT_EQ(object->ref.name, absl::StrCat(object->spec->type, "/", kName));
    EXPECT_EQ(object->ref.namespace_, "demo");
    EXPECT_EQ(object->generated_from, "Service demo/greeter port 50051");
    EXPECT_EQ(object->location, "test.yaml:1");
    ASSERT_EQ(object->spec->variants.size(), 1u);
    EXPECT_EQ(object->spec->variants[0].constraints.ByteSizeLong(), 0u) << "unconstrained";
  }
  EXPECT_EQ(objects.listener.spec->type, "listener");
  EXPECT_EQ(objects.route_configuration.spec->type, "route");
  EXPECT_EQ(objects.cluster.spec->type, "cluster");
  EXPECT_EQ(objects.endpoints.spec->type, "endpoint");
}

TEST(ServicePortTest, ListenerIsAnApiListenerWithRdsFaultAndRouter) {
  const ServicePortObjects objects =
      TranslateServicePort(Greeter(), PortOf(Greeter(), 0), {}, TranslateOptions());
  EXPECT_EQ(ResourceJson(objects.listener), nlohmann::json::parse(R"({
    "api_listener": {"api_listener": {
      "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
      "rds": {"route_config_name": "greeter.demo.svc.cluster.local:50051",
              "config_source": {"ads": {}, "resource_api_version": "V3"}},
      "http_filters": [
        {"name": "envoy.filters.http.fault",
         "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"}},
        {"name": "envoy.filters.http.router",
         "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}
  })"));
}

TEST(ServicePortTest, DefaultRouteSendsEveryCallToTheOwnCluster) {
  const ServicePortObjects objects =
      TranslateServicePort(Greeter(), PortOf(Greeter(), 0), {}, TranslateOptions());
  EXPECT_EQ(ResourceJson(objects.route_configuration), nlohmann::json::parse(R"({
    "virtual_hosts": [{"name": "greeter.demo.svc.cluster.local:50051", "domains": ["*"],
      "routes": [{"name": "facet/default", "match": {"prefix": ""},
                  "route": {"cluster": "greeter.demo.svc.cluster.local:50051"}}]}]
  })"));
}

TEST(ServicePortTest, ClusterIsEdsWithTheClaNameRoundRobin) {
  const ServicePortObjects objects =
      TranslateServicePort(Greeter(), PortOf(Greeter(), 0), {}, TranslateOptions());
  EXPECT_EQ(ResourceJson(objects.cluster), nlohmann::json::parse(R"({
    "type": "EDS",
    "eds_cluster_config": {"eds_config": {"ads": {}, "resource_api_version": "V3"},
                           "service_name": "greeter.demo.svc.cluster.local:50051"},
    "lb_policy": "ROUND_ROBIN"
  })"));
}

TEST(ServicePortTest, EndpointsComeFromTheSlicePortOfTheSameName) {
  // The slice port named "grpc" is the pod's 9000; "admin" is another
  // port. The Service port's number (50051) never matches a slice port.
  const std::vector<YAML::Node> slices = {
      Slice("greeter-a", "[{name: admin, port: 8080}, {name: grpc, port: 9000}]",
            "[{addresses: [10.0.0.1], zone: z1}, {addresses: [10.0.0.2], zone: z1, "
            "conditions: {ready: false}}]"),
      Slice("greeter-b", "[{name: grpc, port: 9001}]", "[{addresses: [10.0.1.1], zone: z2}]"),
      Slice("greeter-c", "[{name: '', port: 50051}]", "[{addresses: [10.0.2.1]}]"),
  };
  const xds::ResourceObject endpoints =
      PortEndpoints(Greeter(), PortOf(Greeter(), 0), slices, TranslateOptions());
  EXPECT_EQ(ResourceJson(endpoints), nlohmann::json::parse(R"({"endpoints": [
    {"locality": {"zone": "z1"}, "load_balancing_weight": 1, "lb_endpoints": [
      {"endpoint": {"address": {"socket_address": {"address": "10.0.0.1", "port_value": 9000}}},
       "health_status": "HEALTHY"}]},
    {"locality": {"zone": "z2"}, "load_balancing_weight": 1, "lb_endpoints": [
      {"endpoint": {"address": {"socket_address": {"address": "10.0.1.1", "port_value": 9001}}},
       "health_status": "HEALTHY"}]}]})"));
  EXPECT_THAT(endpoints.findings,
              ElementsAre(::testing::Field(&xds::Finding::message,
                                           HasSubstr("greeter-c has no port grpc"))));
}

TEST(ServicePortTest, UnnamedPortTakesTheUnnamedSlicePort) {
  const GatewayObject service = Service("greeter", "{ports: [{port: 50051, targetPort: 9000}]}");
  const std::vector<YAML::Node> slices = {
      Slice("greeter-a", "[{name: '', port: 9000}]", "[{addresses: [10.0.0.1]}]"),
      Slice("greeter-b", "[{port: 9002}]", "[{addresses: [10.0.0.2]}]"),
  };
  const nlohmann::json endpoints =
      ResourceJson(PortEndpoints(service, PortOf(service, 0), slices, TranslateOptions()));
  EXPECT_EQ(endpoints["endpoints"][0]["lb_endpoints"].size(), 2u) << endpoints.dump();
  EXPECT_EQ(endpoints["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
                     ["port_value"],
            9000);
  EXPECT_EQ(endpoints["endpoints"][0]["lb_endpoints"][1]["endpoint"]["address"]["socket_address"]
                     ["port_value"],
            9002);
}

TEST(ServicePortTest, NoSlicesIsAnEmptyAssignmentWithAWarning) {
  const xds::ResourceObject endpoints =
      PortEndpoints(Greeter(), PortOf(Greeter(), 0), {}, TranslateOptions());
  EXPECT_EQ(ResourceJson(endpoints), nlohmann::json::parse(R"({"endpoints": []})"));
  ASSERT_EQ(endpoints.findings.size(), 1u);
  EXPECT_EQ(endpoints.findings[0].severity, xds::Severity::kWarning);
  EXPECT_THAT(endpoints.findings[0].message, HasSubstr("no ready endpoints"));
}

TEST(ServicePortTest, SkipsUdpSctpAndExternalNamePortsButServesHeadless) {
  const GatewayObject mixed =
      Service("dns",
              "{ports: [{name: tcp, port: 53}, {name: udp, port: 53, protocol: UDP}, "
              "{name: sctp, port: 54, protocol: SCTP}]}");
  const ServiceInfo& info = std::get<ServiceInfo>(mixed.spec);
  EXPECT_TRUE(IsServedPort(info, info.ports[0]));
  EXPECT_FALSE(IsServedPort(info, info.ports[1]));
  EXPECT_FALSE(IsServedPort(info, info.ports[2]));
  const GatewayObject external =
      Service("ext", "{type: ExternalName, externalName: db.example.com, ports: [{port: 5432}]}");
  const ServiceInfo& external_info = std::get<ServiceInfo>(external.spec);
  EXPECT_FALSE(IsServedPort(external_info, external_info.ports[0]));
  const GatewayObject headless = Service("h", "{clusterIP: None, ports: [{port: 50051}]}");
  const ServiceInfo& headless_info = std::get<ServiceInfo>(headless.spec);
  ASSERT_TRUE(IsServedPort(headless_info, headless_info.ports[0]));
  EXPECT_EQ(ResourceJson(DefaultRouteConfiguration(
                headless, headless_info.ports[0],
                TranslateOptions()))["virtual_hosts"][0]["routes"][0]["route"]["cluster"],
            "h.demo.svc.cluster.local:50051");
}

TEST(ServicePortTest, UnroutablePairIsAnEdsClusterWithNoEndpoints) {
  const std::vector<xds::ResourceObject> objects = UnroutableObjects();
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].ref,
            (xds::ObjectRef{"Generated", "facet.dev", "cluster/facet.dev/unroutable"}));
  EXPECT_EQ(ResourceJson(objects[0]), nlohmann::json::parse(R"({
    "type": "EDS",
    "eds_cluster_config": {"eds_config": {"ads": {}, "resource_api_version": "V3"},
                           "service_name": "facet.dev/unroutable"},
    "lb_policy": "ROUND_ROBIN"})"));
  EXPECT_EQ(objects[1].ref,
            (xds::ObjectRef{"Generated", "facet.dev", "endpoint/facet.dev/unroutable"}));
  EXPECT_EQ(ResourceJson(objects[1]), nlohmann::json::parse(R"({"endpoints": []})"));
}

TEST(ServicePortTest, EveryGeneratedObjectPassesValidation) {
  const ServicePortObjects objects = TranslateServicePort(
      Greeter(), PortOf(Greeter(), 0),
      {Slice("greeter-a", "[{name: grpc, port: 9000}]", "[{addresses: [10.0.0.1]}]")},
      TranslateOptions());
  std::vector<xds::ResourceObject> all = UnroutableObjects();
  all.push_back(objects.listener);
  all.push_back(objects.route_configuration);
  all.push_back(objects.cluster);
  all.push_back(objects.endpoints);
  EXPECT_THAT(BuildFindings(all), IsEmpty());
}

TEST(ServicePortTest, StringsThatLookLikeNumbersStayStrings) {
  // A Service named like a number cannot exist, but a cluster domain may
  // look like anything; the names must stay JSON strings.
  TranslateOptions options;
  options.cluster_domain = "1";
  const GatewayObject service = Service("s", "{ports: [{port: 80}]}");
  const nlohmann::json route =
      ResourceJson(DefaultRouteConfiguration(service, PortOf(service, 0), options));
  EXPECT_TRUE(route["virtual_hosts"][0]["name"].is_string());
}

}  // namespace
}  // namespace facet::controller::gateway
