// The `facet` command: validate, serve, controller, relay, version.
#include <iostream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "controller/cli/controller_command.h"
#include "controller/cli/explain_command.h"
#include "controller/server/http/http_server.h"
#include "controller/cli/relay_command.h"
#include "controller/cli/serve_command.h"
#include "controller/cli/serving_runner.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "controller/cli/validate_command.h"

namespace {

constexpr char kUsage[] =
    "usage: facet COMMAND [ARGS]\n"
    "commands:\n"
    "  validate PATH...   check manifests offline (see facet validate --help)\n"
    "  explain --target NAME [--param K=V]... (PATH... | --server ADMIN_URL)\n"
    "                     what a client with these parameters sees (see facet explain --help)\n"
    "  serve --manifests DIR\n"
    "                     serve a directory of manifests over xDS (see facet serve --help)\n"
    "  controller         serve XdsResources from the Kubernetes API (see facet controller --help)\n"
    "  relay --config FILE\n"
    "                     cache and serve upstream xDS servers' resources (see facet relay --help)\n"
    "  version            print the version\n";

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil checks every Mutex acquisition for lock-order cycles,
  // which costs a graph update per lock on every stream. Lock order is
  // checked at build time instead (-Wthread-safety, clang).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Logs go to stderr; stdout carries command output (problems, bootstrap).
  spdlog::set_default_logger(spdlog::stderr_color_mt("facet"));
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "serve" || command == "controller" || command == "relay") {
    // These commands wait for SIGTERM/SIGINT with sigwait on the main thread.
    // Block the signals now, before any library starts a thread, so every
    // thread inherits the mask and no signal can land elsewhere and kill the
    // process before the lease is released and streams are drained.
    facet::controller::BlockShutdownSignals();
    // The ports' own connection bounds (xDS, admin, webhook) are what a
    // flood of clients should meet, not the default soft limit of 1024 files.
    facet::controller::RaiseOpenFileLimit();
  }
  if (command == "validate") {
    return facet::controller::RunValidate(args, std::cout, std::cerr);
  }
  if (command == "explain") {
    return facet::controller::RunExplain(args, std::cout, std::cerr);
  }
  if (command == "controller") {
    return facet::controller::RunController(args, std::cout, std::cerr);
  }
  if (command == "serve") {
    return facet::controller::RunServe(args, std::cout, std::cerr);
  }
  if (command == "relay") {
    return facet::controller::RunRelay(args, std::cout, std::cerr);
  }
  if (command == "version") {
    std::cout << "facet " << FACET_VERSION << "\n";
    return 0;
  }
  std::cerr << "facet: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
