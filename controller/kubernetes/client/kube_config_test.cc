#include "controller/kubernetes/client/kube_config.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_clock.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller::kube {
namespace {

namespace fs = std::filesystem;
using ::facet::testing::FakeClock;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FakeEnvironment final : public Environment {
 public:
  std::optional<std::string> GetEnv(const std::string& name) const override {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  std::string ServiceAccountDir() const override { return service_account_dir; }

  std::map<std::string, std::string> vars;
  std::string service_account_dir = "/nonexistent";
};

// A fresh directory per test.
class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / "kube_config_test" /
           absl::StrCat(info->test_suite_name(), ".", info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  // Writes `contents` to dir_/relative (creating directories); returns the path.
  std::string Write(const std::string& relative, const std::string& contents) {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << contents;
    return path.string();
  }

  fs::path dir_;
};

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr char kCert[] = "-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n";
constexpr char kKey[] = "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n";

TEST_F(KubeConfigTest, LoadsDataFieldsOfTheCurrentContext) {
  const std::string path =
      Write("config", absl::StrReplaceAll(R"(
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: prod-cluster
  cluster: {server: https://prod.example:6443}
- name: dev-cluster
  cluster:
    server: https://dev.example:6443/
    certificate-authority-data: $CA
    tls-server-name: api.dev.internal
contexts:
- name: dev
  context: {cluster: dev-cluster, user: alice, namespace: demo}
users:
- name: alice
  user:
    client-certificate-data: $CERT
    client-key-data: $KEY
    token: secret-token
)",
                                          {{"$CA", absl::Base64Escape(kCa)},
                                           {"$CERT", absl::Base64Escape(kCert)},
                                           {"$KEY", absl::Base64Escape(kKey)}}));
  absl::StatusOr<ClusterConfig> config = LoadKubeconfig({path});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, "https://dev.example:6443");
  EXPECT_EQ(config->ca_pem, kCa);
  EXPECT_EQ(config->tls_server_name, "api.dev.internal");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->client_cert_pem, kCert);
  EXPECT_EQ(config->client_key_pem, kKey);
  EXPECT_EQ(config->token, "secret-token");
  EXPECT_EQ(config->token_file, "");
  EXPECT_EQ(config->default_namespace, "demo");
}

TEST_F(KubeConfigTest, ResolvesRelativeFilesAgainstTheKubeconfigDirectory) {
  Write("kube/certs/ca.crt", kCa);
  Write("kube/certs/client.crt", kCert);
  Write("kube/certs/client.key", kKey);
  const std::string path = Write("kube/config", R"(
current-context: c
clusters:
- name: k
  cluster:
    server: https://10.0.0.1
    certificate-authority: certs/ca.crt
    insecure-skip-tls-verify: true
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user:
    client-certificate: certs/client.crt
    client-key: ./certs/client.key
    tokenFile: tokens/t
)");
  absl::StatusOr<ClusterConfig> config = LoadKubeconfig({path});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->ca_pem, kCa);
  EXPECT_TRUE(config->insecure_skip_tls_verify);
  EXPECT_EQ(config->client_cert_pem, kCert);
  EXPECT_EQ(config->client_key_pem, kKey);
  EXPECT_EQ(config->token_file, (dir_ / "kube/tokens/t").string());
  EXPECT_EQ(config->default_namespace, "default");
}

TEST_F(KubeConfigTest, MergesSeveralFilesFirstOneWinsPerKey) {
  Write("b/ca.crt", kCa);
  const std::string first = Write("a/config", R"(
current-context: from-a
clusters:
- name: shared
  cluster: {server: https://a.example}
contexts:
- name: from-a
  context: {cluster: shared, user: only-in-b}
)");
  const std::string second = Write("b/config", R"(
current-context: from-b
clusters:
- name: shared
  cluster: {server: https://b.example}
- name: b-cluster
  cluster: {server: https://b-only.example, certificate-authority: ca.crt}
contexts:
- name: from-a
  context: {cluster: b-cluster}
- name: from-b
  context: {cluster: b-cluster, namespace: bns}
users:
- name: only-in-b
  user: {token: b-token}
)");
  absl::StatusOr<ClusterConfig> config =
      LoadKubeconfig({first, (dir_ / "missing").string(), second});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, "https://a.example");
  EXPECT_EQ(config->token, "b-token");

  // An entry from the second file resolves its paths against that file.
  absl::StatusOr<ClusterConfig> other = LoadKubeconfig({first, second}, "from-b");
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(other->server, "https://b-only.example");
  EXPECT_EQ(other->ca_pem, kCa);
  EXPECT_EQ(other->default_namespace, "bns");
}

TEST_F(KubeConfigTest, FailsWhenNoFileExists) {
  EXPECT_THAT(LoadKubeconfig({(dir_ / "nope").string()}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
}

TEST_F(KubeConfigTest, ExecPluginIsUnimplementedNamingTheUser) {
  const std::string path = Write("config", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://x"}}]
contexts: [{name: c, context: {cluster: k, user: gke-user}}]
users:
- name: gke-user
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin}
)");
  EXPECT_THAT(LoadKubeconfig({path}),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr(path), HasSubstr("user \"gke-user\""),
                             HasSubstr("field \"exec\""))));
}

TEST_F(KubeConfigTest, ErrorsNameTheFileTheEntryAndTheField) {
  const std::string path = Write("config", R"(
current-context: c
clusters:
- name: k
  cluster: {server: "https://x", certificate-authority-data: "not base64!"}
- name: k2
  cluster: {server: "https://x", certificate-authority: missing/ca.crt}
- name: k3
  cluster: {server: "https://x", insecure-skip-tls-verify: perhaps}
contexts:
- {name: c, context: {cluster: k}}
- {name: c2, context: {cluster: k2}}
- {name: c3, context: {cluster: k3}}
- {name: c4, context: {cluster: nowhere}}
)");
  EXPECT_THAT(LoadKubeconfig({path}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("cluster \"k\""),
                             HasSubstr("field \"certificate-authority-data\""))));
  EXPECT_THAT(
      LoadKubeconfig({path}, "c2"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("cluster \"k2\""), HasSubstr("field \"certificate-authority\""),
                     HasSubstr((dir_ / "missing/ca.crt").string()))));
  EXPECT_THAT(LoadKubeconfig({path}, "c3"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("field \"insecure-skip-tls-verify\"")));
  EXPECT_THAT(LoadKubeconfig({path}, "c4"),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("context \"c4\""), HasSubstr("cluster \"nowhere\""))));
  EXPECT_THAT(LoadKubeconfig({path}, "c5"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("context \"c5\"")));
}

TEST_F(KubeConfigTest, MalformedYamlNamesTheFileAndLine) {
  const std::string path = Write("config", "clusters:\n  - name: [unclosed\n");
  EXPECT_THAT(LoadKubeconfig({path}), StatusIs(absl::StatusCode::kInvalidArgument,
                                               AllOf(HasSubstr(path), HasSubstr("line"))));
}

TEST_F(KubeConfigTest, NoContextSelectedIsFailedPrecondition) {
  const std::string path = Write("config", "clusters: []\n");
  EXPECT_THAT(LoadKubeconfig({path}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("current-context")));
}

TEST_F(KubeConfigTest, InClusterConfigBracketsIpv6Hosts) {
  Write("sa/token", "sa-token\n");
  Write("sa/ca.crt", kCa);
  Write("sa/namespace", "from-file\n");
  FakeEnvironment env;
  env.service_account_dir = (dir_ / "sa").string();
  env.vars = {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  absl::StatusOr<ClusterConfig> config = LoadInClusterConfig(env);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(config->token, "sa-token");
  EXPECT_EQ(config->token_file, (dir_ / "sa/token").string());
  EXPECT_EQ(config->ca_pem, kCa);
  EXPECT_EQ(config->default_namespace, "from-file");

  env.vars["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  env.vars["POD_NAMESPACE"] = "from-env";
  config = LoadInClusterConfig(env);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->default_namespace, "from-env");
}

TEST_F(KubeConfigTest, InClusterConfigFailsOutsideAClusterOrWithoutToken) {
  FakeEnvironment env;
  EXPECT_THAT(LoadInClusterConfig(env), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 HasSubstr("KUBERNETES_SERVICE_HOST")));
  env.vars = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  env.service_account_dir = (dir_ / "empty").string();
  EXPECT_THAT(LoadInClusterConfig(env), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 HasSubstr((dir_ / "empty/token").string())));
}

TEST_F(KubeConfigTest, DefaultPathsSplitKubeconfigOrUseHome) {
  FakeEnvironment env;
  env.vars = {{"HOME", "/home/me"}};
  EXPECT_THAT(DefaultKubeconfigPaths(env), ElementsAre("/home/me/.kube/config"));
  env.vars["KUBECONFIG"] = "/a::/b:/a";
  EXPECT_THAT(DefaultKubeconfigPaths(env), ElementsAre("/a", "/b"));
}

TEST_F(KubeConfigTest, LoadClusterConfigPrefersFlagThenKubeconfigThenInCluster) {
  const std::string flag = Write("flag", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://flag"}}]
contexts: [{name: c, context: {cluster: k}}]
)");
  const std::string env_file = Write("env", R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://env"}}]
contexts: [{name: c, context: {cluster: k}}]
)");
  Write("sa/token", "t");
  Write("sa/ca.crt", kCa);
  FakeEnvironment env;
  env.service_account_dir = (dir_ / "sa").string();
  env.vars = {{"KUBECONFIG", env_file},
              {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
              {"KUBERNETES_SERVICE_PORT", "443"}};
  EXPECT_EQ(LoadClusterConfig(env, flag, "")->server, "https://flag");
  EXPECT_EQ(LoadClusterConfig(env, "", "")->server, "https://env");
  env.vars.erase("KUBECONFIG");
  EXPECT_EQ(LoadClusterConfig(env, "", "")->server, "https://10.0.0.1:443");
}

TEST_F(KubeConfigTest, TokenSourceServesTheStaticTokenWithoutAFile) {
  FakeClock clock;
  TokenSource tokens("static", "", clock);
  EXPECT_EQ(*tokens.Token(), "static");
  tokens.Invalidate();
  EXPECT_EQ(*tokens.Token(), "static");
}

TEST_F(KubeConfigTest, TokenSourceRereadsTheFileAfterAMinute) {
  FakeClock clock;
  const std::string file = Write("token", "one\n");
  TokenSource tokens("", file, clock);
  EXPECT_EQ(*tokens.Token(), "one");
  Write("token", "two");
  clock.Advance(absl::Seconds(59));
  EXPECT_EQ(*tokens.Token(), "one");
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*tokens.Token(), "two");
}

TEST_F(KubeConfigTest, TokenSourceRereadsTheFileAfterInvalidate) {
  FakeClock clock;
  const std::string file = Write("token", "old");
  TokenSource tokens("", file, clock);
  EXPECT_EQ(*tokens.Token(), "old");
  Write("token", "rotated");
  EXPECT_EQ(*tokens.Token(), "old");
  tokens.Invalidate();
  EXPECT_EQ(*tokens.Token(), "rotated");
}

TEST_F(KubeConfigTest, TokenSourceKeepsTheLastTokenWhileTheFileIsUnreadable) {
  FakeClock clock;
  const std::string file = Write("token", "good");
  TokenSource tokens("static", file, clock);
  EXPECT_EQ(*tokens.Token(), "good");
  fs::remove(file);
  tokens.Invalidate();
  EXPECT_EQ(*tokens.Token(), "good");
  Write("token", "back");
  EXPECT_EQ(*tokens.Token(), "back");  // Still invalidated: re-read on this call.
}

TEST_F(KubeConfigTest, TokenSourceFallsBackToStaticThenFails) {
  FakeClock clock;
  const std::string missing = (dir_ / "missing-token").string();
  EXPECT_EQ(*TokenSource("static", missing, clock).Token(), "static");
  EXPECT_THAT(TokenSource("", missing, clock).Token(),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr(missing)));
}

}  // namespace
}  // namespace facet::controller::kube
