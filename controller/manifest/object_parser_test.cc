#include "controller/manifest/object_parser.h"

#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

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

TEST(ParseDocumentTest, SeparatesForeignObjectsFromGarbage) {
  EXPECT_TRUE(std::holds_alternative<ForeignObject>(
      Parse("{apiVersion: v1, kind: Namespace, metadata: {name: demo}}")));
  auto garbage = Parse("just a string");
  ASSERT_TRUE(std::holds_alternative<UnusableDocument>(garbage));
  EXPECT_THAT(std::get<UnusableDocument>(garbage).message, HasSubstr("not a Facet object"));
  EXPECT_TRUE(std::holds_alternative<UnusableDocument>(
      Parse("{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {}}")));
}

}  // namespace
}  // namespace facet::controller
