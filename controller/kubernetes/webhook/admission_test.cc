#include <cstdio>
#include <fstream>
#include <string>

#include <httplib.h>  // Feature macros come from pkg-config (CMakeLists.txt).

#include "absl/strings/str_cat.h"
#include "controller/kubernetes/webhook/admission.h"
#include "controller/kubernetes/webhook/webhook_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/http_attack/http_attack.h"
#include "test/kube_api_server/tls.h"
#include "xds_server/common/status_matchers.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {
namespace {

using ::facet::testing::IsOk;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Review(const std::string& object_yaml, const std::string& operation = "CREATE") {
  YAML::Node review;
  review["apiVersion"] = "admission.k8s.io/v1";
  review["kind"] = "AdmissionReview";
  review["request"]["uid"] = "705ab4f5-6393-11e8-b7cc-42010a800002";
  review["request"]["operation"] = operation;
  review["request"]["namespace"] = "demo";
  review["request"]["object"] = YAML::Load(object_yaml);
  YAML::Emitter out;
  out << YAML::DoubleQuoted << YAML::Flow << review;
  return out.c_str();
}

YAML::Node Response(const std::string& body) { return YAML::Load(body)["response"]; }

constexpr char kEndpoints[] =
    "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: e, namespace: demo}, "
    "spec: {type: endpoint, name: greeter, variants: [{resource: {endpoints: [{lb_endpoints: "
    "[{endpoint: {address: {socket_address: {address: 10.0.0.1, port_value: 80}}}}]}]}}]}}";

std::string Decide(const std::string& object, const std::vector<xds::AuthorityObject>& authorities = {}) {
  return ReviewAdmission(Review(object), authorities, xds::BuildOptions{});
}

TEST(AdmissionTest, AllowsAValidObjectAndEchoesTheUid) {
  YAML::Node response = Response(Decide(kEndpoints));
  EXPECT_EQ(response["uid"].as<std::string>(), "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_TRUE(response["allowed"].as<bool>());
}

TEST(AdmissionTest, DeniesOverlapsWithTheWitnessAsFacetValidatePrintsIt) {
  YAML::Node response = Response(Decide(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: r, namespace: demo}, "
      "spec: {type: route, name: greeter, variants: ["
      "{name: a, match: {env: prod}, resource: {}}, {name: b, match: {env: [prod, test]}, resource: {}}]}}"));
  EXPECT_FALSE(response["allowed"].as<bool>());
  EXPECT_EQ(response["status"]["code"].as<int>(), 403);
  EXPECT_EQ(response["status"]["reason"].as<std::string>(), "Forbidden");
  EXPECT_THAT(response["status"]["message"].as<std::string>(),
              HasSubstr("demo/r: spec.variants[1]: variants \"a\" and \"b\" overlap: both match {env=prod}"));
}

TEST(AdmissionTest, DeniesMalformedResourceJsonAndUnadmittedAuthorities) {
  YAML::Node malformed = Response(Decide(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: c, namespace: demo}, "
      "spec: {type: cluster, name: c, variants: [{resource: {type: EDS, bogus: 1}}]}}"));
  EXPECT_FALSE(malformed["allowed"].as<bool>());
  EXPECT_THAT(malformed["status"]["message"].as<std::string>(), HasSubstr("bogus"));

  xds::AuthorityObject authority;
  authority.ref = {xds::kXdsAuthorityKind, "", "a"};
  authority.authority = "a.example";
  authority.allowed_namespaces = {"other"};
  YAML::Node refused = Response(Decide(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: e, namespace: demo}, "
      "spec: {type: endpoint, name: greeter, authority: a.example, variants: [{resource: {}}]}}",
      {authority}));
  EXPECT_FALSE(refused["allowed"].as<bool>());
  EXPECT_THAT(refused["status"]["message"].as<std::string>(),
              HasSubstr("authority \"a.example\" does not admit namespace \"demo\""));
}

TEST(AdmissionTest, AllowsWhatDependsOnApplyOrder) {
  // The cluster it routes to may be applied next.
  YAML::Node response = Response(Decide(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: r, namespace: demo}, "
      "spec: {type: route, name: greeter, variants: [{resource: {virtual_hosts: [{name: v, "
      "domains: ['*'], routes: [{match: {prefix: ''}, route: {cluster: later}}]}]}}]}}"));
  EXPECT_TRUE(response["allowed"].as<bool>());
  EXPECT_TRUE(Response(ReviewAdmission(Review(kEndpoints, "DELETE"), {}, {}))["allowed"].as<bool>());
}

TEST(AdmissionTest, AnswersSomethingThatIsNotAReviewWith400) {
  YAML::Node response = Response(ReviewAdmission("{\"kind\": \"Pod\"}", {}, {}));
  EXPECT_FALSE(response["allowed"].as<bool>());
  EXPECT_EQ(response["status"]["code"].as<int>(), 400);
}

// A review of an XdsResource whose `spec.resource` holds `data` (JSON).
std::string ReviewWithData(const std::string& data) {
  return absl::StrCat(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{)",
      R"("uid":"u1","operation":"CREATE","namespace":"demo","object":{)",
      R"("apiVersion":"facet.dev/v1alpha1","kind":"XdsResource",)",
      R"("metadata":{"name":"r","namespace":"demo"},"spec":{"type":"cluster","name":"c",)",
      R"("variants":[{"resource":{"data":)", data, "}}]}}}}");
}

TEST(AdmissionTest, AnswersAReviewOverTheBoundsWith400NamingTheLimit) {
  // The object is 5 levels deep around `data`: 95 more levels are allowed.
  EXPECT_EQ(Response(ReviewAdmission(ReviewWithData(std::string(95, '[') + std::string(95, ']')),
                                     {}, {}))["status"]["code"].as<int>(),
            403);  // Read, then denied by validation.
  YAML::Node deep = Response(
      ReviewAdmission(ReviewWithData(std::string(96, '[') + std::string(96, ']')), {}, {}));
  EXPECT_FALSE(deep["allowed"].as<bool>());
  EXPECT_EQ(deep["uid"].as<std::string>(), "u1");  // Read before the object.
  EXPECT_EQ(deep["status"]["code"].as<int>(), 400);
  EXPECT_THAT(deep["status"]["message"].as<std::string>(),
              AllOf(HasSubstr("AdmissionReview: line 1, column "),
                    HasSubstr("request.object has lists and maps nested more than 100 levels "
                              "deep (the limit per object)")));

  std::string numbers = "[0";
  for (int i = 0; i < 250'000; ++i) numbers += ",0";
  YAML::Node large = Response(ReviewAdmission(ReviewWithData(numbers + "]"), {}, {}));
  EXPECT_EQ(large["status"]["code"].as<int>(), 400);
  EXPECT_THAT(large["status"]["message"].as<std::string>(),
              HasSubstr("request.object has more than 250000 YAML nodes"));

  YAML::Node invalid = Response(ReviewAdmission("{\"kind\": \"AdmissionReview\", [", {}, {}));
  EXPECT_EQ(invalid["status"]["code"].as<int>(), 400);
  EXPECT_THAT(invalid["status"]["message"].as<std::string>(),
              AllOf(HasSubstr("AdmissionReview: line 1, column "), HasSubstr("not valid YAML")));
}

std::string WriteTemp(const std::string& name, const std::string& contents) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << contents;
  return path;
}

absl::StatusOr<std::unique_ptr<WebhookServer>> StartWebhook(const std::string& cert,
                                                            const std::string& key) {
  return WebhookServer::Start("127.0.0.1:0", cert, key, [](const std::string& body) {
    return ReviewAdmission(body, {}, xds::BuildOptions{});
  });
}

int PortOf(const WebhookServer& server) {
  return std::stoi(server.address().substr(server.address().rfind(':') + 1));
}

// The webhook reads --webhook-address as the admin port reads its address
// (SplitHostPort): the same errors, the same forms.
TEST(WebhookServerTest, ParsesItsAddressAsTheAdminPortDoes) {
  auto credentials = facet::testing::GenerateTestCredentials();
  ASSERT_THAT(credentials, IsOk());
  const std::string cert = WriteTemp("address.crt", credentials->cert_pem);
  const std::string key = WriteTemp("address.key", credentials->key_pem);
  auto start = [&](const std::string& address) {
    return WebhookServer::Start(address, cert, key, [](const std::string&) { return ""; });
  };
  for (const std::string bad : {"nocolon", "127.0.0.1:99999", "127.0.0.1:x", "[::1:0"}) {
    absl::StatusOr<std::unique_ptr<WebhookServer>> server = start(bad);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(server.status().message(), HasSubstr(absl::StrCat("address \"", bad, "\"")));
  }
  absl::StatusOr<std::unique_ptr<WebhookServer>> any_host = start(":0");
  ASSERT_THAT(any_host, IsOk());
  EXPECT_THAT((*any_host)->address(), ::testing::StartsWith("0.0.0.0:"));
  EXPECT_NE((*any_host)->address(), "0.0.0.0:0");
}

TEST(WebhookServerTest, RoundTripOverTlsVerifiedByTheCa) {
  auto credentials = facet::testing::GenerateTestCredentials();
  ASSERT_THAT(credentials, IsOk());
  const std::string cert = WriteTemp("webhook.crt", credentials->cert_pem);
  const std::string key = WriteTemp("webhook.key", credentials->key_pem);
  const std::string ca = WriteTemp("webhook-ca.crt", credentials->ca_pem);
  auto server = StartWebhook(cert, key);
  ASSERT_THAT(server, IsOk());
  httplib::SSLClient client("127.0.0.1", PortOf(**server));
  client.set_ca_cert_path(ca.c_str());
  client.enable_server_certificate_verification(true);
  auto reply = client.Post("/validate", Review(kEndpoints), "application/json");
  ASSERT_TRUE(reply) << httplib::to_string(reply.error());
  EXPECT_EQ(reply->status, 200);
  EXPECT_TRUE(Response(reply->body)["allowed"].as<bool>());
  // A client that does not trust the CA fails the handshake.
  httplib::SSLClient stranger("127.0.0.1", PortOf(**server));
  stranger.enable_server_certificate_verification(true);
  stranger.set_ca_cert_path(cert.c_str());  // Not the CA.
  EXPECT_FALSE(stranger.Post("/validate", Review(kEndpoints), "application/json"));
}

TEST(WebhookServerTest, NewConnectionsGetARotatedCertificate) {
  auto first = facet::testing::GenerateTestCredentials();
  auto second = facet::testing::GenerateTestCredentials();  // Another CA.
  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  const std::string cert = WriteTemp("rotate.crt", first->cert_pem);
  const std::string key = WriteTemp("rotate.key", first->key_pem);
  const std::string first_ca = WriteTemp("rotate-ca1.crt", first->ca_pem);
  const std::string second_ca = WriteTemp("rotate-ca2.crt", second->ca_pem);
  auto server = StartWebhook(cert, key);
  ASSERT_THAT(server, IsOk());
  const int port = PortOf(**server);
  auto post = [&](const std::string& ca) {
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path(ca.c_str());
    client.enable_server_certificate_verification(true);
    return static_cast<bool>(client.Post("/validate", Review(kEndpoints), "application/json"));
  };
  EXPECT_TRUE(post(first_ca));
  EXPECT_FALSE(post(second_ca));
  // Rotate: both files replaced by rename, as a Secret volume update does.
  WriteTemp("rotate.key.new", second->key_pem);
  WriteTemp("rotate.crt.new", second->cert_pem);
  ASSERT_EQ(std::rename((key + ".new").c_str(), key.c_str()), 0);
  ASSERT_EQ(std::rename((cert + ".new").c_str(), cert.c_str()), 0);
  EXPECT_TRUE(post(second_ca));
  EXPECT_FALSE(post(first_ca));
  // A broken rotation keeps the last good pair.
  WriteTemp("rotate.crt", "not a certificate");
  EXPECT_TRUE(post(second_ca));
}

// What a probe of the API server allows (its webhook timeout is longer; a
// kubelet's is 1 s).
constexpr absl::Duration kProbe = absl::Seconds(1);

// Starts a webhook with fresh test credentials in NAME.crt and NAME.key.
absl::StatusOr<std::unique_ptr<WebhookServer>> StartWithFreshCredentials(const std::string& name) {
  auto credentials = facet::testing::GenerateTestCredentials();
  if (!credentials.ok()) return credentials.status();
  return StartWebhook(WriteTemp(name + ".crt", credentials->cert_pem),
                      WriteTemp(name + ".key", credentials->key_pem));
}

TEST(WebhookServerTest, ChunkedBodyPastTheBoundGets413BeforeItIsRead) {
  auto server = StartWithFreshCredentials("flood");
  ASSERT_THAT(server, IsOk());
  const facet::testing::FloodResult flood =
      facet::testing::ChunkedFlood(PortOf(**server), /*tls=*/true, "/validate", 64 << 20);
  EXPECT_THAT(flood.response, ::testing::StartsWith("HTTP/1.1 413"));
  EXPECT_LT(flood.bytes_sent, size_t{64} << 20) << flood.response;
}

TEST(WebhookServerTest, AnswersAReviewWithinASecondBesideIdleAndStalledHandshakes) {
  auto server = StartWithFreshCredentials("busy");
  ASSERT_THAT(server, IsOk());
  const int port = PortOf(**server);
  using Kind = facet::testing::HostileConnections::Kind;
  facet::testing::HostileConnections idle(port, 100, Kind::kIdle);
  facet::testing::HostileConnections stalled(port, 100, Kind::kStalledTls);
  const std::string review = Review(kEndpoints);
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> reply = facet::testing::Exchange(
        port, /*tls=*/true,
        absl::StrCat("POST /validate HTTP/1.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: ",
                     review.size(), "\r\n\r\n", review),
        kProbe);
    ASSERT_THAT(reply, IsOk());
    EXPECT_THAT(*reply, ::testing::StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(*reply, ::testing::HasSubstr("\"allowed\":true"));
  }
}

}  // namespace
}  // namespace facet::controller
