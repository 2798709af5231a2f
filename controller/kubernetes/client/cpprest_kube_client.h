// KubeClient over HTTP(S) with cpprestsdk. cpprestsdk stays out of this
// header (it pulls in boost); the implementation lives in the .cc.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_CPPREST_KUBE_CLIENT_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_CPPREST_KUBE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/clock.h"
#include "controller/kubernetes/client/kube_client.h"
#include "controller/kubernetes/client/kube_config.h"

namespace facet::controller::kube {

// Talks to one API server as one user (ClusterConfig). Sends the bearer
// token from a TokenSource and, on 401, invalidates it and retries the
// request once. TLS trusts ca_pem only (the system store when empty) and
// verifies the server name, or tls_server_name when set (sent as the Host
// header, which cpprestsdk uses for SNI and verification). Responses are
// never compressed. Watches stream the body and parse it as NDJSON; each
// watch has its own connection whose idle timeout is timeoutSeconds plus a
// margin, so quiet watches are not cut. Exceptions from cpprestsdk are caught
// here and become statuses (kube_errors.h).
//
// Thread-safe. The blocking calls (List, Get, Create, Update) must not be
// made from cpprestsdk's own threads (e.g. inside a watch callback).
class CpprestKubeClient final : public KubeClient {
 public:
  struct Options {
    // Idle timeout of non-watch requests.
    absl::Duration request_timeout = absl::Seconds(30);
    // Added to a watch's timeoutSeconds to form its idle timeout.
    absl::Duration watch_idle_margin = absl::Seconds(30);
    std::string user_agent = "facet-controller";
    // Read by the token source; must outlive the client. Null: RealClock.
    Clock* clock = nullptr;
  };

  // Fails with InvalidArgument when the server URL is not http(s) or the
  // CA, client certificate or key is not valid PEM.
  static absl::StatusOr<std::unique_ptr<CpprestKubeClient>> Create(const ClusterConfig& config,
                                                                   Options options);
  static absl::StatusOr<std::unique_ptr<CpprestKubeClient>> Create(const ClusterConfig& config) {
    return Create(config, Options());
  }

  // Watches still open are cancelled by their handles, not by this. Waits
  // (up to 10 s in all) for the read chains of cancelled watches to end
  // (each holds its stream until cpprestsdk completes its last read), closes
  // the client's connections, then waits for every continuation scheduled to
  // have run and none to be scheduled for 50 ms (cpprestsdk finishes a
  // response, or one whose connection closed, in continuations of its own):
  // a process exiting earlier leaves them behind. Must not run on
  // cpprestsdk's own threads.
  ~CpprestKubeClient() override;

  // Continuations scheduled on pplx and not yet run, in the whole process
  // (Facet's and cpprestsdk's own). Counted from the first Create on, through
  // pplx's ambient scheduler; tracking_continuations() is false when pplx had
  // been used before that (its scheduler can be set only before first use).
  static bool tracking_continuations();
  static int continuations_in_flight();
  // Waits until continuations_in_flight() is 0 and none was scheduled for
  // 50 ms; false when `timeout` passed first.
  static bool AwaitContinuationsRun(absl::Duration timeout);

  // Watch streams whose read chain has not ended yet (cancelled ones
  // included).
  int watch_streams() const;
  // Waits until watch_streams() is 0; false when `timeout` passed first.
  bool AwaitWatchStreamsEnded(absl::Duration timeout) const;

  absl::StatusOr<ListResult> List(const std::string& collection_path,
                                  const ListOptions& options) override;
  absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(
      const std::string& collection_path, const WatchOptions& options,
      std::function<void(WatchEvent)> on_event, std::function<void(absl::Status)> on_end) override;
  absl::StatusOr<YAML::Node> Get(const std::string& path) override;
  absl::StatusOr<YAML::Node> Create(const std::string& collection_path,
                                    const std::string& json) override;
  absl::StatusOr<YAML::Node> Update(const std::string& path, const std::string& json) override;
  absl::Status Delete(const std::string& path) override;

  // Shared with in-flight watches, which may outlive the client.
  struct State;

 private:
  explicit CpprestKubeClient(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
};

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_CPPREST_KUBE_CLIENT_H_
