// An in-process stand-in for kube-apiserver, for Facet's controller tests and
// for driving the real kubectl: the facet.dev/v1alpha1 custom resources, the
// Gateway API's GRPCRoute and ReferenceGrant, coordination.k8s.io/v1 Lease and
// core/v1 Namespace and Service (and the other types in resource_types.h),
// with the apiserver's
// resourceVersion, list, watch, write, patch, validating admission webhook
// and error semantics (see docs/testing-kubernetes.md for what is and is not
// reproduced), plus fault injection.
#ifndef FACET_TEST_KUBE_API_SERVER_KUBE_TEST_SERVER_H_
#define FACET_TEST_KUBE_API_SERVER_KUBE_TEST_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace facet::testing {

class HttpServer;
class KubeApi;

// One write of a /status subresource (PUT or PATCH), as the server answered it.
struct StatusWrite {
  absl::Time time;   // When it was answered.
  std::string path;  // The object's API path, without "/status".
  int code = 0;      // The answer's HTTP code (409 for a conflict).
};

// Serves HTTP on 127.0.0.1, a thread per connection. Thread-safe: every
// method may be called from any thread while requests are being served.
class KubeTestServer {
 public:
  struct Options {
    // Required as "Authorization: Bearer <token>" on every request except
    // /version, /healthz, /readyz and /livez; "" turns authentication off.
    std::string bearer_token = "test-token";
    // Events kept for watches and paginated lists; older resourceVersions get
    // 410 Expired (an ERROR event on watches).
    size_t watch_history = 1000;
    // How often watches with allowWatchBookmarks=true get a BOOKMARK (the real
    // apiserver: about a minute). One is also sent just before timeoutSeconds.
    absl::Duration bookmark_interval = absl::Seconds(1);
    int port = 0;  // 0 picks a free port.
    // Namespaces that exist from the start (objects can only be created in an
    // existing namespace, as on a real cluster).
    std::vector<std::string> namespaces = {"default", "kube-system", "kube-public",
                                           "kube-node-lease"};
    // Serve HTTPS with a freshly generated test CA (see ca_pem()). Note that
    // kubectl sends bearer tokens only over TLS.
    bool tls = false;
    // Validating admission webhooks whose clientConfig names a Service reach
    // the address SetServiceAddress() gave it, else the one this file maps it
    // to: lines "NAMESPACE/NAME:PORT HOST:PORT", read at every call (so a
    // test may write it once the webhook listens). Unmapped: the apiserver's
    // "service not found" failure.
    std::string service_map_file;
    // Custom resources this server does not serve, as on a cluster where
    // their CRDs are not installed: "<plural>.<group>"
    // (xdsvariantpolicies.facet.dev) or a whole group
    // (gateway.networking.k8s.io). Their paths answer 404 and discovery
    // leaves them out (a group with none left is not listed). Start() fails
    // with InvalidArgument for a name that is no custom resource or group.
    std::vector<std::string> omitted_resources;
  };

  static absl::StatusOr<std::unique_ptr<KubeTestServer>> Start(Options options);
  // Ends every stream and connection and joins all threads.
  ~KubeTestServer();

  KubeTestServer(const KubeTestServer&) = delete;
  KubeTestServer& operator=(const KubeTestServer&) = delete;

  // Returns "http://127.0.0.1:PORT" (https with Options::tls).
  std::string url() const;
  // The PEM CA certificate that signed the server certificate ("" without TLS).
  const std::string& ca_pem() const { return ca_pem_; }
  int port() const;
  // Returns the token currently required.
  std::string token() const;
  // Rotates the token: requests with the old one get 401 from now on.
  void SetToken(std::string token);

  // Fault injection; each takes effect for subsequent traffic.
  // Cuts every open watch connection mid-stream (no terminating chunk). With
  // `mid_event`, first writes half of an event so the client sees a truncated line.
  void DropWatches(bool mid_event = false);
  // Sends ERROR 410 Expired to open watches, closes them cleanly and compacts
  // the history (so their resourceVersions are too old).
  void ExpireWatches();
  // Forgets all events: older resourceVersions and continue tokens get 410.
  void CompactHistory();
  // Answers the next `count` requests (any path but the health checks) with
  // `http_code` and a Status body; with `retry_after_seconds` > 0 also a
  // Retry-After header and details.retryAfterSeconds (as for 429).
  void FailNextRequests(int count, int http_code, int retry_after_seconds = 0);
  // Delays every response by `latency`.
  void SetLatency(absl::Duration latency);
  // `split_events`: each watch event spans two chunks. `coalesce_events`:
  // events ready together go into one chunk.
  void SetChunking(bool split_events, bool coalesce_events);
  // While `hang` is true, requests get no answer and open watches deliver
  // nothing (not even their timeout close); false releases them.
  void SetHang(bool hang);
  // Makes webhook calls to Service `ns`/`name` port `port` (clientConfig.service)
  // connect to `address` ("127.0.0.1:PORT"), still verifying the certificate for
  // the Service's name "NAME.NAMESPACE.svc" against the caBundle.
  void SetServiceAddress(const std::string& ns, const std::string& name, int port,
                         const std::string& address);
  // Closes every connection and listens again on the same port; state kept.
  absl::Status Restart();
  // Stops listening and closes every connection (clients get connection
  // refused) until ResumeListening().
  void StopListening();
  absl::Status ResumeListening();

  // Direct access for tests (no HTTP, no auth).
  // Returns the stored object at `api_path` (e.g.
  // "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources/a"), or for a
  // collection path the list, as JSON; nullopt when missing or unknown.
  std::optional<std::string> GetObject(const std::string& api_path) const;
  // Creates namespace `name` if it does not exist.
  absl::Status CreateNamespace(const std::string& name);
  // The current resourceVersion.
  int64_t resource_version() const;
  // Watches opened so far (to assert "no relist storm").
  int64_t watch_count() const;
  // Lists served so far (not counting watches).
  int64_t list_count() const;
  // Watches open right now.
  int64_t open_watch_count() const;
  // Blocks until at least `count` watches are open or `timeout` passes;
  // returns whether they are. For hermetic tests that must not sleep.
  bool WaitForOpenWatches(int64_t count, absl::Duration timeout) const;
  // Blocks until watch_count() >= `count` or `timeout` passes.
  bool WaitForWatchCount(int64_t count, absl::Duration timeout) const;
  // Returns every status subresource write received so far, oldest first,
  // whatever its answer (to bound what a controller writes).
  std::vector<StatusWrite> status_writes() const;

 private:
  KubeTestServer() = default;

  std::string ca_pem_;
  std::unique_ptr<KubeApi> api_;
  std::unique_ptr<HttpServer> http_;
};

// Returns a kubeconfig (YAML) for `server`: one cluster at its url() (with
// certificate-authority-data under TLS), a user with its token, and a current
// context using namespace `ns`.
std::string KubeconfigFor(const KubeTestServer& server, const std::string& ns = "default");

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_KUBE_TEST_SERVER_H_
