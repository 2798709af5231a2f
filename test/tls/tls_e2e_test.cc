// TLS and mTLS on Facet's ports, end to end: `facet serve` with
// --xds-tls-* and --admin-tls-*, certificate rotation, the flag errors of all
// three serving commands, and `facet relay` dialling a TLS / mTLS upstream
// with gRFC A65's channel_creds config. Certificates are generated per test.
#include <httplib.h>  // Feature macros come from pkg-config (controller/kubernetes/webhook).
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/ads_client/csds_test_client.h"
#include "test/e2e/process.h"
#include "test/kube_api_server/tls.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::facet::testing::AdsTestClient;
using ::facet::testing::IsOk;
using ::facet::testing::kClusterTypeUrl;
using ::facet::testing::SotwStream;
using ::facet::testing::TlsCredentials;
using ::testing::HasSubstr;

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
// How long a client that should fail is given to connect and fetch.
constexpr absl::Duration kRefusedTimeout = absl::Seconds(3);
constexpr absl::Duration kFetchTimeout = absl::Seconds(10);

constexpr char kManifest[] = R"(apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata:
  name: greeter-prod-cluster
  namespace: tls
spec:
  type: cluster
  name: greeter-prod
  variants:
  - resource:
      type: EDS
      eds_cluster_config:
        eds_config:
          ads: {}
          resource_api_version: V3
      lb_policy: ROUND_ROBIN
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata:
  name: greeter-prod-endpoints
  namespace: tls
spec:
  type: endpoint
  name: greeter-prod
  variants:
  - resource:
      endpoints:
      - locality: {region: local, zone: zone-a}
        load_balancing_weight: 1
        lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 9}}}
)";

// Returns the string value of `"field":"..."` in the ready file's JSON.
std::string JsonField(const std::string& json, const std::string& field) {
  const std::string key = absl::StrCat("\"", field, "\":\"");
  const size_t start = json.find(key);
  if (start == std::string::npos) return "";
  const size_t end = json.find('"', start + key.size());
  return json.substr(start + key.size(), end - start - key.size());
}

int PortOf(const std::string& address) {
  return std::atoi(address.substr(address.rfind(':') + 1).c_str());
}

// A running `facet` command and the addresses from its ready file.
struct Running {
  std::unique_ptr<Process> process;
  std::string xds_address;
  std::string admin_address;
};

// Channel credentials trusting `ca_pem`, presenting `identity` if set.
std::shared_ptr<grpc::ChannelCredentials> TlsClient(const std::string& ca_pem,
                                                    const TlsCredentials* identity = nullptr) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ca_pem;
  if (identity != nullptr) {
    options.pem_cert_chain = identity->cert_pem;
    options.pem_private_key = identity->key_pem;
  }
  return grpc::SslCredentials(options);
}

// Subscribes to cluster greeter-prod on `stream` and waits for it.
absl::Status FetchOn(SotwStream& stream, bool first, absl::Duration timeout) {
  auto request = ::facet::testing::MakeRequest(kClusterTypeUrl, {"greeter-prod"});
  if (first) *request.mutable_node() = ::facet::testing::MakeNode("tls-client");
  if (absl::Status sent = stream.Send(request); !sent.ok()) return sent;
  absl::StatusOr<::facet::testing::DiscoveryResponse> response = stream.Next(timeout);
  if (!response.ok()) return response.status();
  if (response->resources_size() != 1) {
    return absl::InternalError(
        absl::StrCat("expected greeter-prod, got ", response->resources_size(), " resources"));
  }
  return absl::OkStatus();
}

// A client on its own connection (no subchannel shared with earlier ones).
absl::StatusOr<std::unique_ptr<AdsTestClient>> Connect(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials,
    absl::Duration timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return AdsTestClient::Connect(address, std::move(credentials), args, timeout);
}

// Connects with `credentials` and fetches cluster greeter-prod over ADS.
absl::Status Fetch(const std::string& address,
                   std::shared_ptr<grpc::ChannelCredentials> credentials,
                   absl::Duration timeout = kFetchTimeout) {
  absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
      Connect(address, std::move(credentials), timeout);
  if (!client.ok()) return client.status();
  absl::StatusOr<std::unique_ptr<SotwStream>> stream = (*client)->OpenSotw();
  if (!stream.ok()) return stream.status();
  return FetchOn(**stream, /*first=*/true, timeout);
}

class TlsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // OpenSSL (httplib's clients) writes without MSG_NOSIGNAL.
    std::signal(SIGPIPE, SIG_IGN);
    std::string dir_template = ::testing::TempDir() + "facet_tls_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
    dir_ = dir_template;
    manifests_ = dir_ + "/manifests";
    std::filesystem::create_directories(manifests_);
    ASSERT_THAT(WriteFileAtomically(manifests_ + "/greeter.yaml", kManifest), IsOk());
    absl::StatusOr<TlsCredentials> good = ::facet::testing::GenerateTestCredentials();
    absl::StatusOr<TlsCredentials> other = ::facet::testing::GenerateTestCredentials();
    ASSERT_THAT(good, IsOk());
    ASSERT_THAT(other, IsOk());
    good_ = *good;
    other_ = *other;
    ca_ = Write("ca.pem", good_.ca_pem);
    cert_ = Write("cert.pem", good_.cert_pem);
    key_ = Write("key.pem", good_.key_pem);
    other_ca_ = Write("other-ca.pem", other_.ca_pem);
    other_cert_ = Write("other-cert.pem", other_.cert_pem);
    other_key_ = Write("other-key.pem", other_.key_pem);
  }

  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = absl::StrCat(dir_, "/", name);
    EXPECT_THAT(WriteFileAtomically(path, contents), IsOk());
    return path;
  }

  // Starts `facet <args...>` with port-0 addresses and waits until it is
  // serving.
  absl::StatusOr<Running> StartFacet(std::vector<std::string> args) {
    const std::string ready_file = absl::StrCat(dir_, "/ready-", ++started_, ".json");
    std::vector<std::string> argv = {FACET_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--xds-address", "127.0.0.1:0", "--admin-address", "127.0.0.1:0",
                             "--ready-file", ready_file});
    ProcessOptions options;
    options.argv = argv;
    Running running;
    absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(options);
    if (!process.ok()) return process.status();
    running.process = *std::move(process);
    absl::StatusOr<std::string> ready =
        WaitForFile(ready_file, kStartTimeout, running.process.get());
    if (!ready.ok()) return ready.status();
    running.xds_address = JsonField(*ready, "xds_address");
    running.admin_address = JsonField(*ready, "admin_address");
    return running;
  }

  absl::StatusOr<Running> Serve(std::vector<std::string> tls_args) {
    std::vector<std::string> args = {"serve", "--manifests", manifests_};
    args.insert(args.end(), tls_args.begin(), tls_args.end());
    return StartFacet(args);
  }

  // Runs `facet <args...>`, which must exit at once; returns its exit
  // status, with its stderr in `stderr_out`.
  ExitStatus RunFailing(std::vector<std::string> args, std::string* stderr_out) {
    ProcessOptions options;
    options.argv = {FACET_BINARY};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    absl::StatusOr<std::unique_ptr<Process>> process = Process::Start(options);
    EXPECT_THAT(process, IsOk());
    if (!process.ok()) return {};
    absl::StatusOr<ExitStatus> status = (*process)->WaitExit(absl::Seconds(20));
    EXPECT_THAT(status, IsOk());
    *stderr_out = (*process)->Stderr();
    return status.ok() ? *status : ExitStatus{};
  }

  std::string dir_;
  std::string manifests_;
  TlsCredentials good_;
  TlsCredentials other_;
  std::string ca_, cert_, key_, other_ca_, other_cert_, other_key_;
  int started_ = 0;
};

TEST_F(TlsE2eTest, ServesXdsOverTlsOnlyToClientsTrustingTheCa) {
  absl::StatusOr<Running> serve = Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_});
  ASSERT_THAT(serve, IsOk());
  EXPECT_THAT(Fetch(serve->xds_address, TlsClient(good_.ca_pem)), IsOk());
  EXPECT_FALSE(Fetch(serve->xds_address, grpc::InsecureChannelCredentials(), kRefusedTimeout).ok());
  EXPECT_FALSE(Fetch(serve->xds_address, TlsClient(other_.ca_pem), kRefusedTimeout).ok());
}

TEST_F(TlsE2eTest, RequiresClientCertificatesSignedByTheClientCa) {
  absl::StatusOr<Running> serve =
      Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", ca_});
  ASSERT_THAT(serve, IsOk());
  EXPECT_THAT(Fetch(serve->xds_address, TlsClient(good_.ca_pem, &good_)), IsOk());
  EXPECT_FALSE(Fetch(serve->xds_address, TlsClient(good_.ca_pem), kRefusedTimeout).ok());
  EXPECT_FALSE(Fetch(serve->xds_address, TlsClient(good_.ca_pem, &other_), kRefusedTimeout).ok());
}

TEST_F(TlsE2eTest, RotatedCertificateServesNewConnectionsAndKeepsOpenStreams) {
  absl::StatusOr<Running> serve = Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_});
  ASSERT_THAT(serve, IsOk());
  absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
      Connect(serve->xds_address, TlsClient(good_.ca_pem), kFetchTimeout);
  ASSERT_THAT(client, IsOk());
  absl::StatusOr<std::unique_ptr<SotwStream>> stream = (*client)->OpenSotw();
  ASSERT_THAT(stream, IsOk());
  ASSERT_THAT(FetchOn(**stream, /*first=*/true, kFetchTimeout), IsOk());

  // Rotate to a certificate of another CA: key first, then certificate.
  Write("key.pem", other_.key_pem);
  Write("cert.pem", other_.cert_pem);
  absl::Status rotated = absl::UnknownError("not tried");
  for (absl::Time deadline = absl::Now() + absl::Seconds(20);
       !rotated.ok() && absl::Now() < deadline;) {
    rotated = Fetch(serve->xds_address, TlsClient(other_.ca_pem), absl::Seconds(2));
  }
  EXPECT_THAT(rotated, IsOk()) << "new connections never got the new certificate";
  EXPECT_FALSE(Fetch(serve->xds_address, TlsClient(good_.ca_pem), kRefusedTimeout).ok());

  // The stream opened before the rotation still works: a new subscription
  // on it is answered.
  auto request = ::facet::testing::MakeRequest(kClusterTypeUrl, {"greeter-prod", "other"});
  ASSERT_THAT((*stream)->Send(request), IsOk());
  absl::StatusOr<::facet::testing::DiscoveryResponse> response = (*stream)->Next(kFetchTimeout);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->type_url(), kClusterTypeUrl);
}

TEST_F(TlsE2eTest, AdminPortServesHttpsAndRequiresClientCertificates) {
  absl::StatusOr<Running> serve =
      Serve({"--admin-tls-cert", cert_, "--admin-tls-key", key_, "--admin-tls-client-ca", ca_});
  ASSERT_THAT(serve, IsOk());
  const int port = PortOf(serve->admin_address);
  {
    httplib::SSLClient client("127.0.0.1", port, cert_, key_);
    client.set_ca_cert_path(ca_.c_str());
    client.enable_server_certificate_verification(true);
    httplib::Result result = client.Get("/healthz");
    ASSERT_TRUE(result) << httplib::to_string(result.error());
    EXPECT_EQ(result->status, 200);
    EXPECT_EQ(result->body, "ok\n");
  }
  {
    httplib::SSLClient no_identity("127.0.0.1", port);
    no_identity.set_ca_cert_path(ca_.c_str());
    no_identity.enable_server_certificate_verification(true);
    httplib::Result result = no_identity.Get("/healthz");
    EXPECT_FALSE(result && result->status == 200);
  }
  {
    httplib::SSLClient stranger("127.0.0.1", port, other_cert_, other_key_);
    stranger.set_ca_cert_path(ca_.c_str());
    stranger.enable_server_certificate_verification(true);
    httplib::Result result = stranger.Get("/healthz");
    EXPECT_FALSE(result && result->status == 200);
  }
  {
    httplib::Client plaintext("127.0.0.1", port);
    httplib::Result result = plaintext.Get("/healthz");
    EXPECT_FALSE(result && result->status == 200);
  }
}

TEST_F(TlsE2eTest, FlagErrorsNameTheFlagBeforeServing) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::string missing = dir_ + "/missing.pem";
  const std::string fifo = dir_ + "/fifo.pem";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = Write("big.pem", std::string(1048577, '-'));
  const std::vector<Case> cases = {
      {{"--xds-tls-cert", cert_}, 2, "--xds-tls-cert: needs --xds-tls-key"},
      {{"--xds-tls-key", key_}, 2, "--xds-tls-key: needs --xds-tls-cert"},
      {{"--xds-tls-client-ca", ca_}, 2, "--xds-tls-client-ca: needs --xds-tls-cert"},
      {{"--xds-tls-cert", missing, "--xds-tls-key", key_},
       1,
       absl::StrCat("--xds-tls-cert: ", missing, ": cannot be read: no such file or directory")},
      // A FIFO is refused at once: opened blocking, it would hold up start-up
      // (and SIGTERM) until a writer came.
      {{"--xds-tls-cert", fifo, "--xds-tls-key", key_},
       1,
       absl::StrCat("--xds-tls-cert: ", fifo, ": is not a regular file")},
      {{"--admin-tls-cert", cert_, "--admin-tls-key", "/dev/zero"},
       1,
       "--admin-tls-key: /dev/zero: is not a regular file"},
      {{"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", big},
       1,
       absl::StrCat("--xds-tls-client-ca: ", big,
                    ": is 1048577 bytes; the limit for a certificate or key file is 1048576 "
                    "bytes")},
      {{"--xds-tls-cert", cert_, "--xds-tls-key", other_key_},
       1,
       absl::StrCat("--xds-tls-key: ", other_key_, ": is not the key of the certificate in ",
                    cert_)},
      {{"--xds-tls-cert", cert_, "--xds-tls-key", cert_},
       1,
       "--xds-tls-key: " + cert_ + ": holds no unencrypted PEM private key"},
      {{"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", key_},
       1,
       "--xds-tls-client-ca: " + key_ + ": holds no PEM certificate"},
      {{"--admin-tls-cert", cert_}, 2, "--admin-tls-cert: needs --admin-tls-key"},
      {{"--csds-readers", "ops_1.example"},
       2,
       "--csds-readers: DNS name \"ops_1.example\" is not a DNS name"},
      {{"--csds-readers", "spiffe://facet.test/ns/ops/*,"},
       2,
       "--csds-readers: DNS name \"\" is empty"},
      {{"--admin-tls-cert", cert_, "--admin-tls-key", other_key_},
       1,
       "--admin-tls-key: " + other_key_ + ": is not the key"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"serve",         "--manifests", manifests_,
                                     "--xds-address", "127.0.0.1:0", "--admin-address",
                                     "127.0.0.1:0"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string stderr_text;
    ExitStatus status = RunFailing(args, &stderr_text);
    EXPECT_EQ(status.exit_code, c.exit_code) << absl::StrJoin(c.args, " ") << ": " << stderr_text;
    EXPECT_THAT(stderr_text, HasSubstr(c.message));
  }
  // The relay and the controller take the same flags, checked as early.
  std::string stderr_text;
  EXPECT_EQ(RunFailing({"relay", "--config", missing, "--csds-readers", "https://x"}, &stderr_text)
                .exit_code,
            2);
  EXPECT_THAT(stderr_text, HasSubstr("--csds-readers: SPIFFE ID \"https://x\" must start with"));
  EXPECT_EQ(RunFailing({"controller", "--kubeconfig", missing, "--csds-readers", "*.ops.example"},
                       &stderr_text)
                .exit_code,
            2);
  EXPECT_THAT(stderr_text, HasSubstr("--csds-readers: DNS name \"*.ops.example\" contains '*'"));
  EXPECT_EQ(
      RunFailing({"relay", "--config", missing, "--xds-tls-cert", cert_}, &stderr_text).exit_code,
      2);
  EXPECT_THAT(stderr_text, HasSubstr("--xds-tls-cert: needs --xds-tls-key"));
  EXPECT_EQ(RunFailing({"controller", "--kubeconfig", missing, "--xds-tls-cert", cert_,
                        "--xds-tls-key", other_key_},
                       &stderr_text)
                .exit_code,
            1);
  EXPECT_THAT(stderr_text, HasSubstr("--xds-tls-key: " + other_key_ + ": is not the key"));
}

// gRPC's certificate watcher opens the relay's certificate files blocking,
// after the shutdown signals are blocked: a FIFO there held up start-up and
// SIGTERM. The configuration's files are now read once without blocking
// while the configuration is checked, so start-up cannot block on them (nor
// on the configuration file itself) and the relay exits at once.
TEST_F(TlsE2eTest, RelayRefusesAFifoAsItsCertificateFileAtOnce) {
  const std::string fifo = dir_ + "/ca.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string config =
      Write("relay-fifo.json",
            absl::StrCat(R"({"xds_servers": [{"server_uri": "127.0.0.1:1", )",
                         R"("channel_creds": [{"type": "tls", "config": {"ca_certificate_file": ")",
                         fifo, R"("}}]}]})"));
  std::string stderr_text;
  EXPECT_EQ(RunFailing({"relay", "--config", config, "--xds-address", "127.0.0.1:0",
                        "--admin-address", "127.0.0.1:0"},
                       &stderr_text)
                .exit_code,
            2);
  EXPECT_THAT(stderr_text,
              HasSubstr(absl::StrCat("xds_servers[0].channel_creds[0].config.ca_certificate_file: "
                                     "\"",
                                     fifo, "\": is not a regular file")));
  // The configuration file itself.
  const std::string config_fifo = dir_ + "/relay.fifo";
  ASSERT_EQ(mkfifo(config_fifo.c_str(), 0600), 0);
  EXPECT_EQ(RunFailing({"relay", "--config", config_fifo}, &stderr_text).exit_code, 1);
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat(config_fifo, ": is not a regular file")));
}

TEST_F(TlsE2eTest, RelayReachesTlsAndMtlsUpstreamsWithA65Config) {
  absl::StatusOr<Running> tls_upstream = Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_});
  ASSERT_THAT(tls_upstream, IsOk());
  absl::StatusOr<Running> mtls_upstream =
      Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", ca_});
  ASSERT_THAT(mtls_upstream, IsOk());
  struct Case {
    const char* name;
    std::string upstream;
    std::string tls_config;
  };
  const std::vector<Case> cases = {
      {"tls", tls_upstream->xds_address,
       absl::StrCat(R"({"ca_certificate_file": ")", ca_, R"("})")},
      {"mtls", mtls_upstream->xds_address,
       absl::StrCat(R"({"ca_certificate_file": ")", ca_, R"(", "certificate_file": ")", cert_,
                    R"(", "private_key_file": ")", key_, R"("})")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string config =
        Write(absl::StrCat("relay-", c.name, ".json"),
              absl::StrCat(R"({"xds_servers": [{"server_uri": ")", c.upstream,
                           R"(", "channel_creds": [{"type": "tls", "config": )", c.tls_config,
                           R"(}], "server_features": ["xds_v3"]}], "node": {"id": "relay"}})"));
    absl::StatusOr<Running> relay = StartFacet({"relay", "--config", config});
    ASSERT_THAT(relay, IsOk());
    EXPECT_THAT(Fetch(relay->xds_address, grpc::InsecureChannelCredentials()), IsOk());
  }
}

// An authority only listed clients may read, holding a cluster and its
// endpoints (served beside kManifest's old-style greeter-prod).
constexpr char kRestrictedManifest[] = R"(apiVersion: facet.dev/v1alpha1
kind: XdsAuthority
metadata:
  name: secure-example
spec:
  authority: secure.example
  allowedNamespaces: [tls]
  allowedClients:
  - spiffeId: spiffe://facet.test/ns/tls/sa/allowed
  - dnsName: allowed.client.test
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata:
  name: secure-cluster
  namespace: tls
spec:
  type: cluster
  name: secure
  authority: secure.example
  variants:
  - resource:
      type: EDS
      eds_cluster_config:
        eds_config: {ads: {}, resource_api_version: V3}
        service_name: xdstp://secure.example/envoy.config.endpoint.v3.ClusterLoadAssignment/secure
---
apiVersion: facet.dev/v1alpha1
kind: XdsResource
metadata:
  name: secure-endpoints
  namespace: tls
spec:
  type: endpoint
  name: secure
  authority: secure.example
  variants:
  - resource:
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 9}}}
)";
constexpr char kSecureCluster[] = "xdstp://secure.example/envoy.config.cluster.v3.Cluster/secure";
constexpr char kSecureEndpoints[] =
    "xdstp://secure.example/envoy.config.endpoint.v3.ClusterLoadAssignment/secure";

// What a client with `credentials` is told about kSecureCluster and
// greeter-prod over SotW, and about kSecureEndpoints over delta: the names
// it gets, and "-name" for each name delta reports removed (does not exist).
absl::StatusOr<std::vector<std::string>> FetchRestricted(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
      Connect(address, std::move(credentials), kFetchTimeout);
  if (!client.ok()) return client.status();
  std::vector<std::string> seen;
  {
    absl::StatusOr<std::unique_ptr<SotwStream>> stream = (*client)->OpenSotw();
    if (!stream.ok()) return stream.status();
    auto request = ::facet::testing::MakeRequest(kClusterTypeUrl, {kSecureCluster, "greeter-prod"});
    *request.mutable_node() = ::facet::testing::MakeNode("tls-client");
    if (absl::Status sent = (*stream)->Send(request); !sent.ok()) return sent;
    absl::StatusOr<::facet::testing::DiscoveryResponse> response = (*stream)->Next(kFetchTimeout);
    if (!response.ok()) return response.status();
    absl::StatusOr<std::vector<std::string>> names = ::facet::testing::ResourceNames(*response);
    if (!names.ok()) return names.status();
    seen = *names;
  }
  absl::StatusOr<std::unique_ptr<::facet::testing::DeltaStream>> delta = (*client)->OpenDelta();
  if (!delta.ok()) return delta.status();
  auto request = ::facet::testing::MakeDeltaRequest(::facet::testing::kClusterLoadAssignmentTypeUrl,
                                                    {kSecureEndpoints});
  *request.mutable_node() = ::facet::testing::MakeNode("tls-client");
  if (absl::Status sent = (*delta)->Send(request); !sent.ok()) return sent;
  absl::StatusOr<::facet::testing::DeltaDiscoveryResponse> response = (*delta)->Next(kFetchTimeout);
  if (!response.ok()) return response.status();
  absl::StatusOr<std::vector<std::string>> names = ::facet::testing::ResourceNames(*response);
  if (!names.ok()) return names.status();
  seen.insert(seen.end(), names->begin(), names->end());
  for (const std::string& removed : response->removed_resources()) seen.push_back("-" + removed);
  std::sort(seen.begin(), seen.end());
  return seen;
}

// FetchRestricted's names, sorted and joined by spaces, or the error (readable in a
// failed expectation).
std::string SeenBy(const std::string& address,
                   std::shared_ptr<grpc::ChannelCredentials> credentials) {
  absl::StatusOr<std::vector<std::string>> seen = FetchRestricted(address, std::move(credentials));
  return seen.ok() ? absl::StrJoin(*seen, " ") : seen.status().ToString();
}

TEST_F(TlsE2eTest, OnlyAllowedClientIdentitiesReadARestrictedAuthority) {
  Write("manifests/secure.yaml", kRestrictedManifest);
  // Each client identity comes from its own CA; the server trusts the three.
  absl::StatusOr<TlsCredentials> spiffe_allowed =
      ::facet::testing::GenerateTestCredentials({"spiffe://facet.test/ns/tls/sa/allowed"});
  absl::StatusOr<TlsCredentials> dns_allowed =
      ::facet::testing::GenerateTestCredentials({"allowed.client.test"});
  absl::StatusOr<TlsCredentials> denied = ::facet::testing::GenerateTestCredentials(
      {"spiffe://facet.test/ns/tls/sa/other", "other.client.test"});
  ASSERT_THAT(spiffe_allowed, IsOk());
  ASSERT_THAT(dns_allowed, IsOk());
  ASSERT_THAT(denied, IsOk());
  const std::string client_ca = Write(
      "client-cas.pem", absl::StrCat(spiffe_allowed->ca_pem, dns_allowed->ca_pem, denied->ca_pem));

  const std::string everything =
      absl::StrJoin({"greeter-prod", kSecureCluster, kSecureEndpoints}, " ");
  const std::string does_not_exist = absl::StrCat("-", kSecureEndpoints, " greeter-prod");
  absl::StatusOr<Running> mtls =
      Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", client_ca});
  ASSERT_THAT(mtls, IsOk());
  EXPECT_EQ(SeenBy(mtls->xds_address, TlsClient(good_.ca_pem, &*spiffe_allowed)), everything);
  EXPECT_EQ(SeenBy(mtls->xds_address, TlsClient(good_.ca_pem, &*dns_allowed)), everything);
  EXPECT_EQ(SeenBy(mtls->xds_address, TlsClient(good_.ca_pem, &*denied)), does_not_exist);

  // Without client certificates no stream has an identity: nobody reads it.
  absl::StatusOr<Running> tls = Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_});
  ASSERT_THAT(tls, IsOk());
  EXPECT_EQ(SeenBy(tls->xds_address, TlsClient(good_.ca_pem, &*spiffe_allowed)), does_not_exist);
  absl::StatusOr<Running> plaintext = Serve({});
  ASSERT_THAT(plaintext, IsOk());
  EXPECT_EQ(SeenBy(plaintext->xds_address, grpc::InsecureChannelCredentials()), does_not_exist);
}

// A client holding an open ADS stream with node `node_id` that has
// received cluster greeter-prod.
struct HeldStream {
  std::unique_ptr<AdsTestClient> client;
  std::unique_ptr<SotwStream> stream;
};

absl::StatusOr<HeldStream> Hold(const std::string& address,
                                std::shared_ptr<grpc::ChannelCredentials> credentials,
                                const std::string& node_id) {
  HeldStream held;
  absl::StatusOr<std::unique_ptr<AdsTestClient>> client =
      Connect(address, std::move(credentials), kFetchTimeout);
  if (!client.ok()) return client.status();
  held.client = *std::move(client);
  absl::StatusOr<std::unique_ptr<SotwStream>> stream = held.client->OpenSotw();
  if (!stream.ok()) return stream.status();
  held.stream = *std::move(stream);
  auto request = ::facet::testing::MakeRequest(kClusterTypeUrl, {"greeter-prod"});
  *request.mutable_node() = ::facet::testing::MakeNode(node_id);
  if (absl::Status sent = held.stream->Send(request); !sent.ok()) return sent;
  absl::StatusOr<::facet::testing::DiscoveryResponse> response = held.stream->Next(kFetchTimeout);
  if (!response.ok()) return response.status();
  return held;
}

// The node ids CSDS reports to a caller with `credentials`, sorted and joined
// by spaces, or the error.
std::string CsdsNodesSeenBy(const std::string& address,
                            std::shared_ptr<grpc::ChannelCredentials> credentials) {
  ::facet::testing::CsdsTestClient csds(address, std::move(credentials), kFetchTimeout);
  absl::StatusOr<::facet::testing::ClientStatusResponse> response = csds.Fetch({});
  if (!response.ok()) return response.status().ToString();
  std::vector<std::string> ids;
  for (const auto& config : response->config()) ids.push_back(config.node().id());
  std::sort(ids.begin(), ids.end());
  return absl::StrJoin(ids, " ");
}

TEST_F(TlsE2eTest, CsdsShowsACallerOnlyItsOwnIdentitysClientsUnlessItIsAReader) {
  // Every generated certificate also carries the DNS SAN "localhost": one
  // shared name does not make two identities the same.
  absl::StatusOr<TlsCredentials> a =
      ::facet::testing::GenerateTestCredentials({"spiffe://facet.test/ns/tls/sa/a"});
  absl::StatusOr<TlsCredentials> b =
      ::facet::testing::GenerateTestCredentials({"spiffe://facet.test/ns/tls/sa/b"});
  absl::StatusOr<TlsCredentials> ops =
      ::facet::testing::GenerateTestCredentials({"spiffe://facet.test/ns/ops/sa/csds"});
  absl::StatusOr<TlsCredentials> ops_dns =
      ::facet::testing::GenerateTestCredentials({"csds.ops.test"});
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(ops, IsOk());
  ASSERT_THAT(ops_dns, IsOk());
  const std::string client_ca =
      Write("client-cas.pem", absl::StrCat(a->ca_pem, b->ca_pem, ops->ca_pem, ops_dns->ca_pem));
  absl::StatusOr<Running> serve =
      Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", client_ca,
             "--csds-readers", "spiffe://facet.test/ns/ops/*,csds.ops.test"});
  ASSERT_THAT(serve, IsOk());
  const std::string& address = serve->xds_address;
  absl::StatusOr<HeldStream> a1 = Hold(address, TlsClient(good_.ca_pem, &*a), "client-a1");
  absl::StatusOr<HeldStream> a2 = Hold(address, TlsClient(good_.ca_pem, &*a), "client-a2");
  absl::StatusOr<HeldStream> b1 = Hold(address, TlsClient(good_.ca_pem, &*b), "client-b1");
  ASSERT_THAT(a1, IsOk());
  ASSERT_THAT(a2, IsOk());
  ASSERT_THAT(b1, IsOk());

  EXPECT_EQ(CsdsNodesSeenBy(address, TlsClient(good_.ca_pem, &*a)), "client-a1 client-a2");
  EXPECT_EQ(CsdsNodesSeenBy(address, TlsClient(good_.ca_pem, &*b)), "client-b1");
  EXPECT_EQ(CsdsNodesSeenBy(address, TlsClient(good_.ca_pem, &*ops)),
            "client-a1 client-a2 client-b1");
  EXPECT_EQ(CsdsNodesSeenBy(address, TlsClient(good_.ca_pem, &*ops_dns)),
            "client-a1 client-a2 client-b1");

  // The admin port's /clients still reports every client.
  httplib::Client admin("127.0.0.1", PortOf(serve->admin_address));
  httplib::Result clients = admin.Get("/clients");
  ASSERT_TRUE(clients) << httplib::to_string(clients.error());
  EXPECT_THAT(clients->body, HasSubstr("client-a1"));
  EXPECT_THAT(clients->body, HasSubstr("client-b1"));
  // Each with the identity CSDS judged it by (the console's clients page
  // shows it).
  EXPECT_THAT(clients->body,
              HasSubstr(R"("identity":{"dns_names":["localhost"],)"
                        R"("spiffe_id":"spiffe://facet.test/ns/tls/sa/a"},"node_id":"client-a1")"));
  EXPECT_THAT(clients->body,
              HasSubstr(R"("identity":{"dns_names":["localhost"],)"
                        R"("spiffe_id":"spiffe://facet.test/ns/tls/sa/b"},"node_id":"client-b1")"));

  // Without the flag, nobody sees another identity's clients.
  absl::StatusOr<Running> no_readers =
      Serve({"--xds-tls-cert", cert_, "--xds-tls-key", key_, "--xds-tls-client-ca", client_ca});
  ASSERT_THAT(no_readers, IsOk());
  absl::StatusOr<HeldStream> b2 =
      Hold(no_readers->xds_address, TlsClient(good_.ca_pem, &*b), "client-b2");
  ASSERT_THAT(b2, IsOk());
  EXPECT_EQ(CsdsNodesSeenBy(no_readers->xds_address, TlsClient(good_.ca_pem, &*ops)), "");
  EXPECT_EQ(CsdsNodesSeenBy(no_readers->xds_address, TlsClient(good_.ca_pem, &*b)), "client-b2");

  // Plaintext: a caller without a certificate sees the clients without one.
  absl::StatusOr<Running> plaintext = Serve({});
  ASSERT_THAT(plaintext, IsOk());
  absl::StatusOr<HeldStream> p1 =
      Hold(plaintext->xds_address, grpc::InsecureChannelCredentials(), "client-p1");
  ASSERT_THAT(p1, IsOk());
  EXPECT_EQ(CsdsNodesSeenBy(plaintext->xds_address, grpc::InsecureChannelCredentials()),
            "client-p1");
}

}  // namespace
}  // namespace facet::e2e
