// facet_null_server: the load benchmark's null ADS server (null_ads_service.h).
// Listens on 127.0.0.1 only, writes {"xds_address": ...} to --ready-file once
// serving, writes the edited route to every open stream on SIGUSR1 (the route
// as it was on the next SIGUSR1, and so on, alternating), and shuts
// down cleanly on SIGTERM or SIGINT.
//
//   facet_null_server --xds-address 127.0.0.1:0 --ready-file F [--services N]
//                     [--push all|selected]
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "test/e2e/dashed_flags.h"
#include "test/load/null_ads_service.h"
#include "test/load/world.h"

ABSL_FLAG(std::string, xds_address, "127.0.0.1:0", "127.0.0.1:PORT to listen on (0: any)");
ABSL_FLAG(std::string, ready_file, "", "write {\"xds_address\": ...} here once serving");
ABSL_FLAG(int, services, 2000, "services in the world (for wildcard subscriptions)");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::ZeroDuration(),
          "gRPC's keepalive timeout, which it also sets as the connections' TCP user timeout "
          "(0: gRPC's default, 20s)");
ABSL_FLAG(std::string, push, "selected",
          "on SIGUSR1, write the edited route (then, alternating, the original) to all streams "
          "subscribed to routes, or only to those whose parameters select the edited variant "
          "(selected)");

int main(int argc, char** argv) {
  // As in facet serve: Debian's abseil would otherwise check every Mutex
  // acquisition for lock-order cycles, a graph update per lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  facet::e2e::ParseDashedCommandLine(argc, argv);
  const std::string address = absl::GetFlag(FLAGS_xds_address);
  const std::string push = absl::GetFlag(FLAGS_push);
  if (!absl::StartsWith(address, "127.0.0.1:") || (push != "all" && push != "selected")) {
    std::cerr << "facet_null_server: --xds-address must be 127.0.0.1:PORT and --push all or "
                 "selected\n";
    return 2;
  }
  const absl::Duration keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  if (keepalive_timeout < absl::ZeroDuration() || keepalive_timeout > absl::Hours(24)) {
    std::cerr << "facet_null_server: --keepalive-timeout must be from 0 to 24h\n";
    return 2;
  }
  // Signals are taken by sigwait below; block them before gRPC starts threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  facet::load::NullAdsService service(
      {.services = absl::GetFlag(FLAGS_services), .push_selected_only = push == "selected"});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  if (keepalive_timeout > absl::ZeroDuration()) {
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(keepalive_timeout)));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "facet_null_server: cannot listen on " << address << "\n";
    return 1;
  }
  const std::string listening = absl::StrCat("127.0.0.1:", port);
  if (const std::string ready = absl::GetFlag(FLAGS_ready_file); !ready.empty()) {
    absl::Status written = facet::load::WriteFileByRename(
        ready, absl::StrCat("{\"xds_address\":\"", listening, "\"}\n"), [] {});
    if (!written.ok()) {
      std::cerr << "facet_null_server: " << written.message() << "\n";
      return 1;
    }
  }
  std::cerr << "facet_null_server: serving on " << listening << "\n";
  for (;;) {
    int signo = 0;
    if (sigwait(&signals, &signo) != 0) continue;
    if (signo != SIGUSR1) break;
    const absl::Time start = absl::Now();
    const int pushed = service.PushEdit();
    std::cerr << "facet_null_server: queued the change for " << pushed << " streams in "
              << absl::FormatDuration(absl::Now() - start) << "\n";
  }
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  return 0;
}
