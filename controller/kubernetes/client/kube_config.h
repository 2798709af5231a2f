// Where the Kubernetes API server is and how to authenticate to it: loaded
// from the pod's service account (in cluster) or from kubeconfig files (as
// kubectl merges them), plus the bearer-token source that follows token-file
// rotation.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_CONFIG_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/clock.h"

namespace facet::controller::kube {

// Everything needed to reach one API server as one user. PEM fields hold the
// contents (files named in a kubeconfig are read at load time); token_file is
// kept as a path because projected tokens rotate (see TokenSource).
struct ClusterConfig {
  std::string server;  // "https://host:port", no trailing slash.
  std::string ca_pem;  // Empty: the system trust store.
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // Empty: the server URL's host.
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // Static bearer token; the fallback when token_file is unreadable.
  std::string token_file;  // Absolute path; wins over `token` while readable.
  std::string default_namespace = "default";
};

// The process environment as seen by LoadInClusterConfig and
// LoadClusterConfig. Implementations: ProcessEnvironment and test fakes.
class Environment {
 public:
  virtual ~Environment() = default;
  // Returns the variable's value, or nullopt when it is unset.
  virtual std::optional<std::string> GetEnv(const std::string& name) const = 0;
  // Returns the directory the service-account token, ca.crt and namespace
  // files are mounted in.
  virtual std::string ServiceAccountDir() const = 0;
};

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// getenv(3) and kServiceAccountDir. Thread-safe as long as nobody calls
// setenv concurrently.
class ProcessEnvironment final : public Environment {
 public:
  std::optional<std::string> GetEnv(const std::string& name) const override;
  std::string ServiceAccountDir() const override { return kServiceAccountDir; }
};

// Builds the in-cluster config as client-go's rest.InClusterConfig does:
// server https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an IPv6
// host in brackets), token_file and token from <dir>/token, ca_pem from
// <dir>/ca.crt, default_namespace from $POD_NAMESPACE, else <dir>/namespace,
// else "default". Fails with FailedPrecondition when the variables are unset
// (not in a cluster) or the token or CA cannot be read (naming the file).
absl::StatusOr<ClusterConfig> LoadInClusterConfig(const Environment& env);

// Loads kubeconfig files and resolves one context. Several files are merged as
// kubectl merges $KUBECONFIG: for current-context and for each named cluster,
// user and context the first file that sets it wins; missing files are
// skipped. `context` overrides current-context when non-empty. Relative paths
// (certificate-authority, client-certificate, client-key, tokenFile) resolve
// against the directory of the file that defined the entry; *-data fields are
// base64 and win over their file forms. Errors name the file, the context,
// cluster or user and the field: NotFound (no readable file, unknown context,
// cluster or user), InvalidArgument (malformed YAML or field), FailedPrecondition
// (no context selected, a referenced file unreadable), Unimplemented (exec and
// auth-provider credential plugins, basic auth).
absl::StatusOr<ClusterConfig> LoadKubeconfig(const std::vector<std::string>& paths,
                                             absl::string_view context = "");

// Returns the kubeconfig files kubectl would read: $KUBECONFIG split on ':'
// (empty entries dropped), else $HOME/.kube/config. Empty when neither is set.
std::vector<std::string> DefaultKubeconfigPaths(const Environment& env);

// Picks the config as controller-runtime does: `kubeconfig` when non-empty,
// else $KUBECONFIG, else in-cluster when $KUBERNETES_SERVICE_HOST is set, else
// $HOME/.kube/config. `context` applies to kubeconfig files only.
absl::StatusOr<ClusterConfig> LoadClusterConfig(const Environment& env,
                                                absl::string_view kubeconfig,
                                                absl::string_view context);

// Serves the bearer token for requests. With a token file (projected
// service-account tokens expire and are rotated), re-reads it at most once per
// `refresh_period` and on the first call after Invalidate(); while a re-read
// fails, the last token read (else the static token) stays in use, as
// client-go's cached file token source does. Thread-safe.
class TokenSource {
 public:
  // `clock` must outlive this object.
  TokenSource(std::string static_token, std::string token_file, Clock& clock,
              absl::Duration refresh_period = absl::Minutes(1));
  explicit TokenSource(const ClusterConfig& config, Clock& clock = RealClock::Get());

  // Returns the current token; empty when the config has none (no bearer
  // auth). Fails with Unauthenticated, naming the file, only when the token
  // file was never readable and there is no static token.
  absl::StatusOr<std::string> Token();

  // Drops the cached token so the next Token() re-reads the file: call after
  // the server answered 401.
  void Invalidate();

 private:
  const std::string static_token_;
  const std::string token_file_;
  Clock& clock_;
  const absl::Duration refresh_period_;
  absl::Mutex mu_;
  std::string cached_ ABSL_GUARDED_BY(mu_);
  bool have_cached_ ABSL_GUARDED_BY(mu_) = false;
  bool invalidated_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_read_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_KUBE_CONFIG_H_
