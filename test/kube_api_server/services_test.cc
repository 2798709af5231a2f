#include "test/kube_api_server/services.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

using ::testing::HasSubstr;

Json J(const std::string& text) {
  auto json = ParseJson(text);
  EXPECT_THAT(json, IsOk()) << text;
  return json.ok() ? *json : Json();
}

Json Created(const std::string& text, const ServiceAllocations& in_use = {}) {
  Json service = J(text);
  std::optional<FieldError> error = PrepareServiceForCreate(service, in_use);
  EXPECT_FALSE(error.has_value()) << error->field << ": " << error->detail;
  return service;
}

FieldError CreateError(const std::string& text, const ServiceAllocations& in_use = {}) {
  Json service = J(text);
  std::optional<FieldError> error = PrepareServiceForCreate(service, in_use);
  EXPECT_TRUE(error.has_value()) << Dump(service);
  return error.value_or(FieldError{});
}

TEST(ServicesTest, CreateAppliesTheApiServersDefaults) {
  Json service = Created(R"({"spec":{"ports":[{"port":50051}],"selector":{"app":"a"}}})");
  EXPECT_EQ(Dump(service["spec"]),
            R"({"clusterIP":"10.96.1.1","clusterIPs":["10.96.1.1"],)"
            R"("internalTrafficPolicy":"Cluster","ipFamilies":["IPv4"],)"
            R"("ipFamilyPolicy":"SingleStack","ports":[{"port":50051,"protocol":"TCP",)"
            R"("targetPort":50051}],"selector":{"app":"a"},"sessionAffinity":"None",)"
            R"("type":"ClusterIP"})");
  EXPECT_EQ(Dump(service["status"]), R"({"loadBalancer":{}})");
}

TEST(ServicesTest, ClusterIpsAreAllocatedOnceAndRequestedOnesChecked) {
  ServiceAllocations in_use;
  in_use.Add(Created(R"({"spec":{"ports":[{"port":1}]}})"));
  Json second = Created(R"({"spec":{"ports":[{"port":1}]}})", in_use);
  EXPECT_EQ(GetString(second, {"spec", "clusterIP"}), "10.96.1.2");
  EXPECT_EQ(GetString(Created(R"({"spec":{"clusterIP":"10.96.0.20","ports":[{"port":1}]}})"),
                      {"spec", "clusterIP"}),
            "10.96.0.20");
  FieldError taken =
      CreateError(R"({"spec":{"clusterIP":"10.96.1.1","ports":[{"port":1}]}})", in_use);
  EXPECT_EQ(taken.field, "spec.clusterIPs");
  EXPECT_THAT(taken.detail, HasSubstr("provided IP is already allocated"));
  EXPECT_THAT(CreateError(R"({"spec":{"clusterIP":"192.168.0.1","ports":[{"port":1}]}})").detail,
              HasSubstr("is not in the valid range. The range of valid IPs is 10.96.0.0/12"));
}

TEST(ServicesTest, HeadlessAndExternalNameServicesGetNoAddress) {
  Json headless = Created(R"({"spec":{"clusterIP":"None","ports":[{"port":1}]}})");
  EXPECT_EQ(Dump(headless["spec"]["clusterIPs"]), R"(["None"])");
  Json external = Created(R"({"spec":{"type":"ExternalName","externalName":"a.example"}})");
  EXPECT_EQ(FindPath(external, {"spec", "clusterIP"}), nullptr);
  EXPECT_EQ(FindPath(external, {"spec", "ipFamilies"}), nullptr);
  EXPECT_EQ(CreateError(R"({"spec":{"type":"ExternalName"}})").field, "spec.externalName");
}

TEST(ServicesTest, NodePortsAreAllocatedForNodePortServices) {
  Json service = Created(
      R"({"spec":{"type":"NodePort","ports":[{"name":"a","port":80},{"name":"b","port":81,"nodePort":30000}]}})");
  EXPECT_EQ(service["spec"]["ports"][0]["nodePort"], 30001);
  EXPECT_EQ(GetString(service, {"spec", "externalTrafficPolicy"}), "Cluster");
  EXPECT_EQ(CreateError(R"({"spec":{"ports":[{"port":80,"nodePort":30000}]}})").field,
            "spec.ports[0].nodePort");
}

TEST(ServicesTest, PortsAreValidatedAsTheApiServerDoes) {
  EXPECT_EQ(CreateError(R"({"spec":{}})").field, "spec.ports");
  FieldError unnamed = CreateError(R"({"spec":{"ports":[{"name":"a","port":1},{"port":2}]}})");
  EXPECT_EQ(unnamed.field, "spec.ports[1].name");
  EXPECT_EQ(unnamed.detail, "Required value");
  EXPECT_EQ(
      CreateError(R"({"spec":{"ports":[{"name":"a","port":1},{"name":"a","port":2}]}})").detail,
      "Duplicate value: \"a\"");
  EXPECT_EQ(CreateError(R"({"spec":{"ports":[{"port":0}]}})").detail,
            "Invalid value: 0: must be between 1 and 65535, inclusive");
  EXPECT_EQ(CreateError(R"({"spec":{"ports":[{"port":1,"protocol":"HTTP"}]}})").detail,
            "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"");
  EXPECT_EQ(CreateError(R"({"spec":{"type":"Mesh","ports":[{"port":1}]}})").field, "spec.type");
  EXPECT_THAT(CreateError(R"({"spec":{"ports":[{"name":"Grpc","port":1}]}})").detail,
              HasSubstr("RFC 1123 label"));
}

TEST(ServicesTest, UpdateKeepsTheClusterIpAndNodePortsItLeavesOut) {
  Json current = Created(R"({"spec":{"type":"NodePort","ports":[{"port":80}]}})");
  ServiceAllocations in_use;
  in_use.Add(current);
  Json update = J(R"({"spec":{"type":"NodePort","ports":[{"port":80,"targetPort":8080}]}})");
  ASSERT_FALSE(PrepareServiceForUpdate(current, update, in_use).has_value());
  EXPECT_EQ(update["spec"]["clusterIP"], current["spec"]["clusterIP"]);
  EXPECT_EQ(update["spec"]["ports"][0]["nodePort"], current["spec"]["ports"][0]["nodePort"]);
  EXPECT_EQ(update["spec"]["ports"][0]["targetPort"], 8080);
}

TEST(ServicesTest, UpdateCannotChangeTheClusterIp) {
  Json current = Created(R"({"spec":{"ports":[{"port":80}]}})");
  Json update = J(R"({"spec":{"clusterIP":"None","ports":[{"port":80}]}})");
  std::optional<FieldError> error = PrepareServiceForUpdate(current, update, {});
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "spec.clusterIPs[0]");
  EXPECT_EQ(error->detail, "Invalid value: []string{\"None\"}: may not change once set");
  // Becoming an ExternalName Service releases the address.
  Json external = J(R"({"spec":{"type":"ExternalName","externalName":"a.example"}})");
  ASSERT_FALSE(PrepareServiceForUpdate(current, external, {}).has_value());
  EXPECT_EQ(FindPath(external, {"spec", "clusterIP"}), nullptr);
}

TEST(ServicesTest, TheKubernetesServiceIsValid) {
  Json service = KubernetesService();
  ASSERT_FALSE(PrepareServiceForCreate(service, {}).has_value());
  EXPECT_EQ(GetString(service, {"spec", "clusterIP"}), kKubernetesServiceIp);
}

}  // namespace
}  // namespace facet::testing
