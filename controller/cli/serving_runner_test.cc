#include "controller/cli/serving_runner.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/http_attack/http_attack.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(20);

// A loopback port that was free a moment ago (bound with port 0, closed).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// What a test command did, in order. Thread-safe.
class Log {
 public:
  void Add(const std::string& event) {
    absl::MutexLock lock(&mu_);
    events_.push_back(event);
  }
  std::vector<std::string> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

// A runner for command "test" with the shared flags parsed from `args`.
class Runner {
 public:
  explicit Runner(const std::vector<std::string>& args) : runner_("test", out_, err_) {
    EXPECT_EQ(runner_.ParseFlags(args, {}, "usage: facet test"), std::nullopt) << err_.str();
    EXPECT_EQ(runner_.ReadServingFlags(), std::nullopt) << err_.str();
  }
  ServingRunner& operator*() { return runner_; }
  ServingRunner* operator->() { return &runner_; }
  std::string err() const { return err_.str(); }

 private:
  std::ostringstream out_;
  std::ostringstream err_;
  ServingRunner runner_;
};

TEST(ServingRunnerTest, StopsWhatWasBuiltWhenTheAdminPortCannotOpen) {
  BlockShutdownSignals();
  absl::StatusOr<std::unique_ptr<AdminServer>> holder = AdminServer::Start("127.0.0.1:0", {});
  ASSERT_TRUE(holder.ok()) << holder.status();
  Runner runner({"--xds-address=127.0.0.1:0", absl::StrCat("--admin-address=", (*holder)->address())});
  Log log;
  const int exit_code = runner->Run([&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
    run.StartAds();
    run.Push([&] { log.Add("stop source"); });
    ServingParts parts;
    parts.announce = [&](const ServingAddresses&) { log.Add("announce"); };
    return parts;
  });
  EXPECT_EQ(exit_code, 1);
  EXPECT_THAT(runner.err(), StartsWith("facet test: --admin-address: "));
  EXPECT_THAT(log.events(), ElementsAre("stop source"));
}

TEST(ServingRunnerTest, ABuildErrorEndsWithItsExitCodeAfterStoppingWhatItStarted) {
  BlockShutdownSignals();
  for (const auto& error : {std::make_pair(absl::InvalidArgumentError("bad lease"), 2),
                            std::make_pair(absl::UnavailableError("no port"), 1)}) {
    const absl::Status& status = error.first;
    const int want = error.second;
    Runner runner({"--xds-address=127.0.0.1:0", "--admin-address="});
    Log log;
    const int exit_code = runner->Run([&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
      run.StartAds();
      run.Push([&] { log.Add("stop elector"); });
      return status;
    });
    EXPECT_EQ(exit_code, want);
    EXPECT_EQ(runner.err(), absl::StrCat("facet test: ", status.message(), "\n"));
    EXPECT_THAT(log.events(), ElementsAre("stop elector"));
  }
}

// Runs `runner`'s Run(build) on a thread of its own, and sends it SIGTERM.
class Command {
 public:
  Command(Runner& runner, std::function<absl::StatusOr<ServingParts>(ServingRunner&)> build)
      : thread_([this, &runner, build = std::move(build)] { exit_code_ = runner->Run(build); }) {}
  ~Command() {
    if (thread_.joinable()) Terminate();
  }
  int Terminate() {
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
    return exit_code_;
  }

 private:
  int exit_code_ = -1;
  std::thread thread_;
};

std::string Get(int port, const std::string& path) {
  absl::StatusOr<std::string> answer = facet::testing::Exchange(
      port, /*tls=*/false, absl::StrCat("GET ", path, " HTTP/1.1\r\n\r\n"), kWait);
  return answer.ok() ? *answer : std::string(answer.status().message());
}

TEST(ServingRunnerTest, KeepsTheXdsPortClosedUntilReadyAndStopsOnASignalMeanwhile) {
  BlockShutdownSignals();
  const int admin_port = FreePort();
  Runner runner({"--xds-address=127.0.0.1:0", absl::StrCat("--admin-address=127.0.0.1:", admin_port)});
  Log log;
  absl::Notification built;
  Command command(runner, [&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
    run.StartAds();
    run.Push([&] { log.Add("stop source"); });
    ServingParts parts;
    parts.ready = [] { return false; };
    parts.waiting_for = "the first list";
    parts.announce = [&](const ServingAddresses&) { log.Add("announce"); };
    built.Notify();
    return parts;
  });
  ASSERT_TRUE(built.WaitForNotificationWithTimeout(kWait));
  std::string readyz = Get(admin_port, "/readyz");
  for (absl::Time give_up = absl::Now() + kWait;
       !absl::StrContains(readyz, "HTTP/1.1 503") && absl::Now() < give_up;) {
    readyz = Get(admin_port, "/readyz");  // The admin port opens right after the build.
  }
  EXPECT_THAT(readyz, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(readyz, HasSubstr("waiting for the first list"));
  EXPECT_THAT(Get(admin_port, "/healthz"), StartsWith("HTTP/1.1 200"));
  EXPECT_EQ(command.Terminate(), 0);
  EXPECT_THAT(log.events(), ElementsAre("stop source"));
}

TEST(ServingRunnerTest, ServesUntilSignalledThenStopsTheLastStartedFirst) {
  BlockShutdownSignals();
  const std::string ready_file = absl::StrCat(::testing::TempDir(), "/runner.ready");
  std::remove(ready_file.c_str());
  Runner runner({"--xds-address=127.0.0.1:0", "--admin-address=127.0.0.1:0",
                 absl::StrCat("--ready-file=", ready_file)});
  Log log;
  absl::Notification announced;
  ServingAddresses addresses;
  Command command(runner, [&](ServingRunner& run) -> absl::StatusOr<ServingParts> {
    run.StartAds();
    run.Push([&] { log.Add("stop source"); });
    run.Push([&] { log.Add("stop webhook"); });
    ServingParts parts;
    parts.routes = {{"/status", [] { return AdminResponse{200, "application/json", "{}\n"}; }}};
    parts.webhook_address = "127.0.0.1:9443";
    parts.stop_first = [&] { log.Add("release lease"); };
    parts.announce = [&](const ServingAddresses& open) {
      addresses = open;
      log.Add("announce");
      announced.Notify();
    };
    return parts;
  });
  ASSERT_TRUE(announced.WaitForNotificationWithTimeout(kWait));
  EXPECT_THAT(addresses.xds, StartsWith("127.0.0.1:"));
  EXPECT_THAT(addresses.admin_suffix, StartsWith(", admin on http://127.0.0.1:"));
  const std::string admin_address = addresses.admin_suffix.substr(strlen(", admin on http://"));
  const int admin_port = std::stoi(admin_address.substr(admin_address.rfind(':') + 1));
  EXPECT_THAT(Get(admin_port, "/readyz"), HasSubstr("\r\n\r\nready\n"));
  EXPECT_THAT(Get(admin_port, "/status"), StartsWith("HTTP/1.1 200"));
  const std::string metrics = Get(admin_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(metrics, HasSubstr("# TYPE facet_xds_streams_open gauge\nfacet_xds_streams_open 0\n"));
  EXPECT_THAT(Get(admin_port, "/clients"), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(Get(admin_port, "/events"), HasSubstr("{\"events\":["));
  EXPECT_THAT(Get(admin_port, "/events?after=x"), StartsWith("HTTP/1.1 400"));
  const std::string console = Get(admin_port, "/ui/");
  EXPECT_THAT(console, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(console, HasSubstr("Content-Type: text/html; charset=utf-8"));
  EXPECT_THAT(console, HasSubstr("<title>Facet console</title>"));

  EXPECT_EQ(command.Terminate(), 0);
  EXPECT_THAT(log.events(),
              ElementsAre("announce", "release lease", "stop webhook", "stop source"));
  // Written after the announcement, before the wait for a signal.
  std::ifstream file(ready_file);
  std::stringstream ready;
  ready << file.rdbuf();
  EXPECT_EQ(ready.str(), absl::StrCat("{\"xds_address\":\"", addresses.xds,
                                      "\",\"admin_address\":\"", admin_address,
                                      "\",\"webhook_address\":\"127.0.0.1:9443\"}\n"));
}

// A listener "greeter" -> route "greeter" (demo/route: a variant for
// env=prod and one for the rest) -> cluster "c" (STATIC), as a source would
// publish it.
std::shared_ptr<const xds::Snapshot> GreeterSnapshot() {
  std::vector<xds::ResourceObject> objects = {
      xds::testing::MakeObject(
          "demo", "listener", "listener", "greeter",
          {{"",
            R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: greeter, config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})"}}),
      xds::testing::MakeObject(
          "demo", "route", "route", "greeter",
          {{"{env: prod}",
            R"({virtual_hosts: [{name: g, domains: [greeter], routes: [{match: {prefix: ""}, route: {cluster: c}}]}]})"},
           {"{env: {not: prod}}",
            R"({virtual_hosts: [{name: g, domains: ["*"], routes: [{match: {prefix: ""}, route: {cluster: c}}]}]})"}}),
      xds::testing::MakeObject(
          "demo", "cluster", "cluster", "c",
          {{"",
            "{type: STATIC, load_assignment: {cluster_name: c, endpoints: [{lb_endpoints: "
            "[{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]}]}}"}}),
  };
  xds::BuildOptions options;
  options.authority_policy = xds::BuildOptions::AuthorityPolicy::kWarnUndeclared;
  xds::BuildResult result = xds::BuildSnapshot(objects, {}, nullptr, options);
  for (const auto& status : result.statuses) {
    EXPECT_TRUE(status.accepted) << status.ref.ToString() << ": "
                                 << (status.findings.empty() ? "" : status.findings[0].message);
  }
  return result.snapshot;
}

AdminRequest Query(std::multimap<std::string, std::string> params) {
  AdminRequest request;
  request.params = std::move(params);
  return request;
}

TEST(InsightRoutesTest, ExplainTakesParametersAsTypedXdsTargetsAndTheSourcesStatuses) {
  xds::SnapshotStore store;
  store.Publish(GreeterSnapshot());
  xds::AdsService ads(store, xds::AdsService::Options());
  auto routes = InsightRoutes(ads, [](xds::ExplainRequest* request) {
    request->serving_previous[{xds::kXdsResourceKind, "demo", "route"}] = "spec: bad";
  });
  // param=env=prod, as users type it (the query parser splits at the first
  // "="), and the target as an xds: URI.
  AdminResponse response =
      routes.at("/explain")(Query({{"target", "xds:///greeter"}, {"param", "env=prod"}}));
  EXPECT_EQ(response.code, 200) << response.body;
  EXPECT_THAT(response.body, HasSubstr("\"complete\": true"));
  EXPECT_THAT(response.body, HasSubstr("\"env\": \"prod\""));
  EXPECT_THAT(response.body, HasSubstr("\"serving_previous\": \"spec: bad\""));
  EXPECT_EQ(routes.at("/explain")(Query({{"target", "greeter"}, {"param", "env"}})).code, 400);
  EXPECT_EQ(routes.at("/explain")(Query({{"target", "xds:greeter"}})).code, 400);
}

TEST(InsightRoutesTest, ClientsPagesAfterAStreamIdWithinAChosenSize) {
  xds::SnapshotStore store;
  store.Publish(GreeterSnapshot());
  xds::AdsService ads(store, xds::AdsService::Options());
  auto routes = InsightRoutes(ads);
  AdminResponse page = routes.at("/clients")(Query({{"after", "3"}}));
  EXPECT_EQ(page.code, 200);
  EXPECT_EQ(page.body, "{\"clients\":[],\"omitted_clients\":0,\"omitted_resources\":0}\n");
  AdminResponse bad = routes.at("/clients")(Query({{"after", "next"}}));
  EXPECT_EQ(bad.code, 400);
  EXPECT_THAT(bad.body, HasSubstr("after=\"next\": expected a stream id"));
  EXPECT_EQ(routes.at("/clients")(Query({{"after", "3"}, {"max_bytes", "262144"}})).body,
            page.body);
  AdminResponse bad_size = routes.at("/clients")(Query({{"max_bytes", "big"}}));
  EXPECT_EQ(bad_size.code, 400);
  EXPECT_THAT(bad_size.body, HasSubstr("max_bytes=\"big\": expected a number of bytes"));
}

TEST(ObserveSnapshotBuildsTest, ObservesTheTimeSinceTheChangeInTheHistogram) {
  Metrics metrics;
  std::function<void(const PublishTiming&)> observe = ObserveSnapshotBuilds(metrics);
  observe({/*since_change=*/absl::Milliseconds(40), /*build=*/absl::Milliseconds(10)});
  observe({/*since_change=*/absl::Seconds(2), /*build=*/absl::Seconds(1)});
  const std::string text = metrics.Text();
  EXPECT_THAT(text, HasSubstr("# TYPE facet_snapshot_build_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("facet_snapshot_build_seconds_bucket{le=\"0.025\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("facet_snapshot_build_seconds_bucket{le=\"0.05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("facet_snapshot_build_seconds_bucket{le=\"2.5\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("facet_snapshot_build_seconds_sum 2.04\n"));
}

}  // namespace
}  // namespace facet::controller
