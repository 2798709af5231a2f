// The kinds and versions a GatewayObject holds, their metadata, and the
// Service, EndpointSlice, ReferenceGrant and XdsVariantPolicy specs.
#include "controller/gateway/model/gateway_parser.h"

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

GatewayObject Parse(const std::string& yaml) {
  return ParseGatewayObject(YAML::Load(yaml), "objects.yaml:3", "default");
}

std::vector<std::string> Messages(const GatewayObject& object) {
  std::vector<std::string> out;
  for (const xds::Finding& f : object.findings) out.push_back(f.field + ": " + f.message);
  return out;
}

TEST(GatewayParserTest, RecognizesTheKindsByGroup) {
  EXPECT_TRUE(IsGatewayKind("gateway.networking.k8s.io/v1", "GRPCRoute"));
  EXPECT_TRUE(IsGatewayKind("gateway.networking.k8s.io/v1beta1", "ReferenceGrant"));
  EXPECT_TRUE(IsGatewayKind("gateway.networking.k8s.io/v1alpha2", "GRPCRoute"));
  EXPECT_TRUE(IsGatewayKind("v1", "Service"));
  EXPECT_TRUE(IsGatewayKind("discovery.k8s.io/v1", "EndpointSlice"));
  EXPECT_TRUE(IsGatewayKind("facet.dev/v1alpha1", "XdsVariantPolicy"));
  EXPECT_FALSE(IsGatewayKind("gateway.networking.k8s.io/v1", "HTTPRoute"));
  EXPECT_FALSE(IsGatewayKind("gateway.networking.k8s.io/v1", "Gateway"));
  EXPECT_FALSE(IsGatewayKind("example.com/v1", "Service"));
  EXPECT_FALSE(IsGatewayKind("v1", "Endpoints"));
  EXPECT_FALSE(IsGatewayKind("facet.dev/v1alpha1", "XdsResource"));
}

TEST(GatewayParserTest, ReadsMetadata) {
  const GatewayObject object = Parse(R"(
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: greeter, namespace: demo, generation: 4, creationTimestamp: "2026-01-02T03:04:05Z"}
spec: {}
)");
  EXPECT_THAT(Messages(object), IsEmpty());
  EXPECT_EQ(object.ref, (xds::ObjectRef{"GRPCRoute", "demo", "greeter"}));
  EXPECT_EQ(object.generation, 4);
  EXPECT_EQ(object.creation_timestamp, "2026-01-02T03:04:05Z");
  EXPECT_THAT(object.creation_time, Optional(absl::FromCivil(absl::CivilSecond(2026, 1, 2, 3, 4, 5),
                                                             absl::UTCTimeZone())));
  EXPECT_EQ(object.location, "objects.yaml:3");
  EXPECT_EQ(Parse("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {}}").ref.namespace_,
            "default");
}

TEST(GatewayParserTest, ReadsCreationTimestampsAsRfc3339) {
  auto parse = [](const std::string& timestamp) {
    return Parse(
        absl::StrCat("{apiVersion: v1, kind: Service, metadata: {name: s, "
                     "creationTimestamp: ",
                     timestamp, "}, spec: {}}"));
  };
  const absl::Time base =
      absl::FromCivil(absl::CivilSecond(2026, 1, 2, 3, 4, 5), absl::UTCTimeZone());
  EXPECT_THAT(parse("'2026-01-02T03:04:05.25Z'").creation_time,
              Optional(base + absl::Milliseconds(250)));
  EXPECT_THAT(parse("'2026-01-02T05:04:05+02:00'").creation_time, Optional(base));
  const GatewayObject unset =
      Parse("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {}}");
  EXPECT_EQ(unset.creation_time, std::nullopt);
  EXPECT_THAT(Messages(unset), IsEmpty());
  for (const char* bad : {"yesterday", "'2026-01-02 03:04:05'", "'2026-13-02T03:04:05Z'", "[1]"}) {
    SCOPED_TRACE(bad);
    const GatewayObject object = parse(bad);
    EXPECT_EQ(object.creation_time, std::nullopt);
    EXPECT_THAT(Messages(object), ElementsAre(HasSubstr("metadata.creationTimestamp: ")));
    EXPECT_TRUE(object.has_errors());
  }
  EXPECT_THAT(Messages(parse("yesterday")),
              ElementsAre("metadata.creationTimestamp: \"yesterday\" is not an RFC 3339 time "
                          "(2006-01-02T15:04:05Z)"));
}

TEST(GatewayParserTest, AcceptsTheSupportedVersionsOnly) {
  for (const char* api_version :
       {"gateway.networking.k8s.io/v1beta1", "gateway.networking.k8s.io/v1"}) {
    EXPECT_THAT(Messages(Parse(absl::StrCat(
                    "{apiVersion: ", api_version,
                    ", kind: ReferenceGrant, metadata: {name: g}, "
                    "spec: {from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, "
                    "namespace: a}], to: [{group: '', kind: Service}]}}"))),
                IsEmpty())
        << api_version;
  }
  EXPECT_THAT(Messages(Parse("{apiVersion: gateway.networking.k8s.io/v1alpha2, kind: GRPCRoute, "
                             "metadata: {name: r}, spec: {}}")),
              ElementsAre("apiVersion: unsupported version gateway.networking.k8s.io/v1alpha2; "
                          "Facet reads GRPCRoute as gateway.networking.k8s.io/v1"));
  EXPECT_THAT(Messages(Parse("{apiVersion: discovery.k8s.io/v1beta1, kind: EndpointSlice, "
                             "metadata: {name: s, labels: {kubernetes.io/service-name: a}}}")),
              ElementsAre(HasSubstr("apiVersion: unsupported version discovery.k8s.io/v1beta1")));
  EXPECT_THAT(Messages(Parse("{apiVersion: gateway.networking.k8s.io/v1alpha2, kind: "
                             "ReferenceGrant, metadata: {name: g}, spec: {from: [{group: '', "
                             "kind: K, namespace: a}], to: [{group: '', kind: Service}]}}")),
              ElementsAre(HasSubstr("Facet reads ReferenceGrant as "
                                    "gateway.networking.k8s.io/v1beta1 or "
                                    "gateway.networking.k8s.io/v1")));
}

TEST(GatewayParserTest, RejectsBadNamesAndNamespaces) {
  EXPECT_THAT(Messages(Parse("{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, "
                             "metadata: {name: Greeter, namespace: Demo}, spec: {}}")),
              ElementsAre(HasSubstr("metadata.name: \"Greeter\" is not a valid Kubernetes name"),
                          HasSubstr("metadata.namespace: \"Demo\" is not a valid Kubernetes")));
  // A Service name is a DNS label of its own (S.N.svc.cluster.local).
  EXPECT_THAT(Messages(Parse("{apiVersion: v1, kind: Service, metadata: {name: a.b}, spec: {}}")),
              ElementsAre(HasSubstr("metadata.name: \"a.b\" is not a valid Service name")));
  EXPECT_THAT(Messages(Parse("{apiVersion: v1, kind: Service, metadata: {name: 1a}, spec: {}}")),
              ElementsAre(HasSubstr("is not a valid Service name")));
}

TEST(GatewayParserTest, ParsesAService) {
  const GatewayObject object = Parse(R"(
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: demo}
spec:
  selector: {app: echo}
  sessionAffinity: None
  ports:
  - {name: grpc, port: 7070, targetPort: 9090}
  - {name: admin, port: 8080, protocol: UDP, targetPort: admin-port, appProtocol: http}
)");
  EXPECT_THAT(Messages(object), IsEmpty());
  const ServiceInfo& service = std::get<ServiceInfo>(object.spec);
  EXPECT_EQ(service.type, "ClusterIP");
  EXPECT_FALSE(service.headless());
  ASSERT_EQ(service.ports.size(), 2u);
  EXPECT_EQ(service.ports[0].name, "grpc");
  EXPECT_EQ(service.ports[0].port, 7070);
  EXPECT_EQ(service.ports[0].protocol, "TCP");
  EXPECT_EQ(service.ports[0].target_port, "9090");
  EXPECT_EQ(service.ports[1].protocol, "UDP");
  EXPECT_EQ(service.ports[1].target_port, "admin-port");
}

TEST(GatewayParserTest, ParsesHeadlessAndExternalNameServices) {
  const GatewayObject headless = Parse(
      "{apiVersion: v1, kind: Service, metadata: {name: h}, spec: {clusterIP: None, "
      "ports: [{port: 50051}]}}");
  EXPECT_THAT(Messages(headless), IsEmpty());
  EXPECT_TRUE(std::get<ServiceInfo>(headless.spec).headless());
  EXPECT_EQ(std::get<ServiceInfo>(headless.spec).ports[0].name, "");
  const GatewayObject external = Parse(
      "{apiVersion: v1, kind: Service, metadata: {name: x}, spec: {type: ExternalName, "
      "externalName: api.example.com}}");
  EXPECT_EQ(std::get<ServiceInfo>(external.spec).external_name, "api.example.com");
  EXPECT_THAT(Messages(Parse("{apiVersion: v1, kind: Service, metadata: {name: x}, "
                             "spec: {type: ExternalName}}")),
              ElementsAre("spec.externalName: is required for type ExternalName"));
}

TEST(GatewayParserTest, RejectsBadServicePorts) {
  EXPECT_THAT(
      Messages(Parse("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: Mesh, "
                     "ports: [{name: a, port: 0}, {port: 80, protocol: HTTP}, "
                     "{name: a, port: 81, targetPort: [1]}, {name: Bad_Name, port: 82}]}}")),
      ElementsAre(HasSubstr("spec.type: \"Mesh\" is not supported; expected one of ClusterIP"),
                  "spec.ports[0].port: 0 is not between 1 and 65535",
                  HasSubstr("spec.ports[1].protocol: \"HTTP\" is not supported"),
                  "spec.ports[1].name: is required when a Service has more than one port",
                  HasSubstr("spec.ports[2].targetPort: expected a port number or name"),
                  "spec.ports[2].name: \"a\" is also the name of spec.ports[0]",
                  HasSubstr("spec.ports[3].name: \"Bad_Name\" does not match")));
}

TEST(GatewayParserTest, RejectsAPortAndProtocolTwice) {
  // Kubernetes refuses them, and the names served derive from the port.
  EXPECT_THAT(Messages(Parse("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {ports: ["
                             "{name: a, port: 80}, {name: b, port: 80, protocol: UDP}, "
                             "{name: c, port: 81}, {name: d, port: 80, protocol: TCP}, "
                             "{name: e, port: 80, protocol: UDP}]}}")),
              ElementsAre("spec.ports[3].port: port 80/TCP is also spec.ports[0]'s",
                          "spec.ports[4].port: port 80/UDP is also spec.ports[1]'s"));
}

TEST(GatewayParserTest, AnEmptyPortNameIsUnnamedAndOnlyOnePortMayBeUnnamed) {
  const GatewayObject single = Parse(
      "{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {ports: [{name: '', port: "
      "80}]}}");
  EXPECT_THAT(Messages(single), IsEmpty());
  EXPECT_EQ(std::get<ServiceInfo>(single.spec).ports[0].name, "");
  EXPECT_THAT(Messages(Parse("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {ports: "
                             "[{name: a, port: 80}, {name: '', port: 81}]}}")),
              ElementsAre("spec.ports[1].name: is required when a Service has more than one port"));
}

TEST(GatewayParserTest, KeepsAnEndpointSliceWithItsService) {
  const YAML::Node document = YAML::Load(R"(
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-abc, namespace: demo, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: grpc, port: 9090}]
endpoints: [{addresses: [10.0.0.1]}]
)");
  const GatewayObject object = ParseGatewayObject(document, "s.yaml:1", "default");
  EXPECT_THAT(Messages(object), IsEmpty());
  const SliceRef& slice = std::get<SliceRef>(object.spec);
  EXPECT_EQ(slice.service, "echo");
  // The very node: the endpoints code reads it as YAML.
  EXPECT_TRUE(slice.slice.is(document));
}

TEST(GatewayParserTest, WarnsAboutASliceWithoutAService) {
  const GatewayObject object = Parse(
      "{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: s}, "
      "addressType: IPv4}");
  EXPECT_THAT(Messages(object),
              ElementsAre(HasSubstr("metadata.labels.kubernetes.io/service-name: is not set")));
  EXPECT_FALSE(object.has_errors());
  EXPECT_EQ(std::get<SliceRef>(object.spec).service, "");
}

TEST(GatewayParserTest, ParsesAReferenceGrant) {
  const GatewayObject object = Parse(R"(
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-demo, namespace: backends}
spec:
  from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: demo}]
  to: [{group: "", kind: Service}, {group: "", kind: Service, name: echo}]
)");
  EXPECT_THAT(Messages(object), IsEmpty());
  const ReferenceGrant& grant = std::get<ReferenceGrant>(object.spec);
  ASSERT_EQ(grant.from.size(), 1u);
  EXPECT_EQ(grant.from[0].namespace_, "demo");
  ASSERT_EQ(grant.to.size(), 2u);
  EXPECT_EQ(grant.to[0].group, "");
  EXPECT_FALSE(grant.to[0].name.has_value());
  EXPECT_THAT(grant.to[1].name, Optional(std::string("echo")));
}

TEST(GatewayParserTest, RejectsBadReferenceGrants) {
  EXPECT_THAT(Messages(Parse("{apiVersion: gateway.networking.k8s.io/v1beta1, kind: "
                             "ReferenceGrant, metadata: {name: g}, spec: {from: [], "
                             "to: [{kind: Service, nmae: x}]}}")),
              ElementsAre("spec.from: has 0 entries; at least 1 are required",
                          HasSubstr("spec.to[0].nmae: unknown field; expected one of group, "
                                    "kind, name; did you mean \"name\"?"),
                          "spec.to[0].group: is required"));
  const std::string from = "{group: '', kind: K, namespace: a}";
  std::string many = "[";
  for (int i = 0; i < 17; ++i) absl::StrAppend(&many, i ? ", " : "", from);
  EXPECT_THAT(Messages(Parse(absl::StrCat("{apiVersion: gateway.networking.k8s.io/v1, kind: "
                                          "ReferenceGrant, metadata: {name: g}, spec: {from: ",
                                          many, "], to: [{group: '', kind: Service}]}}"))),
              ElementsAre(HasSubstr("spec.from: has 17 entries; at most 16")));
}

TEST(GatewayParserTest, ParsesAVariantPolicyAndCompilesWhen) {
  const GatewayObject object = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsVariantPolicy
metadata: {name: canary-prod, namespace: demo}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: greeter, sectionName: canary}]
  when: {env: prod}
)");
  EXPECT_THAT(Messages(object), IsEmpty());
  const VariantPolicy& policy = std::get<VariantPolicy>(object.spec);
  ASSERT_EQ(policy.target_refs.size(), 1u);
  EXPECT_EQ(policy.target_refs[0].name, "greeter");
  EXPECT_THAT(policy.target_refs[0].section_name, Optional(std::string("canary")));
  EXPECT_EQ(policy.target_refs[0].field, "spec.targetRefs[0]");
  EXPECT_TRUE(policy.when.IsMap());
  ASSERT_TRUE(policy.constraints.has_value());
  EXPECT_EQ(policy.constraints->constraint().key(), "env");
  EXPECT_EQ(policy.constraints->constraint().value(), "prod");
}

TEST(GatewayParserTest, ReportsAnInvalidWhenWithItsPath) {
  const GatewayObject object = Parse(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsVariantPolicy, metadata: {name: p}, spec: "
      "{targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: r}], "
      "when: {env: {exists: maybe}}}}");
  ASSERT_EQ(object.findings.size(), 1u);
  EXPECT_EQ(object.findings[0].reason, "InvalidConstraints");
  EXPECT_EQ(object.findings[0].field, "spec.when");
  EXPECT_THAT(object.findings[0].message, HasSubstr("spec.when.env"));
  EXPECT_FALSE(std::get<VariantPolicy>(object.spec).constraints.has_value());
}

TEST(GatewayParserTest, RejectsBadPolicyTargets) {
  EXPECT_THAT(
      Messages(Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsVariantPolicy, metadata: "
                     "{name: p}, spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: "
                     "HTTPRoute, name: r}, {kind: GRPCRoute, name: r, port: 1}, {group: "
                     "gateway.networking.k8s.io, kind: GRPCRoute, name: r, sectionName: a}, "
                     "{group: gateway.networking.k8s.io, kind: GRPCRoute, name: r, "
                     "sectionName: a}]}}")),
      ElementsAre("spec.targetRefs[0].kind: must be GRPCRoute",
                  HasSubstr("spec.targetRefs[1].port: unknown field"),
                  "spec.targetRefs[1].group: is required",
                  "spec.targetRefs[3]: targets the same rule as spec.targetRefs[2]; each "
                  "targetRef must be unique",
                  HasSubstr("spec.when: is required")));
  EXPECT_THAT(
      Messages(Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsVariantPolicy, metadata: "
                     "{name: p}, spec: {when: {}, targetRefs: [{group: gateway.networking.k8s.io, "
                     "kind: GRPCRoute, name: r, sectionName: a}, {group: "
                     "gateway.networking.k8s.io, kind: GRPCRoute, name: r}]}}")),
      ElementsAre("spec.targetRefs[1]: a GRPCRoute named by several targetRefs needs a "
                  "sectionName in each (also spec.targetRefs[0])"));
  EXPECT_THAT(Messages(Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsVariantPolicy, "
                             "metadata: {name: p}, spec: {targetRefs: [], when: {}}}")),
              ElementsAre("spec.targetRefs: has 0 entries; at least 1 are required"));
}

// A watch cache's object and a slice read from it share one tree; a slice
// assigned a newer one must not write through to the cache's.
TEST(GatewayObjectTest, AssignmentRebindsNodesAndLeavesSharedCopiesAlone) {
  const YAML::Node cached = YAML::Load("metadata: {name: a}");
  SliceRef held;
  held.slice = cached;  // A fresh node binds.
  SliceRef next;
  next.slice = YAML::Load("metadata: {name: b}");
  held = next;
  EXPECT_EQ(cached["metadata"]["name"].as<std::string>(), "a");
  EXPECT_EQ(std::as_const(held.slice)["metadata"]["name"].as<std::string>(), "b");
  SliceRef last;
  last.slice = YAML::Load("metadata: {name: c}");
  held = std::move(last);
  EXPECT_EQ(cached["metadata"]["name"].as<std::string>(), "a");
  EXPECT_EQ(std::as_const(held.slice)["metadata"]["name"].as<std::string>(), "c");

  const YAML::Node written = YAML::Load("env: prod");
  VariantPolicy policy;
  policy.when = written;
  VariantPolicy newer;
  newer.when = YAML::Load("env: test");
  policy = std::move(newer);
  EXPECT_EQ(written["env"].as<std::string>(), "prod");
  EXPECT_EQ(std::as_const(policy.when)["env"].as<std::string>(), "test");
}

}  // namespace
}  // namespace facet::controller::gateway
