#include "controller/objects/object_parser.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ParsedDocument Parse(const std::string& yaml) {
  return ParseDocument(YAML::Load(yaml), "test.yaml:1", "default");
}

std::vector<std::string> Messages(const std::vector<xds::Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.field + ": " + f.message);
  return out;
}

TEST(ParseDocumentTest, ParsesAnXdsResourceWithBothConstraintForms) {
  ParsedDocument parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: greeter-route, namespace: demo, generation: 3}
spec:
  type: route
  name: greeter
  authority: a.example
  contextParams: {shard: "1"}
  variants:
  - name: prod
    match: {env: prod}
    resource: {virtual_hosts: []}
  - name: test
    constraints: {constraint: {key: env, value: test}}
    resource: {}
  - resource: {}
)");
  auto* object = std::get_if<xds::ResourceObject>(&parsed);
  ASSERT_NE(object, nullptr);
  EXPECT_THAT(Messages(object->findings), IsEmpty());
  EXPECT_EQ(object->ref.ToString(), "demo/greeter-route");
  EXPECT_EQ(object->generation, 3);
  ASSERT_TRUE(object->spec.has_value());
  EXPECT_EQ(object->spec->type, "route");
  EXPECT_EQ(object->spec->authority, "a.example");
  EXPECT_EQ(object->spec->context_params.at("shard"), "1");
  ASSERT_EQ(object->spec->variants.size(), 3u);
  EXPECT_EQ(object->spec->variants[0].constraints.constraint().value(), "prod");
  EXPECT_EQ(object->spec->variants[0].constraints_field, "spec.variants[0].match");
  EXPECT_EQ(object->spec->variants[1].constraints.constraint().value(), "test");
  EXPECT_EQ(object->spec->variants[2].label, "variants[2]");
  EXPECT_EQ(object->spec->variants[2].constraints.type_case(),
            envoy::service::discovery::v3::DynamicParameterConstraints::TYPE_NOT_SET);
}

TEST(ParseDocumentTest, CompilesConditionalElementsOfASingleVariant) {
  ParsedDocument parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: greeter-route, namespace: demo}
spec:
  type: route
  name: greeter
  variants:
  - name: routes
    match: {}
    resource:
      virtual_hosts:
      - routes:
        - {"@when": {env: prod}, name: prod}
        - {"@whenConstraints": {constraint: {key: version, value: v1}}, name: v1}
        - {name: default}
)");
  auto* object = std::get_if<xds::ResourceObject>(&parsed);
  ASSERT_NE(object, nullptr);
  EXPECT_THAT(Messages(object->findings), IsEmpty());
  ASSERT_TRUE(object->spec.has_value());
  ASSERT_EQ(object->spec->variants.size(), 4u);
  const xds::VariantSpec& both = object->spec->variants[3];
  EXPECT_EQ(both.label, "routes/3");
  EXPECT_EQ(both.constraints_field, "spec.variants[0]");
  ASSERT_NE(both.origin, nullptr);
  EXPECT_THAT(both.included, ElementsAre(0, 1));
  EXPECT_EQ(both.resource["virtual_hosts"][0]["routes"].size(), 3u);
  EXPECT_FALSE(both.resource["virtual_hosts"][0]["routes"][0]["@when"]);
  EXPECT_EQ(object->spec->variants[0].resource["virtual_hosts"][0]["routes"].size(), 1u);
}

TEST(ParseDocumentTest, RejectsConditionalElementsBesideVariantConstraints) {
  ParsedDocument parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: greeter-route, namespace: demo}
spec:
  type: route
  name: greeter
  variants:
  - match: {env: prod}
    resource: {virtual_hosts: [{routes: [{"@when": {version: v1}}]}]}
)");
  auto* object = std::get_if<xds::ResourceObject>(&parsed);
  ASSERT_NE(object, nullptr);
  EXPECT_FALSE(object->spec.has_value());
  EXPECT_THAT(Messages(object->findings),
              ElementsAre(AllOf(
                  HasSubstr("spec.variants[0].resource.virtual_hosts[0].routes[0].@when: "),
                  HasSubstr("constrains its variant"), HasSubstr("not designed yet"))));
}

TEST(ParseDocumentTest, DefaultsTheNamespace) {
  auto parsed = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: x}, "
                      "spec: {type: route, name: x, variants: [{resource: {}}]}}");
  EXPECT_EQ(std::get<xds::ResourceObject>(parsed).ref.namespace_, "default");
}

TEST(ParseDocumentTest, ParsesAnXdsAuthority) {
  auto parsed = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: a-example},"
                      " spec: {authority: a.example, allowedNamespaces: [demo, '*']}}");
  auto* authority = std::get_if<xds::AuthorityObject>(&parsed);
  ASSERT_NE(authority, nullptr);
  EXPECT_EQ(authority->authority, "a.example");
  EXPECT_THAT(authority->allowed_namespaces, ElementsAre("demo", "*"));
  auto defaulted = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: b}, spec: {}}");
  EXPECT_EQ(std::get<xds::AuthorityObject>(defaulted).authority, "b");
}

TEST(ParseDocumentTest, ParsesAllowedClientsOfAnXdsAuthority) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsAuthority
metadata: {name: a-example}
spec:
  allowedClients:
  - spiffeId: spiffe://example.org/ns/demo/sa/client
  - dnsName: client.demo.svc
)");
  auto& authority = std::get<xds::AuthorityObject>(parsed);
  EXPECT_THAT(Messages(authority.findings), IsEmpty());
  ASSERT_TRUE(authority.allowed_clients.has_value());
  EXPECT_THAT(*authority.allowed_clients,
              ElementsAre(xds::AllowedClient{xds::AllowedClient::Kind::kSpiffeId,
                                             "spiffe://example.org/ns/demo/sa/client"},
                          xds::AllowedClient{xds::AllowedClient::Kind::kDnsName,
                                             "client.demo.svc"}));
  // Absent: unrestricted; present and empty: kept, so that validation can
  // refuse it.
  auto open = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: b}}");
  EXPECT_FALSE(std::get<xds::AuthorityObject>(open).allowed_clients.has_value());
  auto empty = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: b}, "
                     "spec: {allowedClients: []}}");
  ASSERT_TRUE(std::get<xds::AuthorityObject>(empty).allowed_clients.has_value());
  EXPECT_THAT(*std::get<xds::AuthorityObject>(empty).allowed_clients, IsEmpty());
}

TEST(ParseDocumentTest, RejectsMalformedAllowedClientsNamingTheEntry) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsAuthority
metadata: {name: a-example}
spec:
  allowedClients:
  - spiffeId: spiffe://example.org/a
    dnsName: a.example
  - {}
  - dnsName: 443
  - uri: spiffe://example.org/a
  - spiffe://example.org/a
)");
  auto& authority = std::get<xds::AuthorityObject>(parsed);
  EXPECT_THAT(Messages(authority.findings),
              ElementsAre("spec.allowedClients[0]: set exactly one of spiffeId and dnsName",
                          "spec.allowedClients[1]: set exactly one of spiffeId and dnsName",
                          HasSubstr("spec.allowedClients[2].dnsName: expected a string"),
                          HasSubstr("spec.allowedClients[3].uri: unknown field; expected one of "
                                    "spiffeId, dnsName"),
                          "spec.allowedClients[3]: set exactly one of spiffeId and dnsName",
                          HasSubstr("spec.allowedClients[4]: expected {spiffeId: ...} or "
                                    "{dnsName: ...}, found")));
  auto map = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: b}, "
                   "spec: {allowedClients: {spiffeId: 'spiffe://x/y'}}}");
  EXPECT_THAT(Messages(std::get<xds::AuthorityObject>(map).findings),
              ElementsAre(HasSubstr("spec.allowedClients: expected a list of")));
  std::string many = "{apiVersion: facet.dev/v1alpha1, kind: XdsAuthority, metadata: {name: b}, "
                     "spec: {allowedClients: [";
  for (int i = 0; i < 300; ++i) absl::StrAppend(&many, i == 0 ? "" : ", ", "{dnsName: a.b}");
  absl::StrAppend(&many, "]}}");
  EXPECT_THAT(Messages(std::get<xds::AuthorityObject>(Parse(many)).findings),
              ElementsAre(HasSubstr("spec.allowedClients: has 300 entries; at most 256")));
}

TEST(ParseDocumentTest, RejectsBothMatchAndConstraints) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: r}
spec: {type: route, name: r, variants: [{match: {env: a}, constraints: {constraint: {key: env, value: a}}, resource: {}}]}
)");
  auto& object = std::get<xds::ResourceObject>(parsed);
  EXPECT_FALSE(object.spec.has_value());
  EXPECT_THAT(Messages(object.findings),
              ElementsAre(HasSubstr("spec.variants[0]: both match and constraints are set")));
}

TEST(ParseDocumentTest, ParsesEndpointsFromByPortNameOrNumber) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: e}
spec: {type: endpoint, name: e, variants: [
  {match: {env: a}, endpointsFrom: {service: web, port: grpc}},
  {match: {env: {not: a}}, endpointsFrom: {service: web-b, port: 8080}}]}
)");
  auto& object = std::get<xds::ResourceObject>(parsed);
  ASSERT_TRUE(object.spec.has_value()) << ::testing::PrintToString(Messages(object.findings));
  ASSERT_TRUE(object.spec->variants[0].endpoints_from.has_value());
  EXPECT_EQ(object.spec->variants[0].endpoints_from->service, "web");
  EXPECT_EQ(object.spec->variants[0].endpoints_from->port_name, "grpc");
  EXPECT_EQ(object.spec->variants[1].endpoints_from->port_number, 8080);
}

TEST(ParseDocumentTest, RejectsBadEndpointsFromWithTheirPath) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: e}
spec:
  type: endpoint
  name: e
  variants:
  - {endpointsFrom: {service: web, port: grpc}, resource: {}}
  - {endpointsFrom: {service: web, port: 70000}}
  - {endpointsFrom: {port: grpc, bogus: 1}}
  - {}
)");
  auto& object = std::get<xds::ResourceObject>(parsed);
  EXPECT_FALSE(object.spec.has_value());
  EXPECT_THAT(Messages(object.findings),
              ::testing::IsSupersetOf({
                  HasSubstr("spec.variants[0]: both resource and endpointsFrom are set"),
                  HasSubstr("spec.variants[1].endpointsFrom.port: port 70000 is not between 1 and 65535"),
                  HasSubstr("spec.variants[2].endpointsFrom.service: is required"),
                  HasSubstr("spec.variants[2].endpointsFrom.bogus"),
                  HasSubstr("spec.variants[3].resource: is required (or endpointsFrom)"),
              }));
}

TEST(ParseDocumentTest, ReportsBadConstraintsWithTheirPath) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: r}
spec:
  type: route
  name: r
  variants:
  - {constraints: {constraint: {key: env, valu: a}}, resource: {}}
  - {match: {env: {exists: maybe}}, resource: {}}
)");
  auto& object = std::get<xds::ResourceObject>(parsed);
  EXPECT_THAT(Messages(object.findings),
              ElementsAre(HasSubstr("spec.variants[0].constraints.constraint.valu: unknown field"),
                          HasSubstr("spec.variants[1].match")));
}

TEST(ParseDocumentTest, RejectsUnknownAndMistypedSpecFields) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: r}
spec: {type: route, nmae: r, name: 5, variants: [{resource: {}, weight: 3}]}
)");
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(parsed).findings),
              ElementsAre(HasSubstr("spec.nmae: unknown field"), HasSubstr("spec.name: expected a string"),
                          HasSubstr("spec.variants[0].weight: unknown field")));
}

TEST(ParseDocumentTest, RequiresVariantsAndResource) {
  auto missing = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: r}, spec: {type: route, name: r}}");
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(missing).findings),
              ElementsAre(HasSubstr("spec.variants: is required")));
  auto no_resource = Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: r}, spec: {type: route, name: r, variants: [{name: a}]}}");
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(no_resource).findings),
              ElementsAre(HasSubstr("spec.variants[0].resource: is required")));
}

TEST(ParseDocumentTest, RejectsOtherVersionsAndBadNames) {
  auto parsed = Parse("{apiVersion: facet.dev/v2, kind: XdsResource, metadata: {name: Bad_Name}, spec: {}}");
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(parsed).findings),
              ElementsAre(HasSubstr("apiVersion: unsupported version facet.dev/v2"),
                          HasSubstr("metadata.name: \"Bad_Name\" is not a valid Kubernetes name")));
}

TEST(ParseDocumentTest, RejectsBadNamespacesAndEscapesBadNames) {
  auto parsed = Parse(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: \"a\\0b\\n\", "
      "namespace: \"de\\x7fmo\"}, spec: {}}");
  EXPECT_THAT(
      Messages(std::get<xds::ResourceObject>(parsed).findings),
      ElementsAre(HasSubstr("metadata.name: \"a\\x00\\x62\\n\" is not a valid Kubernetes name"),
                  HasSubstr("metadata.namespace: \"de\\x7fmo\" is not a valid Kubernetes namespace")));
  auto long_namespace = Parse(absl::StrCat(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: a, namespace: ",
      std::string(64, 'n'), "}, spec: {}}"));
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(long_namespace).findings),
              ElementsAre(HasSubstr("at most 63 characters")));
}

TEST(ParseDocumentTest, SeparatesForeignObjectsFromGarbage) {
  EXPECT_TRUE(std::holds_alternative<ForeignObject>(
      Parse("{apiVersion: v1, kind: Namespace, metadata: {name: demo}}")));
  auto garbage = Parse("just a string");
  ASSERT_TRUE(std::holds_alternative<UnusableDocument>(garbage));
  EXPECT_THAT(std::get<UnusableDocument>(garbage).message, HasSubstr("not a Facet object"));
  EXPECT_TRUE(std::holds_alternative<UnusableDocument>(
      Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {}}")));
}

TEST(ParseDocumentTest, ReturnsGatewayObjectsForTheGatewayKinds) {
  auto route = Parse("{apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute, "
                     "metadata: {name: r, namespace: demo}, spec: {}}");
  ASSERT_TRUE(std::holds_alternative<gateway::GatewayObject>(route));
  EXPECT_EQ(std::get<gateway::GatewayObject>(route).ref.ToString(), "demo/r");
  EXPECT_TRUE(std::holds_alternative<gateway::GatewayObject>(
      Parse("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {}}")));
  EXPECT_TRUE(std::holds_alternative<gateway::GatewayObject>(
      Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsVariantPolicy, metadata: {name: p}}")));
  // Other kinds of the same groups stay foreign; a nameless object is unusable.
  EXPECT_TRUE(std::holds_alternative<ForeignObject>(
      Parse("{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: h}}")));
  EXPECT_TRUE(std::holds_alternative<ForeignObject>(
      Parse("{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}")));
  EXPECT_TRUE(std::holds_alternative<ForeignObject>(
      Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsPolicy, metadata: {name: c}}")));
  auto nameless = Parse("{apiVersion: v1, kind: Service, metadata: {}, spec: {}}");
  ASSERT_TRUE(std::holds_alternative<UnusableDocument>(nameless));
  EXPECT_EQ(std::get<UnusableDocument>(nameless).message, "Service without metadata.name");
}

TEST(ParseDocumentTest, UnknownFieldsSuggestTheNearestName) {
  auto parsed = Parse(R"(
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata: {name: r}
spec:
  type: route
  nmae: r
  varaints: []
  colour: red
  variants:
  - {mach: {env: a}, resource: {}}
  - {constraints: {constraint: {key: env, valeu: a}}, resource: {}}
)");
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(parsed).findings),
              ::testing::IsSupersetOf(
                  {HasSubstr("spec.nmae: unknown field; expected one of type, name, authority, "
                             "contextParams, variants; did you mean \"name\"?"),
                   HasSubstr("spec.varaints: unknown field; expected one of type, name, authority, "
                             "contextParams, variants; did you mean \"variants\"?"),
                   HasSubstr("spec.variants[0].mach: unknown field; expected one of name, match, "
                             "constraints, resource, endpointsFrom; did you mean \"match\"?"),
                   HasSubstr("spec.variants[1].constraints.constraint.valeu: unknown field "
                             "\"valeu\" in envoy.service.discovery.v3.DynamicParameterConstraints."
                             "SingleConstraint; did you mean \"value\"?")}));
  EXPECT_THAT(Messages(std::get<xds::ResourceObject>(parsed).findings),
              ::testing::Contains(AllOf(HasSubstr("spec.colour: unknown field"),
                                        ::testing::Not(HasSubstr("did you mean")))));
}

}  // namespace
}  // namespace facet::controller
