// Parent resolution (GAMMA) and backend resolution with ReferenceGrants.
#include "controller/gateway/translate/references.h"

#include <string>

#include "controller/gateway/model/gateway_status.h"
#include "controller/gateway/translate/translate_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::Parse;
using ::facet::controller::gateway::testing::Service;
using ::facet::controller::gateway::testing::World;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Outcome = ParentResolution::Outcome;

class ReferencesTest : public ::testing::Test {
 protected:
  ReferencesTest() {
    world_.Add(Service("echo",
                       "{ports: [{name: grpc, port: 7070}, {name: admin, port: 8080}, "
                       "{name: dns, port: 53, protocol: UDP}]}"));
    world_.Add(Service("headless", "{clusterIP: None, ports: [{port: 7070}]}"));
    world_.Add(Service("ext",
                       "{type: ExternalName, externalName: db.example.com, "
                       "ports: [{port: 7070}]}"));
    world_.Add(Service("udp", "{ports: [{port: 53, protocol: UDP}]}"));
    world_.Add(Service("other", "{ports: [{port: 7070}]}", "other"));
  }

  ParentResolution Parent(const std::string& ref) {
    return ResolveParentRef("demo", Reference(ref, kGatewayGroup, "Gateway"), world_.Lookup());
  }

  BackendResolution Backend(const std::string& ref) {
    return ResolveBackendRef("demo", Reference(ref, "", "Service"), world_.Lookup(),
                             TranslateOptions());
  }

  // Reads a reference written as YAML, with the given defaults.
  static ObjectReference Reference(const std::string& yaml, const std::string& group,
                                   const std::string& kind) {
    const YAML::Node node = YAML::Load(yaml);
    ObjectReference ref;
    ref.group = node["group"] ? node["group"].as<std::string>() : group;
    ref.kind = node["kind"] ? node["kind"].as<std::string>() : kind;
    ref.name = node["name"].as<std::string>();
    if (node["namespace"]) ref.namespace_ = node["namespace"].as<std::string>();
    if (node["sectionName"]) ref.section_name = node["sectionName"].as<std::string>();
    if (node["port"]) ref.port = node["port"].as<int>();
    ref.field = "spec.parentRefs[0]";
    return ref;
  }

  void Grant(const std::string& ns, const std::string& spec) {
    world_.Add(
        Parse(absl::StrCat("{apiVersion: gateway.networking.k8s.io/v1beta1, kind: "
                           "ReferenceGrant, metadata: {name: g, namespace: ",
                           ns, "}, spec: ", spec, "}")));
  }

  World world_;
};

TEST_F(ReferencesTest, PortSelectsThatPort) {
  const ParentResolution resolved = Parent("{group: '', kind: Service, name: echo, port: 8080}");
  EXPECT_EQ(resolved.outcome, Outcome::kAttached);
  EXPECT_EQ(resolved.service, (xds::ObjectRef{"Service", "demo", "echo"}));
  EXPECT_THAT(resolved.ports, ElementsAre(8080));
}

TEST_F(ReferencesTest, SectionNameSelectsThePortOfThatName) {
  EXPECT_THAT(Parent("{group: '', kind: Service, name: echo, sectionName: grpc}").ports,
              ElementsAre(7070));
}

TEST_F(ReferencesTest, PortAndSectionNameMustAgree) {
  EXPECT_THAT(Parent("{group: '', kind: Service, name: echo, sectionName: grpc, port: 7070}").ports,
              ElementsAre(7070));
  const ParentResolution mismatch =
      Parent("{group: '', kind: Service, name: echo, sectionName: grpc, port: 8080}");
  EXPECT_EQ(mismatch.outcome, Outcome::kRejected);
  EXPECT_EQ(mismatch.reason, kReasonNoMatchingParent);
  EXPECT_THAT(mismatch.message, HasSubstr("name different ports"));
}

TEST_F(ReferencesTest, NeitherSelectsEveryTcpPort) {
  EXPECT_THAT(Parent("{group: '', kind: Service, name: echo}").ports, ElementsAre(7070, 8080));
}

TEST_F(ReferencesTest, MissingPortsAreNoMatchingParent) {
  for (const char* ref :
       {"{group: '', kind: Service, name: echo, port: 9999}",
        "{group: '', kind: Service, name: echo, sectionName: web}",
        "{group: '', kind: Service, name: echo, port: 53}", "{group: '', kind: Service, name: udp}",
        "{group: '', kind: Service, name: missing}"}) {
    const ParentResolution resolved = Parent(ref);
    EXPECT_EQ(resolved.outcome, Outcome::kRejected) << ref;
    EXPECT_EQ(resolved.reason, kReasonNoMatchingParent) << ref;
  }
  EXPECT_EQ(Parent("{group: '', kind: Service, name: missing}").message,
            "Service demo/missing does not exist");
  EXPECT_EQ(Parent("{group: '', kind: Service, name: echo, port: 53}").message,
            "port 53 of Service demo/echo is UDP; gRPC runs over TCP");
}

TEST_F(ReferencesTest, HeadlessAndExternalNameParentsAreNoMatchingParent) {
  const ParentResolution headless = Parent("{group: '', kind: Service, name: headless}");
  EXPECT_EQ(headless.reason, kReasonNoMatchingParent);
  EXPECT_THAT(headless.message, HasSubstr("is headless"));
  const ParentResolution external = Parent("{group: '', kind: Service, name: ext}");
  EXPECT_EQ(external.reason, kReasonNoMatchingParent);
  EXPECT_THAT(external.message, HasSubstr("ExternalName"));
}

TEST_F(ReferencesTest, ServiceInTheGatewayGroupGetsTheHint) {
  const ParentResolution resolved = Parent("{kind: Service, name: echo, port: 7070}");
  EXPECT_EQ(resolved.outcome, Outcome::kRejected);
  EXPECT_EQ(resolved.reason, kReasonNoMatchingParent);
  EXPECT_THAT(resolved.message, HasSubstr("set group: \"\" for a core Service"));
}

TEST_F(ReferencesTest, GatewaysAreOtherControllersParents) {
  EXPECT_EQ(Parent("{name: gw}").outcome, Outcome::kNotFacets);
  EXPECT_EQ(Parent("{group: example.com, kind: Service, name: echo}").outcome, Outcome::kNotFacets);
}

TEST_F(ReferencesTest, ConsumerRouteIsAttached) {
  const ParentResolution resolved =
      Parent("{group: '', kind: Service, name: other, namespace: other}");
  EXPECT_EQ(resolved.outcome, Outcome::kAttached);
  EXPECT_THAT(resolved.ports, ElementsAre(7070));
}

TEST_F(ReferencesTest, ConsumerRouteIsNotServedWithoutAClientNamespaceParameter) {
  TranslateOptions options;
  options.client_namespace_param = "";
  const ParentResolution resolved =
      ResolveParentRef("demo",
                       Reference("{group: '', kind: Service, name: other, namespace: other}",
                                 kGatewayGroup, "Gateway"),
                       world_.Lookup(), options);
  EXPECT_EQ(resolved.outcome, Outcome::kRejected);
  EXPECT_EQ(resolved.reason, kReasonConsumerRoutesDisabled);
  EXPECT_THAT(resolved.message, HasSubstr("--gateway-client-namespace-param is empty"));
}

TEST_F(ReferencesTest, BackendIsTheClusterOfItsServicePort) {
  const BackendResolution resolved = Backend("{name: echo, port: 7070}");
  EXPECT_EQ(resolved.cluster, "echo.demo.svc.cluster.local:7070");
  EXPECT_THAT(resolved.reason, IsEmpty());
  // A headless backend has endpoints (its pods).
  EXPECT_EQ(Backend("{name: headless, port: 7070}").cluster,
            "headless.demo.svc.cluster.local:7070");
}

TEST_F(ReferencesTest, InvalidBackendsHaveTheStandardReasons) {
  EXPECT_EQ(Backend("{name: missing, port: 7070}").reason, kReasonBackendNotFound);
  EXPECT_EQ(Backend("{name: echo, port: 7071}").reason, kReasonBackendNotFound);
  EXPECT_EQ(Backend("{name: echo, port: 53}").reason, kReasonUnsupportedProtocol);
  EXPECT_EQ(Backend("{name: ext, port: 7070}").reason, kReasonInvalidKind);
  EXPECT_EQ(Backend("{group: example.com, kind: Backend, name: echo, port: 7070}").reason,
            kReasonInvalidKind);
  EXPECT_EQ(Backend("{name: missing, port: 7070}").message, "Service demo/missing does not exist");
}

TEST_F(ReferencesTest, CrossNamespaceBackendWithoutGrantIsRefNotPermitted) {
  const BackendResolution resolved = Backend("{name: other, namespace: other, port: 7070}");
  EXPECT_EQ(resolved.reason, kReasonRefNotPermitted);
  EXPECT_THAT(resolved.message, HasSubstr("no ReferenceGrant"));
}

TEST_F(ReferencesTest, NamespaceWideGrantPermits) {
  Grant("other",
        "{from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: demo}], "
        "to: [{group: '', kind: Service}]}");
  EXPECT_EQ(Backend("{name: other, namespace: other, port: 7070}").cluster,
            "other.other.svc.cluster.local:7070");
}

TEST_F(ReferencesTest, NamedGrantPermitsThatServiceOnly) {
  Grant("other",
        "{from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: demo}], "
        "to: [{group: '', kind: Service, name: other}]}");
  world_.Add(Service("second", "{ports: [{port: 7070}]}", "other"));
  EXPECT_EQ(Backend("{name: other, namespace: other, port: 7070}").cluster,
            "other.other.svc.cluster.local:7070");
  EXPECT_EQ(Backend("{name: second, namespace: other, port: 7070}").reason, kReasonRefNotPermitted);
}

TEST_F(ReferencesTest, GrantFromAnotherKindOrNamespaceDoesNotPermit) {
  Grant("other",
        "{from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: demo}, "
        "{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: elsewhere}], "
        "to: [{group: '', kind: Service}]}");
  EXPECT_EQ(Backend("{name: other, namespace: other, port: 7070}").reason, kReasonRefNotPermitted);
}

TEST_F(ReferencesTest, GrantInTheRouteNamespaceDoesNotPermit) {
  // The grant must live in the namespace of the object it grants.
  Grant("demo",
        "{from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: demo}], "
        "to: [{group: '', kind: Service}]}");
  EXPECT_EQ(Backend("{name: other, namespace: other, port: 7070}").reason, kReasonRefNotPermitted);
}

}  // namespace
}  // namespace facet::controller::gateway
