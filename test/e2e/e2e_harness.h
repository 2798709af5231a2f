// The end-to-end harness: one temporary directory holding a manifest
// directory, `facet serve` watching it, real gRPC backends (e2e_backend), xDS
// bootstrap files, and runs of the two real xDS clients (gRPC C++ and
// grpc-js) against it. Every child is killed when the harness is destroyed.
#ifndef FACET_TEST_E2E_E2E_HARNESS_H_
#define FACET_TEST_E2E_E2E_HARNESS_H_

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
  std::string node_id = "e2e-client";
  // node.metadata; Facet reads every string field as a dynamic parameter.
  std::map<std::string, std::string> metadata;
  // Authorities, each written as {} (use the top-level xDS server and the
  // default listener name template).
  std::vector<std::string> authorities;
};

enum class ClientKind { kCpp, kNode };

// One run of e2e_cpp_client or test/e2e/node/client.js.
struct ClientOptions {
  ClientKind kind = ClientKind::kCpp;
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
  // Renders `template_name` into the manifest directory as `file_name`,
  // atomically (write, then rename), so a running Facet never reads half a file.
  absl::Status WriteManifest(absl::string_view template_name, absl::string_view file_name);
  // Deletes `file_name` from the manifest directory.
  absl::Status RemoveManifest(absl::string_view file_name);
  // Runs `facet validate` on the manifest directory. Returns its output;
  // FailedPrecondition (with the output) if it does not exit 0.
  absl::StatusOr<std::string> ValidateManifests();

  // Starts `facet serve` on the manifest directory with the xDS and admin
  // servers on free loopback ports, and waits for its ready file.
  absl::Status StartFacet(const std::vector<std::string>& extra_args = {});
  // From the ready file; empty before StartFacet.
  const std::string& xds_address() const { return xds_address_; }
  const std::string& admin_address() const { return admin_address_; }
  // Sends SIGTERM to Facet and expects it to exit 0 within `timeout`.
  absl::Status StopFacet(absl::Duration timeout = absl::Seconds(10));
  // Returns Facet's stderr so far ("" before StartFacet).
  std::string FacetLog() const;

  // Writes a bootstrap pointing at Facet (start it first). Returns its path.
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
  // Returns the ProcessOptions for a child named `name`, logging to
  // dir/logs/<name>.{stdout,stderr}.
  ProcessOptions ChildOptions(absl::string_view name, std::vector<std::string> argv) const;

  const std::string dir_;
  const std::string manifest_dir_;
  bool keep_dir_ = false;
  int next_client_ = 0;
  int next_bootstrap_ = 0;
  std::map<std::string, int> ports_;
  std::vector<std::unique_ptr<Process>> backends_;
  std::unique_ptr<Process> facet_;
  std::string xds_address_;
  std::string admin_address_;
};

}  // namespace facet::e2e

#endif  // FACET_TEST_E2E_E2E_HARNESS_H_
