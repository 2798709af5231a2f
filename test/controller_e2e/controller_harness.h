// The end-to-end harness for `facet controller`: the in-process test
// Kubernetes API server (TLS and a bearer token, as kubectl needs), a
// kubeconfig for it, `facet controller` replicas started against it, objects
// applied with the real kubectl (or over HTTP where kubectl is absent), the
// controllers' admin endpoints, and the objects' status. Backends, manifest
// templates and the real xDS clients come from test/e2e's E2eHarness.
#ifndef FACET_TEST_CONTROLLER_E2E_CONTROLLER_HARNESS_H_
#define FACET_TEST_CONTROLLER_E2E_CONTROLLER_HARNESS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "test/e2e/e2e_harness.h"
#include "test/e2e/process.h"
#include "test/kube_api_server/json.h"
#include "test/kube_api_server/kube_test_server.h"

namespace facet::e2e {

using ::facet::testing::Dump;
using ::facet::testing::Find;
using ::facet::testing::FindPath;
using ::facet::testing::GetString;
using ::facet::testing::Json;
using ::facet::testing::KubeTestServer;
using ::facet::testing::ParseJson;
using ::facet::testing::ParseYaml;

// The namespace every test's objects live in.
inline constexpr char kDemoNamespace[] = "demo";
// The XdsResource collection of kDemoNamespace.
inline constexpr char kDemoResources[] = "/apis/facet.dev/v1alpha1/namespaces/demo/xdsresources";

// Returns the API path of XdsResource `name` in kDemoNamespace.
std::string ResourcePath(absl::string_view name);
// Returns the API path of the cluster-scoped XdsAuthority `name`.
std::string AuthorityPath(absl::string_view name);

// Calls `done` every `interval` until it returns true; DeadlineExceeded
// (naming `what`) after `timeout`. For conditions that nothing signals
// (another process's HTTP endpoints, objects on the API server).
absl::Status PollUntil(absl::FunctionRef<bool()> done, absl::Duration timeout,
                       absl::string_view what, absl::Duration interval = absl::Milliseconds(50));

// One `facet controller` process and the addresses from its ready file.
struct Controller {
  std::string name;  // Its log files are logs/<name>.{stdout,stderr}.
  std::string ready_file;
  std::unique_ptr<Process> process;
  std::string xds_address;
  std::string admin_address;
  std::string webhook_address;  // With --webhook-address.
};

// Owns one test's API server, controllers and (through E2eHarness) backends
// and clients. Not thread-safe: use from the test's thread.
class ControllerHarness {
 public:
  // Starts the API server (TLS, token) with namespace kDemoNamespace, writes
  // a kubeconfig for it and creates the E2eHarness directory. The server
  // leaves out `omitted_resources` (KubeTestServer::Options), as a cluster
  // without their CRDs.
  static absl::StatusOr<std::unique_ptr<ControllerHarness>> Create(
      const std::vector<std::string>& omitted_resources = {});

  // Returns "" when kubectl is on PATH, else why not (for GTEST_SKIP and logs).
  static std::string KubectlUnavailableReason();

  ControllerHarness(const ControllerHarness&) = delete;
  ControllerHarness& operator=(const ControllerHarness&) = delete;
  // Kills every controller still running, then the rest (E2eHarness).
  ~ControllerHarness();

  E2eHarness& e2e() { return *e2e_; }
  KubeTestServer& server() { return *server_; }
  const std::string& kubeconfig_path() const { return kubeconfig_path_; }

  // --- Manifests ---------------------------------------------------------------
  // Returns test/e2e/testdata/`template_name` rendered by E2eHarness (backend
  // ports filled in) with its objects moved from namespace e2e to demo.
  absl::StatusOr<std::string> RenderE2eTemplate(absl::string_view template_name) const;
  // Returns test/controller_e2e/testdata/`file_name`.
  static absl::StatusOr<std::string> ReadTestdata(absl::string_view file_name);
  // Returns examples/`file_name` from the repository.
  static absl::StatusOr<std::string> ReadExample(absl::string_view file_name);

  // Applies the YAML documents in `manifest`: `kubectl apply -f` when kubectl
  // is available (and `use_kubectl`), else one server-side-apply PATCH per
  // object over HTTP (which creates missing objects, as kubectl apply does).
  absl::Status Apply(absl::string_view manifest, bool use_kubectl = true);
  // Deletes the object at `api_path` over HTTP. NotFound if it is missing.
  absl::Status Delete(absl::string_view api_path);
  // Runs kubectl with the harness's kubeconfig and `args`; returns its stdout.
  // FailedPrecondition (with its output) unless it exits 0.
  absl::StatusOr<std::string> Kubectl(const std::vector<std::string>& args);
  // Sends one request to the API server and returns the body of a 2xx answer;
  // other answers become errors carrying the code and body.
  absl::StatusOr<std::string> KubeRequest(const std::string& method, const std::string& target,
                                          const std::string& content_type = "",
                                          const std::string& body = "");

  // --- Objects on the server (direct access, no HTTP) ---------------------------
  // Returns the stored object at `api_path`; NotFound when missing.
  absl::StatusOr<Json> GetObject(const std::string& api_path) const;
  // Polls the object at `api_path` until `done(object)`; on timeout the error
  // names `what` and holds the object's last state.
  absl::StatusOr<Json> WaitForObject(const std::string& api_path,
                                     absl::FunctionRef<bool(const Json&)> done,
                                     absl::string_view what,
                                     absl::Duration timeout = absl::Seconds(20)) const;

  // --- Controllers ---------------------------------------------------------------
  // Starts `facet controller --kubeconfig ... --xds-address 127.0.0.1:0
  // --admin-address 127.0.0.1:0 --ready-file ...` plus `extra_args` and,
  // with `wait_for_ready_file`, waits for its ready file (written once the
  // first sync is done and the xDS port is open). Returns it (owned by the
  // harness); the addresses stay empty until the ready file is read.
  absl::StatusOr<Controller*> StartController(absl::string_view name,
                                              const std::vector<std::string>& extra_args,
                                              bool wait_for_ready_file = true);
  // Waits for `controller`'s ready file and reads its addresses.
  absl::Status WaitForReadyFile(Controller& controller);
  // Waits until `controller`'s /readyz answers 200.
  absl::Status WaitReady(const Controller& controller, absl::Duration timeout = absl::Seconds(20));
  // Sends SIGTERM and expects exit status 0 within `timeout`.
  static absl::Status StopController(Controller& controller,
                                     absl::Duration timeout = absl::Seconds(10));
  // Stops (as StopController) every controller still running; returns the
  // first failure.
  absl::Status StopControllers();
  // GETs `path` from the admin server at `admin_address` (host:port);
  // returns code and body.
  static absl::StatusOr<std::pair<int, std::string>> AdminGet(const std::string& admin_address,
                                                              const std::string& path);
  // Returns /metrics as name -> value (samples without labels only).
  static absl::StatusOr<std::map<std::string, double>> Metrics(const Controller& controller);
  // Returns one metric; NotFound if /metrics has no such sample.
  static absl::StatusOr<double> Metric(const Controller& controller, const std::string& name);
  // Returns every controller's stderr, for failure messages.
  std::string ControllerLogs() const;

  // Writes an xDS bootstrap for the real clients pointing at `controller`
  // (what E2eHarness::WriteBootstrap writes for `facet serve`). Returns its path.
  absl::StatusOr<std::string> WriteBootstrap(const Controller& controller,
                                             const std::string& node_id,
                                             const std::map<std::string, std::string>& metadata);

 private:
  ControllerHarness(std::unique_ptr<E2eHarness> e2e, std::unique_ptr<KubeTestServer> server,
                    std::string kubeconfig_path);
  absl::Status ApplyOverHttp(absl::string_view manifest);

  std::unique_ptr<E2eHarness> e2e_;
  std::unique_ptr<KubeTestServer> server_;
  const std::string kubeconfig_path_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  int next_file_ = 0;
};

// Returns the TCP ports process `pid` listens on, from /proc (Linux).
absl::StatusOr<std::vector<int>> ListeningPorts(int pid);

// Returns the condition `type` of `object`'s status.conditions, or nullptr.
const Json* FindCondition(const Json& object, absl::string_view type);
// Returns whether `object` has condition `type` with `status` (and `reason`,
// if not empty), observed at the object's current generation, and
// status.observedGeneration equal to that generation.
bool HasCondition(const Json& object, absl::string_view type, absl::string_view status,
                  absl::string_view reason = "");
// Returns metadata.generation (0 when missing).
int64_t Generation(const Json& object);
// Returns status.observedGeneration (0 when missing).
int64_t ObservedGeneration(const Json& object);

}  // namespace facet::e2e

#endif  // FACET_TEST_CONTROLLER_E2E_CONTROLLER_HARNESS_H_
