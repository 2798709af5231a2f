// The end-to-end harness: one temporary directory holding manifest
// directories, `facet serve` instances watching them, `facet relay` instances
// in front of them, real gRPC backends (e2e_backend), xDS bootstrap files, and
// runs of the two real xDS clients (gRPC C++ and grpc-js). Every child is
// killed when the harness is destroyed.
#ifndef FACET_TEST_E2E_E2E_HARNESS_H_
#define FACET_TEST_E2E_E2E_HARNESS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "test/e2e/process.h"

namespace facet::e2e {

// A client's xDS bootstrap (gRFC A27, with A47's authorities).
struct BootstrapOptions {
  // The xDS server (host:port); empty: the Facet of StartFacet.
  std::string server_address = "";
  std::string node_id = "e2e-client";
  // node.metadata; Facet reads every string field as a dynamic parameter.
  std::map<std::string, std::string> metadata;
  // Authorities, each written as {} (use the top-level xDS server and the
  // default listener name template).
  std::vector<std::string> authorities;
};

// A `facet relay` configuration file (docs/relay.md); every server is
// plaintext.
struct RelayConfigOptions {
  // The top-level xds_servers (host:port), in failover order. Not empty.
  std::vector<std::string> servers = {};
  // Authority -> its xds_servers; an empty list writes the authority as {}
  // (it uses the top-level list).
  std::map<std::string, std::vector<std::string>> authorities = {};
  std::string node_id = "e2e-relay";
  std::map<std::string, std::string> metadata = {};  // node.metadata, string values
};

// How StartNamedFacet and StartRelay run their server.
struct ServerOptions {
  // --xds-address; port 0 takes a free port (see FreeLoopbackPort for an
  // address known before the server starts).
  std::string xds_address = "127.0.0.1:0";
  std::vector<std::string> extra_args = {};
};

enum class ClientKind { kCpp, kNode };

// One run of e2e_cpp_client or test/e2e/node/client.js.
struct ClientOptions {
  ClientKind kind = ClientKind::kCpp;
  // e2e_cpp_client also takes several, separated by ',': one process (one
  // xDS client) calling each target in turn.
  std::string target = "xds:///greeter";
  // A file written by E2eHarness::WriteBootstrap; passed as GRPC_XDS_BOOTSTRAP.
  std::string bootstrap_path;
  // Sets GRPC_EXPERIMENTAL_XDS_FEDERATION=true (gRPC C++ 1.51 ignores
  // "authorities" without it); otherwise the variable is removed.
  bool federation = false;
  // Calls to make (count mode) ...
  int count = 1;
  // ... or, if positive, how long to call continuously, one call per interval.
  absl::Duration duration = absl::ZeroDuration();
  absl::Duration interval = absl::Milliseconds(20);
  absl::Duration rpc_timeout = absl::Seconds(20);
  // Full method names each round calls in turn; empty: the client's default,
  // /facet.test.Echo/Whoami (every e2e backend answers every method).
  std::vector<std::string> methods = {};
  // Request metadata sets (keys lower-case): each round calls every method
  // once per set, with that set's pairs; empty: once, without metadata.
  std::vector<std::map<std::string, std::string>> metadata = {};
  // Count mode: print every call as "ok <id>" or "fail <CODE>: <message>"
  // (round by round, target by target, metadata set by set, method by
  // method) and exit 0 once all calls are made, whatever they returned.
  bool outcomes = false;
};

// The outcome of a finished client.
struct ClientRun {
  std::string description;
  ExitStatus exit;
  std::vector<std::string> lines;  // stdout, one entry per line
  std::string stderr_text;

  // Returns the run for failure messages: command, exit, stdout, stderr tail.
  std::string ToString() const;
};

// Splits stdout text into lines (no trailing empty line).
std::vector<std::string> SplitLines(absl::string_view text);

// Returns the value of the sample `metric` (the whole sample name, labels
// included, e.g. `facet_xds_streams_by_authority{authority="a.example"}`) in
// Prometheus text `text`. NotFound if there is no such sample.
absl::StatusOr<double> MetricValue(absl::string_view text, absl::string_view metric);

// Returns a loopback TCP port that was free a moment ago (bound with port 0,
// then closed), for a server that must be addressed before it starts.
absl::StatusOr<int> FreeLoopbackPort();

// Owns one test's processes and files. Not thread-safe: use from the test's
// thread.
class E2eHarness {
 public:
  // Creates a fresh temporary directory (under $TMPDIR) with an empty
  // manifest directory in it.
  static absl::StatusOr<std::unique_ptr<E2eHarness>> Create();

  // Returns "" when the Node client can run, else why not (for GTEST_SKIP):
  // no `node` on PATH, or test/e2e/node/node_modules missing.
  static std::string NodeClientUnavailableReason();

  E2eHarness(const E2eHarness&) = delete;
  E2eHarness& operator=(const E2eHarness&) = delete;
  // Kills every child still running; removes the temporary directory unless
  // KeepTempDir() was called or FACET_E2E_KEEP_TMPDIR is set.
  ~E2eHarness();

  const std::string& dir() const { return dir_; }
  const std::string& manifest_dir() const { return manifest_dir_; }
  // Keeps the temporary directory (logs, manifests, bootstraps) after the
  // test, e.g. when it failed.
  void KeepTempDir() { keep_dir_ = true; }

  // Starts e2e_backend with `id` on a free port and waits until it listens.
  // Returns the port.
  absl::StatusOr<int> StartBackend(absl::string_view id);
  // Starts one backend per id.
  absl::Status StartBackends(const std::vector<std::string>& ids);
  // Returns the backend ports by id.
  const std::map<std::string, int>& backend_ports() const { return ports_; }

  // Returns test/e2e/testdata/`template_name` with every ${port:<id>}
  // replaced by the port of backend <id>. NotFound for a missing template,
  // FailedPrecondition for an id with no started backend.
  absl::StatusOr<std::string> RenderManifest(absl::string_view template_name) const;
  // Creates (if needed) another manifest directory, dir()/manifests-<name>,
  // and returns its path.
  absl::StatusOr<std::string> AddManifestDir(absl::string_view name);
  // Renders `template_name` into `dir` (default: manifest_dir()) as
  // `file_name`, atomically (write, then rename), so a running Facet never
  // reads half a file.
  absl::Status WriteManifest(absl::string_view template_name, absl::string_view file_name,
                             absl::string_view dir = {});
  // Deletes `file_name` from the manifest directory.
  absl::Status RemoveManifest(absl::string_view file_name);
  // Runs `facet validate` on `dir` (default: manifest_dir()). Returns its
  // output; FailedPrecondition (with the output) if it does not exit 0.
  absl::StatusOr<std::string> ValidateManifests(absl::string_view dir = {});

  // Starts `facet serve` on the manifest directory with the xDS and admin
  // servers on free loopback ports, and waits for its ready file. It is the
  // server named kFacet.
  absl::Status StartFacet(const std::vector<std::string>& extra_args = {});
  // From the ready file; empty before StartFacet.
  const std::string& xds_address() const { return XdsAddressOf(kFacet); }
  const std::string& admin_address() const { return AdminAddressOf(kFacet); }
  // Sends SIGTERM to Facet and expects it to exit 0 within `timeout`.
  absl::Status StopFacet(absl::Duration timeout = absl::Seconds(10));
  // Returns Facet's stderr so far ("" before StartFacet).
  std::string FacetLog() const { return LogOf(kFacet); }

  // Named servers: `facet serve` and `facet relay` instances, each with its
  // own ready file and logs (logs/<name>.*). A name may be started again
  // once its server has exited (Stop, Kill).
  static constexpr char kFacet[] = "facet";
  // Starts `facet serve` named `name` on `manifest_dir` (admin on a free
  // port) and waits for its ready file. AlreadyExists while `name` runs.
  absl::Status StartNamedFacet(absl::string_view name, absl::string_view manifest_dir,
                               const ServerOptions& options = {});
  // Writes `config` to dir()/<name>.json and starts `facet relay` named
  // `name` with it (admin on a free port, --log-level debug), waiting for
  // its ready file. AlreadyExists while `name` runs.
  absl::Status StartRelay(absl::string_view name, const RelayConfigOptions& config,
                          const ServerOptions& options = {});
  // From the server's ready file; "" for a name never started.
  const std::string& XdsAddressOf(absl::string_view name) const;
  const std::string& AdminAddressOf(absl::string_view name) const;
  // Sends SIGTERM and expects an exit with code 0 within `timeout`.
  absl::Status Stop(absl::string_view name, absl::Duration timeout = absl::Seconds(10));
  // Sends SIGKILL (no clean shutdown: its streams just break) and reaps it.
  absl::Status Kill(absl::string_view name);
  // Returns the server's stderr so far ("" for a name never started).
  std::string LogOf(absl::string_view name) const;
  // Returns the tail of every server's stderr, for failure messages.
  std::string ServerLogs() const;
  // GETs `path` from the server's admin address. Returns the body;
  // Unavailable if it cannot be reached or answers other than 200.
  absl::StatusOr<std::string> AdminGet(absl::string_view name, absl::string_view path) const;
  // Returns one sample of the server's /metrics (see MetricValue).
  absl::StatusOr<double> Metric(absl::string_view name, absl::string_view metric) const;

  // Writes a bootstrap pointing at options.server_address (default: Facet,
  // which must have been started). Returns its path.
  absl::StatusOr<std::string> WriteBootstrap(const BootstrapOptions& options);

  // Starts a client and returns it running (for continuous runs that the
  // test watches through Process::WaitForStdout).
  absl::StatusOr<std::unique_ptr<Process>> StartClient(const ClientOptions& options);
  // Runs clients at the same time and waits up to `timeout` for all of them.
  // DeadlineExceeded (naming the client and its output) if one is still
  // running then.
  absl::StatusOr<std::vector<ClientRun>> RunClients(const std::vector<ClientOptions>& options,
                                                    absl::Duration timeout = absl::Seconds(60));
  // Runs one client; see RunClients.
  absl::StatusOr<ClientRun> RunClient(const ClientOptions& options,
                                      absl::Duration timeout = absl::Seconds(60));
  // Waits for a client started with StartClient to finish.
  static absl::StatusOr<ClientRun> FinishClient(Process& client, absl::Duration timeout);

 private:
  explicit E2eHarness(std::string dir);
  struct Server {
    std::unique_ptr<Process> process;
    int starts = 0;
    std::string xds_address;
    std::string admin_address;
  };

  // Returns the ProcessOptions for a child named `name`, logging to
  // dir/logs/<name>.{stdout,stderr}.
  ProcessOptions ChildOptions(absl::string_view name, std::vector<std::string> argv) const;
  // Returns server `name`, or a server never started (no process, no
  // addresses).
  const Server& ServerOf(absl::string_view name) const;
  // Starts `facet <argv_tail...>` as server `name` with --xds-address,
  // --admin-address and --ready-file added, and reads its ready file.
  absl::Status StartServer(absl::string_view name, std::vector<std::string> argv_tail,
                           const ServerOptions& options);

  const std::string dir_;
  const std::string manifest_dir_;
  bool keep_dir_ = false;
  int next_client_ = 0;
  int next_bootstrap_ = 0;
  std::map<std::string, int> ports_;
  std::vector<std::unique_ptr<Process>> backends_;
  std::map<std::string, Server, std::less<>> servers_;
};

}  // namespace facet::e2e

#endif  // FACET_TEST_E2E_E2E_HARNESS_H_
