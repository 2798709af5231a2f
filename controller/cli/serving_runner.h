// The one start-up path of `facet serve`, `facet relay` and `facet
// controller`: flags, the admin server and its probes, the xDS port, the
// ready file, the wait for a shutdown signal, and the shutdown. A command
// builds its own parts and hands them to a ServingRunner.
#ifndef FACET_CONTROLLER_CLI_SERVING_RUNNER_H_
#define FACET_CONTROLLER_CLI_SERVING_RUNNER_H_

#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/cli/flags.h"
#include "controller/cli/serving_common.h"
#include "controller/cli/stop_stack.h"
#include "controller/server/admin/admin_server.h"
#include "controller/server/console/event_log.h"
#include "controller/server/metrics/metrics.h"
#include "controller/server/tls/tls_files.h"
#include "controller/sources/publisher/publisher.h"
#include "grpcpp/grpcpp.h"
#include "xds_server/ads/ads_service.h"
#include "xds_server/explain/explain.h"
#include "xds_server/snapshot_store/snapshot_store.h"

namespace facet::controller {

// Returns {SIGTERM, SIGINT}, the signals a serving command waits for.
sigset_t ShutdownSignals();

// Blocks ShutdownSignals() in the calling thread, and so in every thread it
// starts later: call before any library starts a thread, then sigwait.
void BlockShutdownSignals();

// Returns the admin routes every serving command has: /clients (what each
// connected client holds: xds::ReportToJson; ?node=ID for one node id,
// ?after=STREAM_ID for the clients after a page) and /explain
// (xds::ExplainToJson of ?target=NAME&param=K=V...&authority=A against the
// snapshot `ads` serves, with what `explain_context` adds to each request
// when set; 400 for a bad query).
std::map<std::string, AdminServer::Handler> InsightRoutes(
    const xds::AdsService& ads,
    std::function<void(xds::ExplainRequest*)> explain_context = nullptr);

// Writes {"xds_address": ..., "admin_address": ...} (and "webhook_address"
// when set) to `path` atomically (temporary file, then rename). Returns false
// when it cannot.
bool WriteReadyFile(const std::string& path, const std::string& xds_address,
                    const std::string& admin_address, const std::string& webhook_address = "");

// Registers the histogram facet_snapshot_build_seconds in `metrics` and
// returns what a source calls after each publication
// (Publisher::Options::on_published) to observe its time since the change.
std::function<void(const PublishTiming&)> ObserveSnapshotBuilds(Metrics& metrics);

// Where a command's ports are, once they are open.
struct ServingAddresses {
  std::string xds;  // As XdsListener::address.
  // ", admin on SCHEME://HOST:PORT", or "" without an admin port.
  std::string admin_suffix;
};

// What a command built, for ServingRunner::Run. Its parts are owned by the
// runner's stack (ServingRunner::Own, Push); this says how to serve them.
struct ServingParts {
  // Admin routes beside the runner's /healthz, /readyz, /metrics (the
  // runner's Metrics), /clients and /explain (e.g. /status).
  std::map<std::string, AdminServer::Handler> routes;
  // Whether the command's first state is known; null: at once. Until it
  // is, the xDS port stays closed (a client would be told its resources do
  // not exist) and /readyz answers 503 saying it waits for `waiting_for`.
  std::function<bool()> ready;
  std::string waiting_for;
  // Called once the xDS port is open: tells the user what is served.
  std::function<void(const ServingAddresses&)> announce;
  // Adds what the command's source knows to each /explain request (objects
  // serving their previous revision). Optional; called on the admin
  // server's thread.
  std::function<void(xds::ExplainRequest*)> explain_context;
  // Written to the ready file as "webhook_address" when not empty.
  std::string webhook_address;
  // Runs first at shutdown, before the xDS port drains (the controller
  // releases its Lease so another replica leads at once). Optional.
  std::function<void()> stop_first;
};

// Runs one serving command: parses its flags with the shared ones, then
// (Run) starts what it builds, the admin port and the xDS port, waits for
// SIGTERM or SIGINT and stops everything, the last started first. Whatever
// was started is stopped on every way out, errors included. Used from the
// command's thread only.
class ServingRunner {
 public:
  // `command` names it in messages ("serve": "facet serve: ..."); usage and
  // errors go to `err`, --help to `out`.
  ServingRunner(std::string command, std::ostream& out, std::ostream& err);
  ~ServingRunner();

  // Defines the command's own flags here before ParseFlags.
  Flags& flags() { return flags_; }

  // Defines the shared flags (DefineServingFlags with `defaults`) and --help,
  // and parses `args`. Returns an exit code when the command ends here: 0
  // after printing the usage for --help, 2 after a parse error (with the
  // usage, which begins with `usage_line`); else nullopt.
  std::optional<int> ParseFlags(const std::vector<std::string>& args,
                                const ServingFlagDefaults& defaults,
                                const std::string& usage_line);

  // Reads the shared flags: --log-level (applied), --node-metadata-params,
  // the xDS server flags and --admin-tls-*. Returns an exit code after
  // printing the error (2 for a usage error, 1 for an unusable file), else
  // nullopt.
  std::optional<int> ReadServingFlags();

  // Prints "facet COMMAND: `message`" and the usage; returns 2.
  int UsageError(absl::string_view message);
  // Prints "facet COMMAND: `message`"; returns `exit_code`.
  int Fail(int exit_code, absl::string_view message);

  // Starts the command's parts with `build`, then the admin port, waits for
  // ServingParts::ready, opens the xDS port, writes --ready-file and serves
  // until SIGTERM or SIGINT; then stops everything, the last started first.
  // On an error it prints the error, then stops what was started. Returns,
  // with every part stopped and destroyed, the exit code: 0 after a signal,
  // ExitCodeFor(the error) when `build` fails, 1 when a port cannot be opened
  // (the message names the flag). Call once, after ReadServingFlags.
  int Run(const std::function<absl::StatusOr<ServingParts>(ServingRunner&)>& build);

  // For `build`: the process's metrics, served on /metrics; they outlive
  // every other part.
  Metrics& metrics() { return *metrics_; }
  // For `build`: the snapshot store every source publishes into (created on
  // first use; destroyed after every part started later).
  xds::SnapshotStore& store();
  // For `build`: creates the ADS service on store() with the flags' options
  // and `demand_observer` (not owned; pushed earlier, so it outlives the
  // service), reporting to metrics() (PrometheusAdsObserver). Call once.
  xds::AdsService& StartAds(xds::DemandObserver* demand_observer = nullptr);
  // For `build`, after StartAds: what a source calls with each change in
  // what it reports (Publisher::Options::on_report), recorded in the /events
  // log (which outlives every source created after StartAds).
  std::function<void(const ReportEvent&)> RecordReports();
  // For `build`: the stack of started parts (see StopStack).
  template <typename T>
  T& Own(std::unique_ptr<T> part) {
    return parts_.Own(std::move(part));
  }
  void Push(std::function<void()> stop) { parts_.Push(std::move(stop)); }

  // The options ReadServingFlags read.
  const XdsServerOptions& xds_options() const { return xds_options_; }
  // The service StartAds created, or null.
  xds::AdsService* ads() const { return ads_; }

 private:
  // Run's steps, leaving the stopping to Run.
  int StartAndServe(const std::function<absl::StatusOr<ServingParts>(ServingRunner&)>& build);
  // Starts the admin server (when --admin-address is set) with the runner's
  // routes and `parts`' routes.
  absl::Status StartAdmin(const ServingParts& parts);
  // Waits until parts.ready() or a shutdown signal; returns false on the
  // signal.
  bool AwaitReady(const ServingParts& parts);
  // Opens the xDS port for the ADS service and pushes its drain.
  absl::Status OpenXds();

  const std::string command_;
  std::ostream& out_;
  std::ostream& err_;
  Flags flags_;
  std::string usage_;
  std::shared_ptr<const xds::ParameterMapping> mapping_ =
      std::make_shared<const xds::ParameterMapping>();
  XdsServerOptions xds_options_;
  TlsFiles admin_tls_;
  const sigset_t signals_;

  StopStack parts_;
  Metrics* metrics_ = nullptr;  // The first part.
  xds::SnapshotStore* store_ = nullptr;
  xds::AdsService* ads_ = nullptr;
  EventLog* events_ = nullptr;  // What the ADS server did, for /events.
  AdminServer* admin_ = nullptr;
  std::string xds_address_;
  // Read by /readyz on the admin server's thread.
  std::atomic<bool> xds_open_{false};
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_SERVING_RUNNER_H_
