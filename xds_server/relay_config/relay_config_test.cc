#include "xds_server/relay_config/relay_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/regular_file.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointee;
using ::testing::SizeIs;

constexpr char kFull[] = R"json({
  "xds_servers": [
    {"server_uri": "facet-a.facet-system:18000",
     "channel_creds": [{"type": "google_default"}, {"type": "tls"}, {"type": "insecure"}],
     "server_features": ["xds_v3", "ignore_resource_deletion"]},
    {"server_uri": "facet-b.facet-system:18000", "channel_creds": [{"type": "insecure"}]}
  ],
  "authorities": {
    "a.example": {
      "xds_servers": [{"server_uri": "dns:///xds.a.example:443",
                       "channel_creds": [{"type": "tls", "config": {}}]}],
      "client_listener_resource_name_template": "xdstp://a.example/envoy.config.listener.v3.Listener/%s"
    },
    "b.example": {},
    "": {}
  },
  "node": {
    "id": "relay-1",
    "cluster": "edge",
    "locality": {"region": "eu", "zone": "eu-1", "sub_zone": "r7"},
    "metadata": {"env": "prod", "tier": 2}
  },
  "client_default_listener_resource_name_template": "%s",
  "server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s",
  "certificate_providers": {"default": {"plugin_name": "file_watcher", "config": {}}}
})json";

// A minimal valid configuration with `extra` (text of more top-level fields,
// with a leading comma) appended.
std::string Minimal(absl::string_view extra = "") {
  return absl::StrCat(
      R"({"xds_servers": [{"server_uri": "up:18000", "channel_creds": [{"type": "insecure"}]}])",
      extra, "}");
}

// Parses `json` and returns the error message, or "OK".
std::string ErrorOf(absl::string_view json) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(json, "relay.json");
  if (config.ok()) return "OK";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  return std::string(config.status().message());
}

TEST(ParseRelayConfigTest, ParsesFullConfig) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(kFull, "relay.json");
  ASSERT_THAT(config, IsOk());

  ASSERT_THAT(config->xds_servers, SizeIs(2));
  EXPECT_EQ(config->xds_servers[0].server_uri, "facet-a.facet-system:18000");
  EXPECT_EQ(config->xds_servers[0].channel_creds, "tls");  // google_default skipped.
  EXPECT_THAT(config->xds_servers[0].server_features,
              ElementsAre("xds_v3", "ignore_resource_deletion"));
  EXPECT_EQ(config->xds_servers[1].server_uri, "facet-b.facet-system:18000");
  EXPECT_EQ(config->xds_servers[1].channel_creds, "insecure");
  EXPECT_THAT(config->xds_servers[1].server_features, ::testing::IsEmpty());

  ASSERT_THAT(config->authorities, SizeIs(3));
  const std::vector<UpstreamServer>& a = config->authorities.at("a.example");
  ASSERT_THAT(a, SizeIs(1));
  EXPECT_EQ(a[0].server_uri, "dns:///xds.a.example:443");
  EXPECT_EQ(a[0].channel_creds, "tls");

  EXPECT_EQ(config->node.id(), "relay-1");
  EXPECT_EQ(config->node.cluster(), "edge");
  EXPECT_EQ(config->node.locality().region(), "eu");
  EXPECT_EQ(config->node.locality().zone(), "eu-1");
  EXPECT_EQ(config->node.locality().sub_zone(), "r7");
  EXPECT_EQ(config->node.metadata().fields().at("env").string_value(), "prod");
  EXPECT_EQ(config->node.metadata().fields().at("tier").number_value(), 2);
}

TEST(ParseRelayConfigTest, AuthorityWithoutServersInheritsTopLevelList) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(kFull, "relay.json");
  ASSERT_THAT(config, IsOk());
  for (const char* name : {"b.example", ""}) {
    const std::vector<UpstreamServer>& servers = config->authorities.at(name);
    ASSERT_THAT(servers, SizeIs(2)) << name;
    EXPECT_EQ(servers[0].server_uri, "facet-a.facet-system:18000");
    EXPECT_EQ(servers[0].channel_creds, "tls");
    EXPECT_EQ(servers[1].server_uri, "facet-b.facet-system:18000");
  }
}

TEST(ParseRelayConfigTest, NodeIsOptional) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(Minimal(), "relay.json");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->node.ByteSizeLong(), 0u);
  EXPECT_THAT(config->authorities, ::testing::IsEmpty());
  EXPECT_THAT(config->xds_servers, SizeIs(1));
}

TEST(ParseRelayConfigTest, RejectsMissingOrEmptyTopLevelServers) {
  EXPECT_EQ(ErrorOf(R"({"node": {"id": "r"}})"),
            "relay.json: xds_servers: required: the upstream servers for old-style names");
  EXPECT_EQ(ErrorOf(R"({"xds_servers": []})"), "relay.json: xds_servers: must not be empty");
  EXPECT_EQ(ErrorOf(R"({"xds_servers": {}})"),
            "relay.json: xds_servers: expected a list, found a map");
}

TEST(ParseRelayConfigTest, RejectsBadServerFieldsNamingThePath) {
  EXPECT_EQ(
      ErrorOf(R"({"xds_servers": [{"server_uri": "", "channel_creds": [{"type": "insecure"}]}]})"),
      "relay.json: xds_servers[0].server_uri: must not be empty");
  EXPECT_EQ(ErrorOf(R"({"xds_servers": [{"channel_creds": [{"type": "insecure"}]}]})"),
            "relay.json: xds_servers[0].server_uri: required");
  EXPECT_EQ(ErrorOf(R"({"xds_servers": [{"server_uri": 18000, "channel_creds": []}]})"),
            "relay.json: xds_servers[0].server_uri: expected a string, found an integer (18000)");
  EXPECT_EQ(ErrorOf(R"({"xds_servers": [{"server_uri": "up :1", "channel_creds": []}]})"),
            "relay.json: xds_servers[0].server_uri: \"up :1\" contains whitespace or a control "
            "character");
  EXPECT_EQ(ErrorOf(R"({"xds_servers": ["up:18000"]})"),
            "relay.json: xds_servers[0]: expected a JSON object, found the string \"up:18000\"");
  EXPECT_THAT(ErrorOf(R"({"xds_servers": [{"server_uri": "up:1"}]})"),
              HasSubstr("relay.json: xds_servers[0].channel_creds: required"));
  EXPECT_EQ(
      ErrorOf(R"({"xds_servers": [{"server_uri": "up:1", "channel_creds": [{"type": "insecure"}],
                                   "server_features": ["xds_v3", 3]}]})"),
      "relay.json: xds_servers[0].server_features[1]: expected a string, found an integer (3)");
  EXPECT_EQ(
      ErrorOf(R"({"xds_servers": [{"server_uri": "up:1", "channel_creds": [{"type": "insecure"}],
                                   "server_features": "xds_v3"}]})"),
      "relay.json: xds_servers[0].server_features: expected a list, found the string \"xds_v3\"");
}

TEST(ParseRelayConfigTest, RejectsDuplicateServerInOneList) {
  EXPECT_EQ(ErrorOf(R"({"xds_servers": [
                         {"server_uri": "up:1", "channel_creds": [{"type": "insecure"}]},
                         {"server_uri": "up:1", "channel_creds": [{"type": "tls"}]}]})"),
            "relay.json: xds_servers[1].server_uri: \"up:1\" is listed already as xds_servers[0]; "
            "a failover list names each server once");
}

TEST(ParseRelayConfigTest, ChoosesFirstSupportedChannelCreds) {
  auto creds_of = [](absl::string_view creds) -> std::string {
    absl::StatusOr<RelayConfig> config = ParseRelayConfig(
        absl::StrCat(R"({"xds_servers": [{"server_uri": "up:1", "channel_creds": )", creds, "}]}"),
        "relay.json");
    if (!config.ok()) return std::string(config.status().message());
    return config->xds_servers[0].channel_creds;
  };
  EXPECT_EQ(creds_of(R"([{"type": "insecure"}, {"type": "tls"}])"), "insecure");
  EXPECT_EQ(creds_of(R"([{"type": "tls"}, {"type": "insecure"}])"), "tls");
  EXPECT_EQ(creds_of(R"([{"type": "google_default"}, {"type": "fake"}, {"type": "insecure"}])"),
            "insecure");
  EXPECT_EQ(creds_of(R"([{"type": "google_default"}, {"type": "fake"}])"),
            "relay.json: xds_servers[0].channel_creds: lists only \"google_default\", \"fake\"; "
            "the relay supports \"insecure\" and \"tls\"");
  EXPECT_EQ(creds_of("[]"),
            "relay.json: xds_servers[0].channel_creds: is empty; the relay supports \"insecure\" "
            "and \"tls\"");
  EXPECT_EQ(creds_of(R"([{"config": {}}])"),
            "relay.json: xds_servers[0].channel_creds[0].type: required");
  EXPECT_EQ(creds_of(R"([{"type": "insecure", "config": []}])"),
            "relay.json: xds_servers[0].channel_creds[0].config: expected a JSON object, found a "
            "list");
  EXPECT_EQ(creds_of(R"([{"type": "insecure", "confg": {}}])"),
            "relay.json: xds_servers[0].channel_creds[0].confg: unknown field; did you mean "
            "\"config\"?");
  EXPECT_EQ(creds_of(R"([{"type": "insecure", "cfg": {}}])"),
            "relay.json: xds_servers[0].channel_creds[0].cfg: unknown field (expected type, "
            "config)");
}

// Returns the path of a new file in the test's temporary directory.
std::string TempFile(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/relay_config_test_", getpid(), "_", name);
  std::ofstream(path) << "pem\n";
  return path;
}

TEST(ParseRelayConfigTest, ReadsA65TlsConfigWithExistingFiles) {
  const std::string ca = TempFile("ca.pem");
  const std::string cert = TempFile("cert.pem");
  const std::string key = TempFile("key.pem");
  auto parse = [](const std::string& config) {
    return ParseRelayConfig(
        absl::StrCat(R"({"xds_servers": [{"server_uri": "up:1", )",
                     R"("channel_creds": [{"type": "tls", "config": )", config, "}]}]}"),
        "relay.json");
  };
  absl::StatusOr<RelayConfig> config =
      parse(absl::StrCat(R"({"ca_certificate_file": ")", ca, R"(", "certificate_file": ")", cert,
                         R"(", "private_key_file": ")", key, R"("})"));
  ASSERT_THAT(config, IsOk());
  const UpstreamServer& server = config->xds_servers[0];
  EXPECT_EQ(server.channel_creds, "tls");
  EXPECT_EQ(server.tls_ca_certificate_file, ca);
  EXPECT_EQ(server.tls_certificate_file, cert);
  EXPECT_EQ(server.tls_private_key_file, key);

  config = parse(absl::StrCat(R"({"ca_certificate_file": ")", ca, R"("})"));
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->xds_servers[0].tls_ca_certificate_file, ca);
  EXPECT_EQ(config->xds_servers[0].tls_certificate_file, "");
  ASSERT_THAT(parse("{}"), IsOk());
  EXPECT_EQ(parse("{}")->xds_servers[0].tls_ca_certificate_file, "");

  EXPECT_EQ(parse(R"({"ca_certificate_file": "/nonexistent/ca.pem"})").status().message(),
            "relay.json: xds_servers[0].channel_creds[0].config.ca_certificate_file: "
            "\"/nonexistent/ca.pem\": cannot be read: no such file or directory");
  EXPECT_EQ(parse(absl::StrCat(R"({"certificate_file": ")", cert, R"("})")).status().message(),
            "relay.json: xds_servers[0].channel_creds[0].config.private_key_file: required with "
            "certificate_file");
  EXPECT_EQ(parse(absl::StrCat(R"({"private_key_file": ")", key, R"("})")).status().message(),
            "relay.json: xds_servers[0].channel_creds[0].config.certificate_file: required with "
            "private_key_file");
  EXPECT_EQ(parse(R"({"ca_certificate_file": ""})").status().message(),
            "relay.json: xds_servers[0].channel_creds[0].config.ca_certificate_file: must not be "
            "empty");
  EXPECT_THAT(parse(R"({"ca_certificate_file": 1})").status().message(),
              HasSubstr("xds_servers[0].channel_creds[0].config.ca_certificate_file: expected a "
                        "string"));
  EXPECT_THAT(parse(R"({"ca_file": "x"})").status().message(),
              HasSubstr("xds_servers[0].channel_creds[0].config.ca_file: unknown field"));
  for (const std::string& path : {ca, cert, key}) std::remove(path.c_str());
}

TEST(ParseRelayConfigTest, RefusesCertificateFilesThatAreNotSmallRegularFiles) {
  auto parse = [](const std::string& file) {
    return ParseRelayConfig(
        absl::StrCat(R"({"xds_servers": [{"server_uri": "up:1", )",
                     R"("channel_creds": [{"type": "tls", "config": {"ca_certificate_file": ")",
                     file, R"("}}]}]})"),
        "relay.json");
  };
  const std::string prefix =
      "relay.json: xds_servers[0].channel_creds[0].config.ca_certificate_file: ";
  // gRPC's certificate watcher would open a FIFO blocking, holding up the
  // relay's start-up until a writer came.
  const std::string fifo = TempFile("ca.fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(parse(fifo), StatusIs(absl::StatusCode::kInvalidArgument,
                                    absl::StrCat(prefix, "\"", fifo, "\": is not a regular file")));
  std::remove(fifo.c_str());
  EXPECT_THAT(parse("/dev/zero"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(prefix, "\"/dev/zero\": is not a regular file")));
  const std::string big = TempFile("big-ca.pem");
  std::ofstream(big) << std::string(kMaxCertificateFileBytes + 1, '-');
  EXPECT_THAT(parse(big), StatusIs(absl::StatusCode::kInvalidArgument,
                                   absl::StrCat(prefix, "\"", big,
                                                "\": is 1048577 bytes; the limit "
                                                "for a certificate file is 1048576 bytes")));
  std::remove(big.c_str());
}

// True when `text` has no byte below 0x20 and no DEL.
bool HasNoControlBytes(absl::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
  }
  return true;
}

TEST(ParseRelayConfigTest, EscapesControlBytesTheMessageQuotes) {
  // A NUL and an ESC in a value the message quotes, raw and JSON-escaped.
  for (const std::string& type : {std::string("in\0se\x1b"
                                              "cure",
                                              10),
                                  std::string(R"(in\u0000se\u001bcure)")}) {
    absl::Status status =
        ParseRelayConfig(
            absl::StrCat(R"({"xds_servers": [{"server_uri": "up:1", "channel_creds": [{"type": ")",
                         type, R"("}]}]})"),
            "relay.json")
            .status();
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_TRUE(HasNoControlBytes(status.message())) << status.message();
  }
  // yaml-cpp's own message quotes the byte after an unknown escape.
  absl::Status status =
      ParseRelayConfig(std::string("{\"node\": {\"id\": \"\\\0\"}}", 22), "relay.json").status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("unknown escape character: \\x00")));
  EXPECT_TRUE(HasNoControlBytes(status.message())) << status.message();
}

TEST(ParseRelayConfigTest, RejectsBadAuthoritiesNamingThePath) {
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authorities": {"a.example": {"xds_servers": [
                                  {"server_uri": "", "channel_creds": [{"type": "insecure"}]}]}})")),
            "relay.json: authorities[\"a.example\"].xds_servers[0].server_uri: must not be empty");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authorities": {"a.example": {"xds_servers": []}})")),
            "relay.json: authorities[\"a.example\"].xds_servers: must not be empty (omit "
            "xds_servers to use the top-level list)");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authorities": ["a.example"])")),
            "relay.json: authorities: expected a JSON object, found a list");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authorities": {"a.example": "up:1"})")),
            "relay.json: authorities[\"a.example\"]: expected a JSON object, found the string "
            "\"up:1\"");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authorities": {"a.example": {"xds_server": []}})")),
            "relay.json: authorities[\"a.example\"].xds_server: unknown field; did you mean "
            "\"xds_servers\"?");
  EXPECT_EQ(
      ErrorOf(Minimal(
          R"(, "authorities": {"a.example": {"client_listener_resource_name_template": 1}})")),
      "relay.json: authorities[\"a.example\"].client_listener_resource_name_template: "
      "expected a string, found an integer (1)");
}

TEST(ParseRelayConfigTest, RejectsBadNodeNamingTheField) {
  EXPECT_EQ(ErrorOf(Minimal(R"(, "node": {"id": 7})")),
            "relay.json: node.id: expected a string, found an integer (7); quote it to make it a "
            "string");
  EXPECT_THAT(ErrorOf(Minimal(R"(, "node": {"locality": {"zon": "z"}})")),
              HasSubstr("relay.json: node.locality.zon: unknown field"));
  EXPECT_THAT(ErrorOf(Minimal(R"(, "node": {"metadata": []})")),
              HasSubstr("relay.json: node.metadata: expected a map"));
  EXPECT_EQ(ErrorOf(Minimal(R"(, "node": {"user_agent_name": "x"})")),
            "relay.json: node.user_agent_name: unknown field (expected id, cluster, locality, "
            "metadata)");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "node": "relay-1")")),
            "relay.json: node: expected a JSON object, found the string \"relay-1\"");
}

TEST(ParseRelayConfigTest, IgnoresBootstrapFieldsTheRelayDoesNotUse) {
  EXPECT_EQ(ErrorOf(Minimal(R"(, "client_default_listener_resource_name_template": "%s",
                              "server_listener_resource_name_template": "x/%s",
                              "certificate_providers": {"p": {"plugin_name": "file_watcher"}})")),
            "OK");
}

TEST(ParseRelayConfigTest, RejectsUnknownFieldsWithSuggestion) {
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authority": {})")),
            "relay.json: authority: unknown field; did you mean \"authorities\"?");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "xdsServers": [])")),
            "relay.json: xdsServers: unknown field; did you mean \"xds_servers\"?");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "certificate_provider": {})")),
            "relay.json: certificate_provider: unknown field; did you mean "
            "\"certificate_providers\"?");
  EXPECT_EQ(ErrorOf(Minimal(R"(, "upstream": {})")),
            "relay.json: upstream: unknown field (expected xds_servers, authorities, node)");
  EXPECT_EQ(
      ErrorOf(R"({"xds_servers": [{"server_uri": "up:1", "channel_creds": [{"type": "insecure"}],
                                   "server_feature": []}]})"),
      "relay.json: xds_servers[0].server_feature: unknown field; did you mean "
      "\"server_features\"?");
}

TEST(ParseRelayConfigTest, RejectsMalformedJsonWithLineAndColumn) {
  EXPECT_THAT(ErrorOf("{\n  \"xds_servers\": [1, 2}\n}"),
              HasSubstr("relay.json: line 2, column 23: malformed JSON:"));
  EXPECT_THAT(ErrorOf("{\"xds_servers\": [],\n"),
              HasSubstr("relay.json: line 2, column 1: malformed JSON:"));
  EXPECT_EQ(ErrorOf("{\"xds_servers\": []}\n  x"),
            "relay.json: line 2, column 3: malformed JSON: unexpected text after the top-level "
            "object");
  EXPECT_EQ(ErrorOf("{\"xds_servers\": [\n  {server_uri: \"up:1\"}]}"),
            "relay.json: xds_servers[0]: line 2, column 4: malformed JSON: an object key must be "
            "a quoted string, found the string \"server_uri\"");
  EXPECT_EQ(ErrorOf("{\"xds_servers\": [{\"server_uri\": up}]}"),
            "relay.json: xds_servers[0].server_uri: line 1, column 33: malformed JSON: unquoted "
            "text \"up\"");
  EXPECT_EQ(ErrorOf("xds_servers: []"),
            "relay.json: line 1, column 1: malformed JSON: expected '{' (YAML is not accepted)");
  EXPECT_EQ(ErrorOf(""), "relay.json: is empty; expected a JSON object");
  EXPECT_EQ(ErrorOf("[]"), "relay.json: expected a JSON object, found a list");
  EXPECT_EQ(ErrorOf(absl::StrCat("{\"node\": {\"metadata\": {\"a\": ", std::string(5000, '['),
                                 std::string(5000, ']'), "}}}")),
            "relay.json: malformed JSON: nested too deeply");
}

TEST(ParseRelayConfigTest, AcceptsJsonSyntaxYamlWouldMisread) {
  // Tabs, escapes and numbers as JSON has them.
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(
      "{\t\"xds_servers\":\t[{\"server_uri\": \"up\\u003a1\\/x\", "
      "\"channel_creds\": [{\"type\": \"insecure\"}]}],\n"
      "\t\"node\": {\"metadata\": {\"n\": -1.5e3, \"t\": true, \"z\": null}}}",
      "relay.json");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->xds_servers[0].server_uri, "up:1/x");
  EXPECT_EQ(config->node.metadata().fields().at("n").number_value(), -1500);
  EXPECT_TRUE(config->node.metadata().fields().at("t").bool_value());
}

TEST(ParseRelayConfigTest, RejectsDuplicateKeys) {
  EXPECT_EQ(ErrorOf(Minimal(R"(, "authorities": {"a.example": {},
                                                  "a.example": {}})")),
            "relay.json: authorities: duplicate key \"a.example\" (line 2, column 51; first at "
            "line 1, column 104)");
  EXPECT_THAT(ErrorOf(R"({"xds_servers": [], "xds_servers": []})"),
              HasSubstr("relay.json: duplicate key \"xds_servers\""));
}

TEST(ParseRelayConfigTest, EnforcesBounds) {
  // Size.
  std::string big =
      Minimal(absl::StrCat(R"(, "node": {"id": ")", std::string(kMaxRelayConfigBytes, 'x'), "\"}"));
  EXPECT_THAT(ErrorOf(big), HasSubstr("a relay configuration may be at most 1048576 bytes"));

  auto authorities = [](size_t n) {
    std::vector<std::string> entries;
    for (size_t i = 0; i < n; ++i) entries.push_back(absl::StrCat("\"a", i, ".example\": {}"));
    return Minimal(absl::StrCat(R"(, "authorities": {)", absl::StrJoin(entries, ","), "}"));
  };
  EXPECT_EQ(ErrorOf(authorities(kMaxRelayAuthorities)), "OK");
  EXPECT_EQ(ErrorOf(authorities(kMaxRelayAuthorities + 1)),
            "relay.json: authorities: has 1001 entries; at most 1000 are allowed");

  auto servers = [](size_t n) {
    std::vector<std::string> entries;
    for (size_t i = 0; i < n; ++i) {
      entries.push_back(absl::StrCat(R"({"server_uri": "up-)", i,
                                     R"(:1", "channel_creds": [{"type": "insecure"}]})"));
    }
    return absl::StrCat(R"({"xds_servers": [)", absl::StrJoin(entries, ","), "]}");
  };
  EXPECT_EQ(ErrorOf(servers(kMaxRelayListLength)), "OK");
  EXPECT_EQ(ErrorOf(servers(kMaxRelayListLength + 1)),
            "relay.json: xds_servers: has 65 entries; at most 64 are allowed");

  std::vector<std::string> features(kMaxRelayListLength + 1, "\"f\"");
  EXPECT_EQ(ErrorOf(absl::StrCat(
                R"({"xds_servers": [{"server_uri": "up:1", "channel_creds": [{"type": "insecure"}],
                                     "server_features": [)",
                absl::StrJoin(features, ","), "]}]}")),
            "relay.json: xds_servers[0].server_features: has 65 entries; at most 64 are allowed");
}

TEST(ServersForTest, OldStyleNamesUseTopLevelList) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(kFull, "relay.json");
  ASSERT_THAT(config, IsOk());
  for (const char* name :
       {"greeter", "outbound|80||greeter.default.svc", "XDSTP://a.example/x.y/z"}) {
    absl::StatusOr<const std::vector<UpstreamServer>*> servers = ServersFor(*config, name);
    ASSERT_THAT(servers, IsOk()) << name;
    EXPECT_EQ(*servers, &config->xds_servers) << name;
  }
}

TEST(ServersForTest, XdstpNamesUseTheirAuthority) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(kFull, "relay.json");
  ASSERT_THAT(config, IsOk());
  auto servers = ServersFor(*config, "xdstp://a.example/envoy.config.listener.v3.Listener/greeter");
  ASSERT_THAT(servers, IsOk());
  EXPECT_EQ(*servers, &config->authorities.at("a.example"));
  EXPECT_THAT(*servers, Pointee(SizeIs(1)));
  EXPECT_EQ((**servers)[0].server_uri, "dns:///xds.a.example:443");

  // Percent-encoded authority, context parameters: same authority.
  servers = ServersFor(*config, "xdstp://a%2Eexample/envoy.config.cluster.v3.Cluster/c?b=1&a=2");
  ASSERT_THAT(servers, IsOk());
  EXPECT_EQ(*servers, &config->authorities.at("a.example"));

  // An authority without its own list gets the top-level servers.
  servers = ServersFor(*config, "xdstp://b.example/envoy.config.cluster.v3.Cluster/c");
  ASSERT_THAT(servers, IsOk());
  EXPECT_EQ(*servers, &config->authorities.at("b.example"));
  EXPECT_EQ((**servers)[0].server_uri, "facet-a.facet-system:18000");

  // The empty authority, written both ways.
  for (const char* name :
       {"xdstp:///envoy.config.cluster.v3.Cluster/c", "xdstp:/envoy.config.cluster.v3.Cluster/c"}) {
    servers = ServersFor(*config, name);
    ASSERT_THAT(servers, IsOk()) << name;
    EXPECT_EQ(*servers, &config->authorities.at("")) << name;
  }
}

TEST(ServersForTest, UnknownAuthorityIsNotFound) {
  absl::StatusOr<RelayConfig> config = ParseRelayConfig(kFull, "relay.json");
  ASSERT_THAT(config, IsOk());
  EXPECT_THAT(ServersFor(*config, "xdstp://c.example/envoy.config.cluster.v3.Cluster/c"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("authority \"c.example\"")));
  // Authorities are case-sensitive.
  EXPECT_THAT(ServersFor(*config, "xdstp://A.example/envoy.config.cluster.v3.Cluster/c"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("authority \"A.example\"")));
  EXPECT_THAT(ServersFor(*config, "xdstp://a.example/nodot/c"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

class LoadRelayConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/relay_config_test.", ::getpid());
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  }
  void TearDown() override {
    for (const std::string& file : files_) std::remove(file.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string Write(absl::string_view name, absl::string_view contents) {
    std::string path = absl::StrCat(dir_, "/", name);
    std::ofstream(path, std::ios::binary) << contents;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(LoadRelayConfigTest, ReadsFile) {
  std::string path = Write("relay.json", kFull);
  absl::StatusOr<RelayConfig> config = LoadRelayConfig(path);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->node.id(), "relay-1");
}

TEST_F(LoadRelayConfigTest, MissingFileIsNotFoundNamingThePath) {
  std::string path = absl::StrCat(dir_, "/missing.json");
  EXPECT_THAT(LoadRelayConfig(path),
              StatusIs(absl::StatusCode::kNotFound,
                       absl::StrCat(path, ": cannot be read: no such file or directory")));
}

TEST_F(LoadRelayConfigTest, ErrorsNameThePath) {
  std::string path = Write("bad.json", R"({"xds_servers": []})");
  EXPECT_THAT(LoadRelayConfig(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(path, ": xds_servers: must not be empty")));
  EXPECT_THAT(LoadRelayConfig(dir_), StatusIs(absl::StatusCode::kFailedPrecondition,
                                              absl::StrCat(dir_, ": is not a regular file")));
}

TEST_F(LoadRelayConfigTest, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string fifo = absl::StrCat(dir_, "/relay.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  files_.push_back(fifo);
  // Without a writer, a blocking open would never return.
  EXPECT_THAT(LoadRelayConfig(fifo), StatusIs(absl::StatusCode::kFailedPrecondition,
                                              absl::StrCat(fifo, ": is not a regular file")));
}

TEST_F(LoadRelayConfigTest, RejectsOversizedFileWithoutParsing) {
  std::string path = Write("big.json", std::string(kMaxRelayConfigBytes + 1, ' '));
  EXPECT_THAT(LoadRelayConfig(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat(path,
                                    ": is 1048577 bytes; the limit for a relay "
                                    "configuration is 1048576 bytes")));
}

}  // namespace
}  // namespace facet::xds
