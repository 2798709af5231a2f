#include "controller/kubernetes/endpoints/endpoint_slices.h"

#include "absl/strings/str_cat.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/resources/resource_type.h"

namespace facet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

YAML::Node Slice(const std::string& yaml) { return YAML::Load(yaml); }

const char kWebA[] = R"({metadata: {name: web-a}, addressType: IPv4,
  ports: [{name: grpc, port: 50051}, {name: metrics, port: 9090}],
  endpoints: [
    {addresses: [10.0.0.2], zone: zone-b, conditions: {ready: true}},
    {addresses: [10.0.0.1], zone: zone-a},
    {addresses: [10.0.0.3], zone: zone-a, conditions: {ready: false, serving: true, terminating: true}},
    {addresses: [10.0.0.4], zone: zone-a, conditions: {ready: false, serving: false}}]})";
const char kWebV6[] = R"({metadata: {name: web-v6}, addressType: IPv6,
  ports: [{name: grpc, port: 50052}],
  endpoints: [{addresses: ["fd00::1"], zone: zone-a}]})";

envoy::config::endpoint::v3::ClusterLoadAssignment Decode(const YAML::Node& resource) {
  auto message = xds::DecodeResource(xds::ClusterLoadAssignmentType(), resource, "resource", "web");
  EXPECT_TRUE(message.ok()) << message.status();
  envoy::config::endpoint::v3::ClusterLoadAssignment out;
  if (message.ok()) out.CopyFrom(**message);
  return out;
}

TEST(EndpointSlicesTest, ReadyAddressesByZoneWithDrainingAndThePortByName) {
  xds::EndpointsFrom from{"web", "grpc", 0};
  SlicedEndpoints built = ClusterLoadAssignmentFromSlices({Slice(kWebA), Slice(kWebV6)}, from, "f");
  EXPECT_THAT(built.findings, IsEmpty());
  auto cla = Decode(built.resource);
  ASSERT_EQ(cla.endpoints_size(), 2);
  const auto& a = cla.endpoints(0);
  EXPECT_EQ(a.locality().zone(), "zone-a");
  EXPECT_EQ(a.load_balancing_weight().value(), 1u);
  std::vector<std::string> seen;
  for (const auto& e : a.lb_endpoints()) {
    seen.push_back(absl::StrCat(e.endpoint().address().socket_address().address(), ":",
                                e.endpoint().address().socket_address().port_value(), " ",
                                envoy::config::core::v3::HealthStatus_Name(e.health_status())));
  }
  EXPECT_THAT(seen, ElementsAre("10.0.0.1:50051 HEALTHY", "10.0.0.3:50051 DRAINING",
                                "fd00::1:50052 HEALTHY"));
  EXPECT_EQ(cla.endpoints(1).locality().zone(), "zone-b");
  ASSERT_EQ(cla.endpoints(1).lb_endpoints_size(), 1);
}

TEST(EndpointSlicesTest, PortByNumberAndSliceOrderDoesNotMatter) {
  xds::EndpointsFrom from{"web", "", 9090};
  SlicedEndpoints one = ClusterLoadAssignmentFromSlices({Slice(kWebA), Slice(kWebV6)}, from, "f");
  SlicedEndpoints two = ClusterLoadAssignmentFromSlices({Slice(kWebV6), Slice(kWebA)}, from, "f");
  EXPECT_EQ(Decode(one.resource).SerializeAsString(), Decode(two.resource).SerializeAsString());
  // The IPv6 slice has no port 9090.
  ASSERT_EQ(one.findings.size(), 1u);
  EXPECT_THAT(one.findings[0].message, HasSubstr("web-v6 has no port 9090"));
  EXPECT_EQ(Decode(one.resource).endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value(),
            9090u);
}

std::vector<std::string> Addresses(const YAML::Node& resource) {
  std::vector<std::string> out;
  const auto cla = Decode(resource);
  for (const auto& locality : cla.endpoints()) {
    for (const auto& e : locality.lb_endpoints()) {
      out.push_back(absl::StrCat(e.endpoint().address().socket_address().address(), ":",
                                 e.endpoint().address().socket_address().port_value()));
    }
  }
  return out;
}

// A Service port's slice port: same name, any number (the pod's target port).
const char kNamedPorts[] = R"({metadata: {name: web-n}, addressType: IPv4,
  ports: [{name: grpc, port: 8080}, {name: metrics, port: 50051}],
  endpoints: [{addresses: [10.0.0.1]}]})";
const char kUnnamedPort[] = R"({metadata: {name: web-u}, addressType: IPv4,
  ports: [{port: 8081, protocol: TCP}], endpoints: [{addresses: [10.0.0.2]}]})";
const char kEmptyNamePort[] = R"({metadata: {name: web-e}, addressType: IPv4,
  ports: [{name: "", port: 8082}], endpoints: [{addresses: [10.0.0.3]}]})";
const char kNoPorts[] = R"({metadata: {name: web-0}, addressType: IPv4,
  endpoints: [{addresses: [10.0.0.4]}]})";

TEST(EndpointSlicesTest, NameOnlyTakesTheSlicePortOfThatNameNeverTheNumber) {
  xds::EndpointsFrom grpc{"web", "grpc", 0, /*match_name_only=*/true};
  SlicedEndpoints named = ClusterLoadAssignmentFromSlices({Slice(kNamedPorts)}, grpc, "f");
  EXPECT_THAT(named.findings, IsEmpty());
  EXPECT_THAT(Addresses(named.resource), ElementsAre("10.0.0.1:8080"));

  // An unnamed Service port numbered 50051 is not the slice port "metrics"
  // that happens to carry that number.
  xds::EndpointsFrom unnamed{"web", "", 50051, /*match_name_only=*/true};
  SlicedEndpoints none = ClusterLoadAssignmentFromSlices({Slice(kNamedPorts)}, unnamed, "f");
  EXPECT_THAT(Addresses(none.resource), IsEmpty());
  ASSERT_EQ(none.findings.size(), 2u);
  EXPECT_THAT(none.findings[0].message, HasSubstr("web-n has no port (unnamed); it is skipped"));
  EXPECT_THAT(none.findings[1].message, HasSubstr("no ready endpoints on port (unnamed)"));
}

TEST(EndpointSlicesTest, NameOnlyEmptyNameTakesTheUnnamedSlicePort) {
  xds::EndpointsFrom unnamed{"web", "", 50051, /*match_name_only=*/true};
  SlicedEndpoints built = ClusterLoadAssignmentFromSlices(
      {Slice(kUnnamedPort), Slice(kEmptyNamePort), Slice(kNamedPorts)}, unnamed, "f");
  // The pod ports, not the Service's 50051.
  EXPECT_THAT(Addresses(built.resource), ElementsAre("10.0.0.2:8081", "10.0.0.3:8082"));
  ASSERT_EQ(built.findings.size(), 1u);
  EXPECT_THAT(built.findings[0].message, HasSubstr("web-n has no port (unnamed)"));
}

TEST(EndpointSlicesTest, NameOnlySkipsSlicesWithoutThePort) {
  xds::EndpointsFrom grpc{"web", "grpc", 0, /*match_name_only=*/true};
  SlicedEndpoints built = ClusterLoadAssignmentFromSlices(
      {Slice(kUnnamedPort), Slice(kNoPorts), Slice(kNamedPorts)}, grpc, "f");
  EXPECT_THAT(Addresses(built.resource), ElementsAre("10.0.0.1:8080"));
  ASSERT_EQ(built.findings.size(), 2u);
  EXPECT_THAT(built.findings[0].message, HasSubstr("web-u has no port grpc"));
  EXPECT_THAT(built.findings[1].message, HasSubstr("web-0 has no port grpc"));
}

TEST(EndpointSlicesTest, NoReadyEndpointsIsAWarningAndFqdnSlicesAreSkipped) {
  xds::EndpointsFrom from{"web", "grpc", 0};
  SlicedEndpoints none = ClusterLoadAssignmentFromSlices({}, from, "spec.variants[0].endpointsFrom");
  ASSERT_EQ(none.findings.size(), 1u);
  EXPECT_EQ(none.findings[0].severity, xds::Severity::kWarning);
  EXPECT_EQ(none.findings[0].field, "spec.variants[0].endpointsFrom");
  EXPECT_THAT(none.findings[0].message, HasSubstr("no ready endpoints"));
  EXPECT_EQ(Decode(none.resource).endpoints_size(), 0);
  SlicedEndpoints fqdn = ClusterLoadAssignmentFromSlices(
      {Slice("{metadata: {name: web-f}, addressType: FQDN, ports: [{name: grpc, port: 1}], "
             "endpoints: [{addresses: [a.example]}]}")},
      from, "f");
  EXPECT_THAT(fqdn.findings[0].message, HasSubstr("only IPv4 and IPv6"));
}

}  // namespace
}  // namespace facet::controller
