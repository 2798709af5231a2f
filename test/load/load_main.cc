// facet_load: the xDS load benchmark. For each target server (`facet serve`
// on the synthetic world, the null server, and one or two `facet relay` tiers
// in front of `facet serve`), starts it as a child process on 127.0.0.1, opens
// N ADS streams over C connections, measures the time until every stream
// holds its subscriptions, triggers one route change (a file edit for facet
// and the relays, SIGUSR1 for the null server), measures when each stream
// whose selected variant changes receives it and counts how often each got it,
// reads the server's RSS and, behind relays, how many upstream streams each
// relay opened, and prints a table with facet/null and relay/facet ratios and
// one JSON line.
//
//   facet_load --streams 10000 --connections 100 --services 2000
//   facet_load --targets=facet,relay,relay2 --streams 10000
//
// Exit status: 0 when every target synced every stream and delivered the
// change to every stream that selects it (and each relay opened one upstream
// stream), 1 otherwise, 2 on bad flags.
#include <httplib.h>  // Its feature macros come from pkg-config (CMakeLists.txt).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "test/e2e/dashed_flags.h"
#include "test/e2e/process.h"
#include "test/load/load_client.h"
#include "test/load/world.h"
#include "xds_server/common/status_macros.h"

ABSL_FLAG(std::string, targets, "facet,null",
          "servers to measure, in order: facet, null, relay (facet relay in front of facet "
          "serve; the streams connect to the relay), relay2 (facet relay in front of facet relay "
          "in front of facet serve; the streams connect to the second relay)");
ABSL_FLAG(bool, interleave, false,
          "start every target at once and make each change to each in turn (the order "
          "reversed from one change to the next), so that a slow drift of the machine's speed "
          "moves every target's figures alike; each target is measured by a process of its own "
          "(its servers, and a load client holding its streams alone). At most one target "
          "other than null (they would share the world)");
ABSL_FLAG(int, streams, 10000, "ADS streams");
ABSL_FLAG(int, connections, 100, "HTTP/2 connections the streams are spread over");
ABSL_FLAG(bool, delta, false, "open delta ADS streams instead of SotW ones");
ABSL_FLAG(bool, locators, false,
          "send each stream's parameters as resource locators' dynamic parameters instead of "
          "node metadata");
ABSL_FLAG(bool, resource_in_sotw, true,
          "advertise the client feature xds.config.resource-in-sotw, as gRPC C++ does (Facet then "
          "sends SotW resources in Resource wrappers); false: as grpc-js does");
ABSL_FLAG(std::string, param, "env=prod:0.5,test:0.5",
          "parameter distributions, KEY=VALUE:WEIGHT,... per key, keys separated by ';'");
ABSL_FLAG(uint32_t, seed, 1, "seed for drawing each stream's parameters");
ABSL_FLAG(int, services, 2000, "services in the generated world (six objects each)");
ABSL_FLAG(std::string, world, "",
          "an existing world directory (from generate_world with the same --services); empty: "
          "generate one in the work directory");
ABSL_FLAG(int, change_service, 0, "the service whose route is changed");
ABSL_FLAG(std::string, resources, "",
          "what each stream subscribes to, TYPE:NAME,... with TYPE lds, rds, cds or eds and NAME * "
          "for a wildcard; empty: the changed service's listener, route, clusters and endpoints");
ABSL_FLAG(std::string, null_push, "selected",
          "which streams the null server writes the change to: selected (whose parameters select "
          "the changed variant, the streams Facet must push to) or all (subscribed to routes)");
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(120), "bound on the whole run");
ABSL_FLAG(int, changes, 5,
          "route changes triggered one after another (edit, restore, edit, ...); the latencies "
          "of all of them are pooled");
ABSL_FLAG(absl::Duration, change_gap, absl::Seconds(1),
          "mean wait before each change (after the settle, then after the previous change "
          "arrived everywhere), drawn uniformly from [gap/4, 7*gap/4) with --seed");
ABSL_FLAG(absl::Duration, settle, absl::Seconds(1),
          "wait after the sync before reading RSS and triggering the change");
ABSL_FLAG(std::string, work_dir, "",
          "where the world, ready files and server logs go; empty: a new directory under /tmp, "
          "removed after a successful run");
ABSL_FLAG(std::string, scenario, "change",
          "change: measure each target's push of --changes route changes; relay-restart: the "
          "streams on a facet relay in front of facet serve, which is killed (SIGKILL) and "
          "started again on the same port, the streams reconnecting as gRPC clients do; "
          "--targets and --changes are then ignored");
ABSL_FLAG(absl::Duration, restart_after, absl::ZeroDuration(),
          "relay-restart: how long the relay stays down before it is started again");
ABSL_FLAG(absl::Duration, histogram_bucket, absl::Milliseconds(100),
          "relay-restart: the width of the reconnection histogram's buckets");
ABSL_FLAG(absl::Duration, server_keepalive_timeout, absl::ZeroDuration(),
          "every server's gRPC keepalive timeout, which gRPC also sets as the TCP user timeout "
          "of its connections: how long data it sent may stay unacknowledged (a client that "
          "reads nothing) before the kernel resets the connection; 0: the servers' default (20s)");
ABSL_FLAG(absl::Duration, stop_timeout, absl::Seconds(15),
          "how long each server may take to exit after SIGTERM at the end of its run (1s to 1h; "
          "longer for a server run under valgrind, test/load/count_instructions.sh); one still "
          "running then fails the run");
ABSL_FLAG(std::string, server_cpus, "",
          "CPUs every server (facet, null, relays) runs on, as taskset writes them (0, 0-1, "
          "0,2); empty: not pinned");
ABSL_FLAG(std::string, client_cpus, "",
          "CPUs this load client runs on, as --server-cpus; empty: not pinned. With "
          "--server-cpus=0 --client-cpus=1 the server and the client each have a core of their "
          "own");
ABSL_FLAG(std::string, facet_binary, FACET_BINARY, "the facet binary");
ABSL_FLAG(std::string, null_server_binary, FACET_NULL_SERVER_BINARY, "the null server binary");

namespace facet::load {
namespace {

using ::facet::e2e::Process;
using ::facet::e2e::ProcessOptions;

// One value of a parameter and its weight.
struct WeightedValue {
  std::string value;
  double weight = 0;
};

// Parses "env=prod:0.5,test:0.5;version=v1:0.9,v2:0.1".
absl::StatusOr<std::map<std::string, std::vector<WeightedValue>>> ParseDistributions(
    absl::string_view spec) {
  std::map<std::string, std::vector<WeightedValue>> out;
  for (absl::string_view key_spec : absl::StrSplit(spec, ';', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> key_values =
        absl::StrSplit(key_spec, absl::MaxSplits('=', 1));
    if (key_values.first.empty() || key_values.second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--param: expected KEY=VALUE:WEIGHT,... in \"", key_spec, "\""));
    }
    for (absl::string_view value_spec : absl::StrSplit(key_values.second, ',')) {
      std::pair<std::string, std::string> value_weight =
          absl::StrSplit(value_spec, absl::MaxSplits(':', 1));
      WeightedValue value{value_weight.first, 1};
      if (value.value.empty() ||
          (!value_weight.second.empty() && !absl::SimpleAtod(value_weight.second, &value.weight)) ||
          value.weight < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--param: bad value \"", value_spec, "\""));
      }
      out[key_values.first].push_back(value);
    }
  }
  return out;
}

std::vector<StreamPlan> DrawPlans(const std::map<std::string, std::vector<WeightedValue>>& dists,
                                  int streams, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<StreamPlan> plans(streams);
  for (const auto& [key, values] : dists) {
    std::vector<double> weights;
    for (const WeightedValue& value : values) weights.push_back(value.weight);
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    for (StreamPlan& plan : plans) plan.params[key] = values[pick(random)].value;
  }
  for (StreamPlan& plan : plans) plan.expects_edit = SelectsEditedVariant(plan.params);
  return plans;
}

absl::StatusOr<std::vector<Subscription>> ParseResources(absl::string_view spec,
                                                         const std::string& service) {
  static const std::map<std::string, std::string> kTypes = {
      {"lds", "type.googleapis.com/envoy.config.listener.v3.Listener"},
      {"rds", "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"},
      {"cds", "type.googleapis.com/envoy.config.cluster.v3.Cluster"},
      {"eds", "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"}};
  std::string chain;
  if (spec.empty()) {
    const std::string a = PrimaryClusterName(service);
    const std::string b = SecondaryClusterName(service);
    chain = absl::StrCat("lds:", service, ",rds:", service, ",cds:", a, ",cds:", b, ",eds:", a,
                         ",eds:", b);
    spec = chain;
  }
  std::vector<Subscription> out;
  for (absl::string_view entry : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> type_name = absl::StrSplit(entry, absl::MaxSplits(':', 1));
    auto type = kTypes.find(type_name.first);
    if (type == kTypes.end() || type_name.second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resources: expected TYPE:NAME with TYPE lds, rds, cds or eds: ", entry));
    }
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Subscription& s) { return s.type_url == type->second; });
    if (it == out.end()) {
      out.push_back({type->second, {}});
      it = out.end() - 1;
    }
    if (type_name.second != "*") it->names.push_back(type_name.second);
  }
  return out;
}

// Returns VmRSS of `pid` in KiB, or -1.
int64_t ReadRssKib(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int64_t kib = 0;
    if (absl::StartsWith(line, "VmRSS:") &&
        absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line.substr(6)), " kB"),
                         &kib)) {
      return kib;
    }
  }
  return -1;
}

// Returns the CPU time (user and system) `pid` has used, or nullopt.
std::optional<absl::Duration> ReadCpuTime(pid_t pid) {
  std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  // The command name may hold spaces: the fields follow its closing ')'.
  const size_t end = stat.rfind(')');
  if (end == std::string::npos) return std::nullopt;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(end + 1), ' ', absl::SkipEmpty());
  // state is field 3 of stat(5); utime and stime are 14 and 15.
  int64_t user = 0;
  int64_t system = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &user) ||
      !absl::SimpleAtoi(fields[12], &system)) {
    return std::nullopt;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return std::nullopt;
  return absl::Seconds(static_cast<double>(user + system) / static_cast<double>(ticks));
}

// Adds after - before to *total; a reading that failed (or failed before)
// leaves no total.
void AddCpu(const std::optional<absl::Duration>& before, const std::optional<absl::Duration>& after,
            std::optional<absl::Duration>* total) {
  if (before && after && *total) {
    **total += *after - *before;
  } else {
    total->reset();
  }
}

// Returns the address under `key` ("xds_address" or "admin_address") of a
// ready file, which must be on 127.0.0.1.
absl::StatusOr<std::string> ReadyAddress(absl::string_view ready, absl::string_view key) {
  const std::string quoted_key = absl::StrCat("\"", key, "\":\"");
  const size_t start = ready.find(quoted_key);
  const size_t end =
      start == absl::string_view::npos ? start : ready.find('"', start + quoted_key.size());
  if (end == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("no ", key, " in ready file: ", ready));
  }
  std::string address(ready.substr(start + quoted_key.size(), end - start - quoted_key.size()));
  if (!absl::StartsWith(address, "127.0.0.1:")) {
    return absl::FailedPreconditionError(absl::StrCat("server is not on 127.0.0.1: ", address));
  }
  return address;
}

// Returns the value of the unlabelled sample `metric` on the /metrics page of
// the admin server at `admin_address` (127.0.0.1:PORT).
absl::StatusOr<double> ScrapeMetric(const std::string& admin_address, absl::string_view metric) {
  int port = 0;
  if (!absl::SimpleAtoi(absl::StripPrefix(admin_address, "127.0.0.1:"), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("bad admin address ", admin_address));
  }
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  httplib::Result result = client.Get("/metrics");
  if (!result || result->status != 200) {
    return absl::UnavailableError(absl::StrCat("GET http://", admin_address, "/metrics failed"));
  }
  for (absl::string_view line : absl::StrSplit(result->body, '\n', absl::SkipEmpty())) {
    double value = 0;
    if (absl::ConsumePrefix(&line, metric) && absl::ConsumePrefix(&line, " ") &&
        absl::SimpleAtod(line, &value)) {
      return value;
    }
  }
  return absl::NotFoundError(absl::StrCat("no sample ", metric, " at ", admin_address));
}

// Returns the q-quantile (nearest rank) of the sorted `latencies` in ms, or
// NaN when there are none.
double LatencyQuantileMs(const std::vector<absl::Duration>& latencies, double q) {
  if (latencies.empty()) return NAN;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(latencies.size())));
  return absl::ToDoubleMilliseconds(latencies[std::clamp<size_t>(rank, 1, latencies.size()) - 1]);
}

struct TargetResult {
  std::string name;
  std::string error;                    // Empty when the run succeeded.
  std::optional<absl::Duration> ready;  // From spawning the server to its ready file.
  std::optional<absl::Duration> sync;
  EditResults edits;                  // Every change's, pooled.
  std::vector<double> change_p99_ms;  // Each change's p99.
  int64_t rss_before_kib = -1;
  int64_t rss_after_kib = -1;
  int streams = 0;
  // CPU time used from each change's trigger until every stream had it,
  // summed over the changes, by the server and by this process (the client).
  std::optional<absl::Duration> server_cpu;
  std::optional<absl::Duration> client_cpu;
  // The server's CPU time from each change's trigger to the next one's (the
  // last: to the end of the settle after it), summed: all the change cost,
  // the ACKs of its last pushes included, and the idle gap's timers.
  std::optional<absl::Duration> server_cycle_cpu;
  int changes = 0;
  // Relay chains: per relay tier (1 nearest Facet), the ADS streams its
  // upstream server saw opened (facet_xds_streams_total there).
  std::vector<int64_t> upstream_streams;
  // Per stream, the responses carrying the watched resource after its sync:
  // streams that got each change exactly once (`changes` pushes if they
  // select the edited variant, else none), fewer, and more.
  int pushes_exact = 0;
  int pushes_missing = 0;
  int pushes_duplicated = 0;

  double RssPerStreamKib() const {
    return rss_before_kib < 0 || rss_after_kib < 0 || streams == 0
               ? NAN
               : static_cast<double>(rss_after_kib - rss_before_kib) / streams;
  }
  // Returns the q-quantile (nearest rank) of the latencies of every change in
  // ms, or NaN.
  double LatencyMs(double q) const { return LatencyQuantileMs(edits.latencies, q); }
  double SyncMs() const { return sync.has_value() ? absl::ToDoubleMilliseconds(*sync) : NAN; }
  // CPU ms per change, or NaN.
  static double PerChangeMs(const std::optional<absl::Duration>& cpu, int changes) {
    return cpu.has_value() && changes > 0 ? absl::ToDoubleMilliseconds(*cpu) / changes : NAN;
  }
  double ServerCpuMs() const { return PerChangeMs(server_cpu, changes); }
  double ServerCycleCpuMs() const { return PerChangeMs(server_cycle_cpu, changes); }
  double ClientCpuMs() const { return PerChangeMs(client_cpu, changes); }
  double ReadyMs() const { return ready.has_value() ? absl::ToDoubleMilliseconds(*ready) : NAN; }
};

struct RunConfig {
  std::string work_dir;
  std::string world_dir;
  LoadOptions load;
  std::vector<StreamPlan> plans;
  int services = 0;
  int change_service = 0;
  int changes = 1;
  absl::Time deadline;
  std::vector<int> server_cpus;  // Empty: not pinned.
  std::vector<int> client_cpus;  // Empty: not pinned.
};

// Starts server `kind` (facet, null or relay) as `name` (its log files' and
// configuration's name), waits for nothing and returns it. A relay relays
// `upstream`.
absl::StatusOr<std::unique_ptr<Process>> StartServer(const std::string& kind,
                                                     const std::string& name,
                                                     const RunConfig& config,
                                                     const std::string& ready_file,
                                                     const std::string& xds_address,
                                                     const std::string& upstream = "") {
  std::filesystem::remove(ready_file);
  ProcessOptions options;
  if (kind == "relay") {
    const std::string config_path = absl::StrCat(config.work_dir, "/", name, ".json");
    std::ofstream file(config_path);
    file << "{\"xds_servers\": [{\"server_uri\": \"" << upstream
         << "\", \"channel_creds\": [{\"type\": \"insecure\"}]}], \"node\": {\"id\": "
            "\"facet-load-"
         << name << "\"}}\n";
    file.close();
    if (!file) return absl::InternalError(absl::StrCat("cannot write ", config_path));
    options.argv = {absl::GetFlag(FLAGS_facet_binary),
                    "relay",
                    absl::StrCat("--config=", config_path),
                    absl::StrCat("--xds-address=", xds_address),
                    "--admin-address=127.0.0.1:0",
                    absl::StrCat("--ready-file=", ready_file),
                    "--log-level=warn"};
  } else if (kind == "facet") {
    options.argv = {absl::GetFlag(FLAGS_facet_binary),
                    "serve",
                    absl::StrCat("--manifests=", config.world_dir),
                    absl::StrCat("--xds-address=", xds_address),
                    "--admin-address=127.0.0.1:0",
                    absl::StrCat("--ready-file=", ready_file),
                    "--log-level=warn"};
  } else {
    options.argv = {
        absl::GetFlag(FLAGS_null_server_binary), absl::StrCat("--xds-address=", xds_address),
        absl::StrCat("--ready-file=", ready_file), absl::StrCat("--services=", config.services),
        absl::StrCat("--push=", absl::GetFlag(FLAGS_null_push))};
  }
  if (const absl::Duration timeout = absl::GetFlag(FLAGS_server_keepalive_timeout);
      timeout > absl::ZeroDuration()) {
    options.argv.push_back(
        absl::StrCat(kind == "null" ? "--keepalive-timeout=" : "--grpc-keepalive-timeout=",
                     absl::FormatDuration(timeout)));
  }
  options.cpus = config.server_cpus;
  options.stdout_path = absl::StrCat(config.work_dir, "/", name, ".stdout.log");
  options.stderr_path = absl::StrCat(config.work_dir, "/", name, ".stderr.log");
  return Process::Start(options);
}

// Triggers change `change` (even: the edit; odd: back to the original);
// returns the moment it became visible to the server.
absl::StatusOr<absl::Time> TriggerChange(const std::string& target, const RunConfig& config,
                                         Process& server, int change) {
  absl::Time trigger;
  if (target != "null") {
    const std::string path =
        absl::StrCat(config.world_dir, "/", ServiceFileName(config.change_service));
    absl::Status written =
        WriteFileByRename(path, ServiceManifest(config.change_service, change % 2 == 0),
                          [&] { trigger = absl::Now(); });
    if (!written.ok()) return written;
    return trigger;
  }
  trigger = absl::Now();
  if (absl::Status signalled = server.Signal(SIGUSR1); !signalled.ok()) return signalled;
  return trigger;
}

// Stops the server with SIGTERM and checks it exits cleanly.
absl::Status StopServer(Process& server, absl::Time deadline) {
  if (absl::Status signalled = server.Signal(SIGTERM); !signalled.ok()) return signalled;
  const absl::Duration longest = std::max(absl::GetFlag(FLAGS_stop_timeout), absl::Seconds(2));
  const absl::Duration wait = std::clamp(deadline - absl::Now(), absl::Seconds(2), longest);
  absl::StatusOr<e2e::ExitStatus> exit = server.WaitExit(wait);
  if (!exit.ok()) return exit.status();
  if (!exit->Succeeded()) {
    return absl::InternalError(absl::StrCat(server.description(), " ", exit->ToString()));
  }
  return absl::OkStatus();
}

// The relay tiers in front of Facet that `target` measures.
int RelayTiers(const std::string& target) {
  if (target == "relay") return 1;
  if (target == "relay2") return 2;
  return 0;
}

// A started server and the addresses from its ready file.
struct Server {
  std::string name;
  std::unique_ptr<Process> process;
  std::string xds_address;
  std::string admin_address;
  absl::Duration ready;  // From spawning to the ready file.
};

// Starts a server (see StartServer) and waits for its ready file.
absl::StatusOr<Server> StartAndWait(const std::string& kind, const std::string& name,
                                    const RunConfig& config,
                                    const std::string& xds_address = "127.0.0.1:0",
                                    const std::string& upstream = "") {
  Server server;
  server.name = name;
  const std::string ready_file = absl::StrCat(config.work_dir, "/", name, ".ready");
  const absl::Time spawned = absl::Now();
  absl::StatusOr<std::unique_ptr<Process>> started =
      StartServer(kind, name, config, ready_file, xds_address, upstream);
  if (!started.ok()) return started.status();
  server.process = *std::move(started);
  absl::StatusOr<std::string> ready =
      e2e::WaitForFile(ready_file, config.deadline - absl::Now(), server.process.get());
  if (!ready.ok()) return ready.status();
  server.ready = absl::Now() - spawned;
  absl::StatusOr<std::string> address = ReadyAddress(*ready, "xds_address");
  if (!address.ok()) return address.status();
  server.xds_address = *address;
  if (kind != "null") {
    absl::StatusOr<std::string> admin = ReadyAddress(*ready, "admin_address");
    if (!admin.ok()) return admin.status();
    server.admin_address = *admin;
  }
  return server;
}

// Starts `target`'s servers, Facet first and the server the streams connect
// to last: for a relay chain, `facet serve` on the world and each relay tier
// relaying the one before. Servers started before a failure are appended to
// `*chain` all the same, to be stopped.
absl::Status StartChain(const std::string& target, const RunConfig& config,
                        std::vector<Server>* chain) {
  const int tiers = RelayTiers(target);
  for (int tier = 0; tier <= tiers; ++tier) {
    std::string name = target;
    if (tier == 0 && tiers > 0) name = absl::StrCat(target, "-upstream");
    if (tier > 0 && tier < tiers) name = absl::StrCat(target, "-tier", tier);
    const std::string kind = tiers == 0 ? target : (tier == 0 ? "facet" : "relay");
    absl::StatusOr<Server> server =
        StartAndWait(kind, name, config, "127.0.0.1:0", tier == 0 ? "" : chain->back().xds_address);
    if (!server.ok()) return server.status();
    chain->push_back(*std::move(server));
  }
  return absl::OkStatus();
}

// Stops a chain's servers, the last started first; returns the first error.
absl::Status StopChain(std::vector<Server>& chain, absl::Time deadline) {
  absl::Status first = absl::OkStatus();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (it->process == nullptr) continue;
    absl::Status stopped = StopServer(*it->process, deadline);
    if (first.ok()) first = stopped;
  }
  return first;
}

// Counts, per stream, whether it got the watched resource exactly as often as
// there were changes it selects.
void CountPushes(const std::vector<int>& pushes, const RunConfig& config, TargetResult& result) {
  for (size_t i = 0; i < pushes.size(); ++i) {
    const int expected = config.plans[i].expects_edit ? result.changes : 0;
    if (pushes[i] == expected) ++result.pushes_exact;
    if (pushes[i] < expected) ++result.pushes_missing;
    if (pushes[i] > expected) ++result.pushes_duplicated;
  }
}

// Reads, for each relay of `chain`, how many ADS streams its upstream server
// saw opened. FailedPrecondition unless each opened exactly one.
absl::Status CheckUpstreamStreams(const std::vector<Server>& chain, TargetResult& result) {
  for (size_t tier = 1; tier < chain.size(); ++tier) {
    absl::StatusOr<double> streams =
        ScrapeMetric(chain[tier - 1].admin_address, "facet_xds_streams_total");
    if (!streams.ok()) return streams.status();
    result.upstream_streams.push_back(static_cast<int64_t>(*streams));
  }
  for (size_t tier = 0; tier < result.upstream_streams.size(); ++tier) {
    if (result.upstream_streams[tier] != 1) {
      return absl::FailedPreconditionError(absl::StrCat("relay tier ", tier + 1, " opened ",
                                                        result.upstream_streams[tier],
                                                        " upstream streams, not 1"));
    }
  }
  return absl::OkStatus();
}

// One target's measurement, in steps: Start (its servers, the client's
// streams and their sync), MeasureRss, Change (one change, as many times as
// --changes) and Finish (the pushes counted, the servers stopped). Run one
// target after another, or with --interleave all targets' steps alternating.
class TargetRun {
 public:
  TargetRun(std::string target, const RunConfig& config, TargetResult& result)
      : target_(std::move(target)), config_(config), result_(result) {}

  absl::Status Start() {
    if (absl::Status started = StartChain(target_, config_, &chain_); !started.ok()) return started;
    Server& served = chain_.back();
    result_.ready = served.ready;
    LoadOptions load = config_.load;
    load.address = served.xds_address;
    server_ = served.process.get();
    result_.rss_before_kib = ReadRssKib(server_->pid());
    client_ = std::make_unique<LoadClient>(load, config_.plans);
    RETURN_IF_ERROR(client_->Connect(config_.deadline));
    absl::StatusOr<absl::Duration> sync = client_->OpenAndSync(config_.deadline);
    if (!sync.ok()) return sync.status();
    result_.sync = *sync;
    result_.server_cpu = result_.client_cpu = result_.server_cycle_cpu = absl::ZeroDuration();
    return absl::OkStatus();
  }

  // After the settle that follows the sync.
  void MeasureRss() { result_.rss_after_kib = ReadRssKib(server_->pid()); }

  // Triggers the next change and waits until every stream selecting it has
  // it, counting the CPU the server and this process used meanwhile.
  absl::Status Change() {
    const int change = result_.changes;
    const std::optional<absl::Duration> server_cpu = ReadCpuTime(server_->pid());
    const std::optional<absl::Duration> client_cpu = ReadCpuTime(getpid());
    if (change > 0) AddCpu(cycle_start_cpu_, server_cpu, &result_.server_cycle_cpu);
    cycle_start_cpu_ = server_cpu;
    absl::StatusOr<absl::Time> trigger = TriggerChange(target_, config_, *server_, change);
    if (!trigger.ok()) return trigger.status();
    const bool complete = client_->WaitForChange(change, config_.deadline);
    const std::optional<absl::Duration> server_cpu_after = ReadCpuTime(server_->pid());
    const std::optional<absl::Duration> client_cpu_after = ReadCpuTime(getpid());
    AddCpu(server_cpu, server_cpu_after, &result_.server_cpu);
    AddCpu(client_cpu, client_cpu_after, &result_.client_cpu);
    result_.changes++;
    EditResults edits = client_->Edits(change, *trigger);
    result_.change_p99_ms.push_back(LatencyQuantileMs(edits.latencies, 0.99));
    result_.edits.expected += edits.expected;
    result_.edits.unexpected += edits.unexpected;
    result_.edits.latencies.insert(result_.edits.latencies.end(), edits.latencies.begin(),
                                   edits.latencies.end());
    if (!complete) {
      const std::string failure = client_->FirstFailure();
      return absl::DeadlineExceededError(absl::StrCat(
          "change ", change + 1, " of ", config_.changes, ": ", edits.latencies.size(), " of ",
          edits.expected, " streams received it", failure.empty() ? "" : "; ", failure));
    }
    return absl::OkStatus();
  }

  // Ends the run that went as far as `status` says: counts the pushes (after
  // the settle that lets a duplicate arrive) when it succeeded, closes the
  // streams, stops the servers and restores the world. Returns the first
  // error.
  absl::Status Finish(absl::Status status) {
    std::sort(result_.edits.latencies.begin(), result_.edits.latencies.end());
    if (client_ != nullptr) {
      if (status.ok() && result_.changes > 0) {
        AddCpu(cycle_start_cpu_, ReadCpuTime(server_->pid()), &result_.server_cycle_cpu);
      }
      if (status.ok()) CountPushes(client_->WatchedPushes(), config_, result_);
      client_->Shutdown(config_.deadline);
      client_.reset();
      if (status.ok()) status = CheckUpstreamStreams(chain_, result_);
    }
    absl::Status stopped = StopChain(chain_, config_.deadline);
    if (target_ != "null") {
      // Leave the world as it was, for the next target or run.
      absl::Status restored = WriteFileByRename(
          absl::StrCat(config_.world_dir, "/", ServiceFileName(config_.change_service)),
          ServiceManifest(config_.change_service, false), [] {});
      if (status.ok()) status = restored;
    }
    return status.ok() ? stopped : status;
  }

 private:
  const std::string target_;
  const RunConfig& config_;
  TargetResult& result_;
  std::vector<Server> chain_;
  Process* server_ = nullptr;                      // The one the streams connect to, in chain_.
  std::optional<absl::Duration> cycle_start_cpu_;  // At the last change's trigger.
  std::unique_ptr<LoadClient> client_;
};

void Settle(const RunConfig& config) {
  absl::SleepFor(std::min(absl::GetFlag(FLAGS_settle), config.deadline - absl::Now()));
}

// The gaps before the changes: drawn with the seed, so that every target sees
// the same ones, and random, so that no change keeps one phase to a periodic
// timer of the client's or the server's (a change exactly 1 s after the sync
// lands on the idle wake-up of the client's gRPC pollers and reads about
// 90 ms late).
std::vector<absl::Duration> ChangeGaps(const RunConfig& config) {
  std::mt19937 gaps(absl::GetFlag(FLAGS_seed));
  const absl::Duration mean_gap = absl::GetFlag(FLAGS_change_gap);
  std::uniform_real_distribution<double> gap_fraction(0.25, 1.75);
  std::vector<absl::Duration> out;
  for (int change = 0; change < config.changes; ++change) {
    out.push_back(mean_gap * gap_fraction(gaps));
  }
  return out;
}

// Measures one target from start to end.
absl::Status RunTargetSteps(const std::string& target, const RunConfig& config,
                            TargetResult& result) {
  TargetRun run(target, config, result);
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(run.Start());
    Settle(config);
    run.MeasureRss();
    for (const absl::Duration gap : ChangeGaps(config)) {
      absl::SleepFor(std::min(gap, config.deadline - absl::Now()));
      RETURN_IF_ERROR(run.Change());
    }
    Settle(config);  // A duplicate push would come soon after the change it repeats.
    return absl::OkStatus();
  }();
  return run.Finish(status);
}

// A TargetResult through a pipe, one "key values..." line each: durations
// in nanoseconds ("-" for none), the error C-escaped; "end" closes it.
std::string DurationText(const std::optional<absl::Duration>& d) {
  return d.has_value() ? absl::StrCat(absl::ToInt64Nanoseconds(*d)) : "-";
}

std::string ResultText(const TargetResult& r) {
  std::string out;
  absl::StrAppend(&out, "ready ", DurationText(r.ready), "\nsync ", DurationText(r.sync),
                  "\nserver_cpu ", DurationText(r.server_cpu), "\nserver_cycle_cpu ",
                  DurationText(r.server_cycle_cpu), "\nclient_cpu ", DurationText(r.client_cpu),
                  "\ncounts ", r.edits.expected, " ", r.edits.unexpected, " ", r.rss_before_kib,
                  " ", r.rss_after_kib, " ", r.changes, " ", r.pushes_exact, " ", r.pushes_missing,
                  " ", r.pushes_duplicated, "\nlatencies");
  for (const absl::Duration latency : r.edits.latencies) {
    absl::StrAppend(&out, " ", absl::ToInt64Nanoseconds(latency));
  }
  out += "\nchange_p99";
  for (const double p99 : r.change_p99_ms) absl::StrAppend(&out, " ", absl::StrFormat("%.6f", p99));
  absl::StrAppend(&out, "\nupstream");
  for (const int64_t streams : r.upstream_streams) absl::StrAppend(&out, " ", streams);
  absl::StrAppend(&out, "\nerror ", absl::CEscape(r.error), "\nend\n");
  return out;
}

// Reads what ResultText wrote into `r` (its name and stream count kept).
absl::Status ParseResultText(absl::string_view text, TargetResult& r) {
  auto duration = [](absl::string_view value) -> std::optional<absl::Duration> {
    int64_t ns = 0;
    if (value == "-" || !absl::SimpleAtoi(value, &ns)) return std::nullopt;
    return absl::Nanoseconds(ns);
  };
  // Appends each of `values`, read by `read` (false: not a number), to `out`.
  auto each = [](const std::vector<absl::string_view>& values, auto& out, auto read) {
    for (absl::string_view v : values) {
      if (!read(v, out)) return false;
    }
    return true;
  };
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const size_t space = std::min(line.find(' '), line.size());
    const absl::string_view key = line.substr(0, space);
    const absl::string_view rest = line.substr(std::min(space + 1, line.size()));
    const std::vector<absl::string_view> values = absl::StrSplit(rest, ' ', absl::SkipEmpty());
    bool ok = true;
    if (key == "ready") {
      r.ready = duration(rest);
    } else if (key == "sync") {
      r.sync = duration(rest);
    } else if (key == "server_cpu") {
      r.server_cpu = duration(rest);
    } else if (key == "server_cycle_cpu") {
      r.server_cycle_cpu = duration(rest);
    } else if (key == "client_cpu") {
      r.client_cpu = duration(rest);
    } else if (key == "counts") {
      int64_t n[8];
      ok = values.size() == 8;
      for (size_t i = 0; ok && i < 8; ++i) ok = absl::SimpleAtoi(values[i], &n[i]);
      if (ok) {
        r.edits.expected = static_cast<int>(n[0]);
        r.edits.unexpected = static_cast<int>(n[1]);
        r.rss_before_kib = n[2];
        r.rss_after_kib = n[3];
        r.changes = static_cast<int>(n[4]);
        r.pushes_exact = static_cast<int>(n[5]);
        r.pushes_missing = static_cast<int>(n[6]);
        r.pushes_duplicated = static_cast<int>(n[7]);
      }
    } else if (key == "latencies") {
      ok = each(values, r.edits.latencies, [&](absl::string_view v, auto& out) {
        const std::optional<absl::Duration> latency = duration(v);
        if (latency.has_value()) out.push_back(*latency);
        return latency.has_value();
      });
    } else if (key == "change_p99") {
      ok = each(values, r.change_p99_ms, [](absl::string_view v, auto& out) {
        double p99 = 0;
        return absl::SimpleAtod(v, &p99) && (out.push_back(p99), true);
      });
    } else if (key == "upstream") {
      ok = each(values, r.upstream_streams, [](absl::string_view v, auto& out) {
        int64_t streams = 0;
        return absl::SimpleAtoi(v, &streams) && (out.push_back(streams), true);
      });
    } else if (key == "error") {
      ok = absl::CUnescape(rest, &r.error);
    }
    if (!ok) return absl::DataLossError(absl::StrCat("a measuring process's result: ", line));
  }
  return absl::OkStatus();
}

// What a turn's reply says: "ok" or "error <C-escaped message>".
std::string ReplyText(const absl::Status& status) {
  return status.ok() ? "ok\n" : absl::StrCat("error ", absl::CEscape(status.message()), "\n");
}

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The measuring process of one target under --interleave: runs its steps as
// the commands on `commands` say (s: Start, r: MeasureRss, c: Change, f:
// Finish, then the result), replying on `replies`. Returns the exit status.
int ServeTurns(const std::string& target, const RunConfig& config, int commands, int replies) {
  TargetResult result;
  TargetRun run(target, config, result);
  absl::Status status;
  char command = 0;
  while (read(commands, &command, 1) == 1) {
    switch (command) {
      case 's':
        status = run.Start();
        break;
      case 'r':
        run.MeasureRss();
        break;
      case 'c':
        status = run.Change();
        break;
      case 'f': {
        const absl::Status finished = run.Finish(status);
        if (!finished.ok()) result.error = std::string(finished.message());
        return WriteAll(replies, ResultText(result)) ? 0 : 1;
      }
      default:
        break;
    }
    if (!WriteAll(replies, ReplyText(status))) break;
  }
  run.Finish(status).IgnoreError();  // The coordinator is gone.
  return 1;
}

// One target's measuring process, seen from the coordinator.
class Turns {
 public:
  // Starts the process (fork: before this process holds any gRPC state).
  absl::Status Spawn(const std::string& target, const RunConfig& config) {
    int commands[2];
    int replies[2];
    if (pipe2(commands, O_CLOEXEC) != 0 || pipe2(replies, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    std::cout.flush();
    std::cerr.flush();
    pid_ = fork();
    if (pid_ < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (pid_ == 0) {
      close(commands[1]);
      close(replies[0]);
      _exit(ServeTurns(target, config, commands[0], replies[1]));
    }
    close(commands[0]);
    close(replies[1]);
    commands_ = commands[1];
    replies_ = fdopen(replies[0], "r");
    return replies_ == nullptr ? absl::InternalError("fdopen") : absl::OkStatus();
  }

  ~Turns() {
    if (commands_ >= 0) close(commands_);
    if (replies_ != nullptr) fclose(replies_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }

  // Sends `command` and returns the step's status.
  absl::Status Step(char command) {
    if (!WriteAll(commands_, absl::string_view(&command, 1))) {
      return absl::InternalError("the measuring process is gone");
    }
    absl::StatusOr<std::string> line = ReadLine();
    if (!line.ok()) return line.status();
    if (*line == "ok") return absl::OkStatus();
    std::string message;
    absl::CUnescape(absl::StripPrefix(*line, "error "), &message);
    return absl::UnknownError(message);
  }

  // Finishes the target's run and reads its result into `result`.
  absl::Status Finish(TargetResult& result) {
    const char command = 'f';
    if (!WriteAll(commands_, absl::string_view(&command, 1))) {
      return absl::InternalError("the measuring process is gone");
    }
    std::string text;
    for (;;) {
      absl::StatusOr<std::string> line = ReadLine();
      if (!line.ok()) return line.status();
      if (*line == "end") break;
      absl::StrAppend(&text, *line, "\n");
    }
    return ParseResultText(text, result);
  }

 private:
  absl::StatusOr<std::string> ReadLine() {
    char* line = nullptr;
    size_t capacity = 0;
    const ssize_t n = getline(&line, &capacity, replies_);
    std::string out = n > 0 ? std::string(line, static_cast<size_t>(n)) : std::string();
    free(line);
    if (n <= 0) return absl::InternalError("the measuring process ended early");
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  pid_t pid_ = -1;
  int commands_ = -1;
  FILE* replies_ = nullptr;
};

// Measures every target at once (--interleave): each has a measuring process
// of its own (its servers, and a load client holding its streams alone, as
// when the targets run one after another); all are started and synced, then
// each change is made to each target in turn, the order reversed from one
// change to the next, each after the change's gap. A target's change is
// measured while the others are idle, and a pair of changes is a second or two
// apart, not the tens of seconds that separate the targets run one after
// another: slow drifts of the machine's speed move both alike. Returns false
// when a target failed (its result says why).
bool RunInterleaved(const std::vector<std::string>& targets, const RunConfig& config,
                    std::vector<TargetResult>& results) {
  std::vector<std::unique_ptr<Turns>> turns;
  std::vector<absl::Status> statuses(targets.size());
  std::vector<bool> started(targets.size(), false);
  for (size_t i = 0; i < targets.size(); ++i) {
    turns.push_back(std::make_unique<Turns>());
    statuses[i] = turns[i]->Spawn(targets[i], config);
  }
  auto all_ok = [&] {
    return std::all_of(statuses.begin(), statuses.end(),
                       [](const absl::Status& status) { return status.ok(); });
  };
  for (size_t i = 0; i < turns.size() && all_ok(); ++i) {
    std::cerr << "facet_load: starting " << targets[i] << "\n";
    statuses[i] = turns[i]->Step('s');
    started[i] = true;
  }
  if (all_ok()) {
    Settle(config);
    for (size_t i = 0; i < turns.size() && all_ok(); ++i) statuses[i] = turns[i]->Step('r');
    const std::vector<absl::Duration> gaps = ChangeGaps(config);
    for (size_t change = 0; change < gaps.size() && all_ok(); ++change) {
      for (size_t k = 0; k < turns.size() && all_ok(); ++k) {
        const size_t i = change % 2 == 0 ? k : turns.size() - 1 - k;
        absl::SleepFor(std::min(gaps[change], config.deadline - absl::Now()));
        statuses[i] = turns[i]->Step('c');
      }
    }
    if (all_ok()) Settle(config);
  }
  bool ok = true;
  for (size_t i = 0; i < turns.size(); ++i) {
    const std::string name = results[i].name;
    const int streams = results[i].streams;
    if (absl::Status finished = turns[i]->Finish(results[i]); !finished.ok()) {
      results[i].error = std::string(finished.message());
    }
    results[i].name = name;
    results[i].streams = streams;
    if (results[i].error.empty() && !started[i]) {
      results[i].error = "not started: another target failed to start";
    }
    if (results[i].error.empty() && !statuses[i].ok()) {
      results[i].error = std::string(statuses[i].message());
    }
    ok = ok && results[i].error.empty();
  }
  return ok;
}

std::string FormatNumber(double value, int precision) {
  return std::isnan(value) ? "-" : absl::StrFormat("%.*f", precision, value);
}

std::string JsonNumber(double value) {
  return std::isnan(value) ? "null" : absl::StrFormat("%.3f", value);
}

void PrintReport(const std::vector<TargetResult>& results, const RunConfig& config) {
  const std::string mode =
      absl::StrCat(config.load.delta ? "delta" : "sotw", config.load.locators ? "+locators" : "");
  std::cout << absl::StrFormat(
      "\n%d %s streams over %d connections, %d services (%d objects), %d changes\n",
      config.plans.size(), mode, config.load.connections, config.services, config.services * 6,
      config.changes);
  const std::string server_cpus = absl::StrJoin(config.server_cpus, ",");
  const std::string client_cpus = absl::StrJoin(config.client_cpus, ",");
  if (!server_cpus.empty() || !client_cpus.empty()) {
    std::cout << absl::StrFormat("servers on CPUs %s, this client on CPUs %s\n",
                                 server_cpus.empty() ? "(any)" : server_cpus,
                                 client_cpus.empty() ? "(any)" : client_cpus);
  }
  std::cout << absl::StrFormat(
      "%-8s %9s %10s %9s %9s %9s %9s %13s %7s %10s %10s %12s %10s %10s %10s  %s\n", "target",
      "ready_ms", "sync_ms", "first_ms", "p50_ms", "p99_ms", "max_ms", "pushes/expect", "other",
      "rss0_MiB", "rss_MiB", "KiB/stream", "cpu_ms/chg", "cpu_ms/cyc", "client_cpu", "result");
  for (const TargetResult& r : results) {
    std::cout << absl::StrFormat(
        "%-8s %9s %10s %9s %9s %9s %9s %6d/%-6d %7d %10s %10s %12s %10s %10s %10s  %s\n", r.name,
        FormatNumber(r.ReadyMs(), 0), FormatNumber(r.SyncMs(), 1),
        FormatNumber(r.LatencyMs(0.0), 2), FormatNumber(r.LatencyMs(0.5), 2),
        FormatNumber(r.LatencyMs(0.99), 2), FormatNumber(r.LatencyMs(1.0), 2),
        r.edits.latencies.size(), r.edits.expected, r.edits.unexpected,
        FormatNumber(r.rss_before_kib < 0 ? NAN : r.rss_before_kib / 1024.0, 1),
        FormatNumber(r.rss_after_kib < 0 ? NAN : r.rss_after_kib / 1024.0, 1),
        FormatNumber(r.RssPerStreamKib(), 2), FormatNumber(r.ServerCpuMs(), 1),
        FormatNumber(r.ServerCycleCpuMs(), 1), FormatNumber(r.ClientCpuMs(), 1),
        r.error.empty() ? "ok" : r.error);
  }
  const TargetResult* facet = nullptr;
  const TargetResult* null = nullptr;
  for (const TargetResult& r : results) {
    if (r.name == "facet") facet = &r;
    if (r.name == "null") null = &r;
  }
  std::string ratio_json;
  if (facet != nullptr && null != nullptr) {
    const std::vector<std::pair<std::string, double>> ratios = {
        {"sync", facet->SyncMs() / null->SyncMs()},
        {"p50", facet->LatencyMs(0.5) / null->LatencyMs(0.5)},
        {"p99", facet->LatencyMs(0.99) / null->LatencyMs(0.99)},
        {"max", facet->LatencyMs(1.0) / null->LatencyMs(1.0)},
        {"rss_per_stream", facet->RssPerStreamKib() / null->RssPerStreamKib()},
        {"server_cpu_per_change", facet->ServerCpuMs() / null->ServerCpuMs()},
        {"server_cpu_per_cycle", facet->ServerCycleCpuMs() / null->ServerCycleCpuMs()}};
    std::vector<std::string> text;
    std::vector<std::string> json;
    for (const auto& [name, value] : ratios) {
      text.push_back(absl::StrCat(name, " ", FormatNumber(value, 2), "x"));
      json.push_back(absl::StrCat("\"", name, "\":", JsonNumber(value)));
    }
    std::cout << "facet/null: " << absl::StrJoin(text, ", ") << "\n";
    ratio_json = absl::StrCat(",\"ratio\":{", absl::StrJoin(json, ","), "}");
  }
  for (const TargetResult& r : results) {
    const int tiers = RelayTiers(r.name);
    if (facet == nullptr || tiers == 0) continue;
    const double p50 = r.LatencyMs(0.5) / facet->LatencyMs(0.5);
    const double p99 = r.LatencyMs(0.99) / facet->LatencyMs(0.99);
    std::cout << r.name << "/facet: p50 " << FormatNumber(p50, 2) << "x, p99 "
              << FormatNumber(p99, 2) << "x, max "
              << FormatNumber(r.LatencyMs(1.0) / facet->LatencyMs(1.0), 2) << "x\n";
    ratio_json += absl::StrCat(",\"", r.name, "_ratio\":{\"p50\":", JsonNumber(p50),
                               ",\"p99\":", JsonNumber(p99), "}");
  }
  for (const TargetResult& r : results) {
    std::cout << absl::StrFormat(
        "%s: each change exactly once to %d of %d streams (%d missing one, %d duplicated)", r.name,
        r.pushes_exact, r.streams, r.pushes_missing, r.pushes_duplicated);
    if (!r.upstream_streams.empty()) {
      std::cout << "; upstream streams opened per relay tier: "
                << absl::StrJoin(r.upstream_streams, ", ");
    }
    std::cout << "\n";
  }
  std::vector<std::string> targets;
  for (const TargetResult& r : results) {
    targets.push_back(absl::StrCat(
        "\"", r.name, "\":{\"ok\":", r.error.empty() ? "true" : "false",
        ",\"ready_ms\":", JsonNumber(r.ReadyMs()), ",\"sync_ms\":", JsonNumber(r.SyncMs()),
        ",\"first_ms\":", JsonNumber(r.LatencyMs(0.0)),
        ",\"p50_ms\":", JsonNumber(r.LatencyMs(0.5)), ",\"p99_ms\":", JsonNumber(r.LatencyMs(0.99)),
        ",\"max_ms\":", JsonNumber(r.LatencyMs(1.0)), ",\"pushes\":", r.edits.latencies.size(),
        ",\"expected\":", r.edits.expected, ",\"unexpected\":", r.edits.unexpected,
        ",\"rss_before_kib\":", r.rss_before_kib, ",\"rss_after_kib\":", r.rss_after_kib,
        ",\"rss_per_stream_kib\":", JsonNumber(r.RssPerStreamKib()),
        ",\"server_cpu_ms_per_change\":", JsonNumber(r.ServerCpuMs()),
        ",\"server_cpu_ms_per_cycle\":", JsonNumber(r.ServerCycleCpuMs()),
        ",\"client_cpu_ms_per_change\":", JsonNumber(r.ClientCpuMs()),
        ",\"pushes_exact\":", r.pushes_exact, ",\"pushes_missing\":", r.pushes_missing,
        ",\"pushes_duplicated\":", r.pushes_duplicated, ",\"upstream_streams\":[",
        absl::StrJoin(r.upstream_streams, ","), "],\"change_p99_ms\":[",
        absl::StrJoin(r.change_p99_ms, ",",
                      [](std::string* out, double v) { out->append(JsonNumber(v)); }),
        "]}"));
  }
  std::cout << absl::StrCat(
      "{\"streams\":", config.plans.size(), ",\"connections\":", config.load.connections,
      ",\"changes\":", config.changes, ",\"mode\":\"", mode, "\",\"services\":", config.services,
      ",\"server_cpus\":\"", server_cpus, "\",\"client_cpus\":\"", client_cpus, "\",\"targets\":{",
      absl::StrJoin(targets, ","), "}", ratio_json, "}\n");
}

// What the relay-restart scenario saw.
struct RestartResult {
  std::string error;  // Empty when every stream was served again.
  std::optional<absl::Duration> sync;
  absl::Duration down;                       // From the kill to the new relay's ready file.
  std::optional<absl::Duration> all_served;  // From the kill to the last stream's resync.
  std::vector<absl::Duration> resynced;      // Each stream's, from the kill, sorted.
  std::vector<absl::Duration> attempts;      // Each reopening as due, from the kill.
  absl::Duration max_start_lag;              // The client's lag behind the due times.
  int ended = 0;                             // Streams that ended after the kill.
  int distinct = 0;  // Distinct (resource, parameter set) pairs the streams subscribe to.
  // What the restarted relay asked of its upstream, from the upstream's
  // counters (streams, pushes) and its own (requests, subscriptions).
  int64_t upstream_streams = -1;
  int64_t upstream_pushes = -1;
  int64_t upstream_requests = -1;
  int64_t upstream_subscriptions = -1;
  int64_t downstream_streams = -1;  // Streams the restarted relay accepted.
};

// Returns the number of values in each `bucket`-wide bucket from zero to the
// largest value.
std::vector<int> Histogram(const std::vector<absl::Duration>& values, absl::Duration bucket) {
  std::vector<int> counts;
  for (absl::Duration value : values) {
    const size_t index = static_cast<size_t>(std::max<int64_t>(0, value / bucket));
    if (index >= counts.size()) counts.resize(index + 1, 0);
    ++counts[index];
  }
  return counts;
}

// Returns the sample as an integer, or -1 when it could not be read.
int64_t MetricOr(const std::string& admin_address, absl::string_view metric) {
  absl::StatusOr<double> value = ScrapeMetric(admin_address, metric);
  return value.ok() ? static_cast<int64_t>(*value) : -1;
}

// Runs the relay-restart scenario: facet serve, a relay in front of it, the
// streams on the relay (reconnecting with gRPC's backoff); kills the relay,
// starts it again on the same port and waits until every stream has synced
// again.
absl::Status RunRelayRestart(const RunConfig& config, RestartResult& result) {
  std::vector<Server> chain;
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(StartChain("relay", config, &chain));
    LoadOptions load = config.load;
    load.address = chain.back().xds_address;
    load.reconnect = true;
    load.seed = absl::GetFlag(FLAGS_seed);
    std::set<std::map<std::string, std::string>> parameter_sets;
    for (const StreamPlan& plan : config.plans) parameter_sets.insert(plan.params);
    int names = 0;
    for (const Subscription& subscription : load.subscriptions) {
      names += std::max<int>(1, static_cast<int>(subscription.names.size()));
    }
    result.distinct = names * static_cast<int>(parameter_sets.size());

    LoadClient client(load, config.plans);
    RETURN_IF_ERROR(client.Connect(config.deadline));
    absl::StatusOr<absl::Duration> sync = client.OpenAndSync(config.deadline);
    if (!sync.ok()) return sync.status();
    result.sync = *sync;
    absl::SleepFor(std::min(absl::GetFlag(FLAGS_settle), config.deadline - absl::Now()));
    Server& upstream = chain.front();
    const int64_t upstream_streams = MetricOr(upstream.admin_address, "facet_xds_streams_total");
    const int64_t upstream_pushes = MetricOr(upstream.admin_address, "facet_xds_pushes_total");

    const absl::Time killed = absl::Now();
    RETURN_IF_ERROR(chain.back().process->Signal(SIGKILL));
    absl::StatusOr<e2e::ExitStatus> exit = chain.back().process->WaitExit(absl::Seconds(10));
    if (!exit.ok()) return exit.status();
    chain.back().process.reset();
    absl::SleepFor(absl::GetFlag(FLAGS_restart_after));
    absl::StatusOr<Server> restarted = StartAndWait("relay", "relay-restarted", config,
                                                    chain.back().xds_address, upstream.xds_address);
    if (!restarted.ok()) return restarted.status();
    chain.back() = *std::move(restarted);
    result.down = absl::Now() - killed;

    const bool served = client.WaitForResync(config.deadline);
    // Requests that follow the last resync (ACKs) land within the settle.
    absl::SleepFor(std::min(absl::GetFlag(FLAGS_settle), config.deadline - absl::Now()));
    const Server& relay = chain.back();
    result.upstream_streams =
        MetricOr(upstream.admin_address, "facet_xds_streams_total") - upstream_streams;
    result.upstream_pushes =
        MetricOr(upstream.admin_address, "facet_xds_pushes_total") - upstream_pushes;
    result.upstream_requests = MetricOr(relay.admin_address, "facet_relay_upstream_requests_total");
    result.upstream_subscriptions =
        MetricOr(relay.admin_address, "facet_relay_upstream_subscriptions");
    result.downstream_streams = MetricOr(relay.admin_address, "facet_xds_streams_total");
    const ReconnectResults reconnections = client.Reconnections();
    client.Shutdown(config.deadline);
    for (absl::Time at : reconnections.ended) result.ended += at >= killed ? 1 : 0;
    for (absl::Time at : reconnections.attempts) result.attempts.push_back(at - killed);
    std::sort(result.attempts.begin(), result.attempts.end());
    result.max_start_lag = reconnections.max_start_lag;
    int missing = 0;
    for (const std::optional<absl::Time>& at : reconnections.resynced) {
      if (at.has_value()) {
        result.resynced.push_back(*at - killed);
      } else {
        ++missing;
      }
    }
    std::sort(result.resynced.begin(), result.resynced.end());
    if (!served) {
      return absl::DeadlineExceededError(absl::StrCat(
          missing, " of ", config.plans.size(), " streams were not served again by the deadline"));
    }
    result.all_served = result.resynced.back();
    if (result.upstream_streams != 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the restarted relay opened ", result.upstream_streams, " upstream streams, not 1"));
    }
    return absl::OkStatus();
  }();
  absl::Status stopped = StopChain(chain, config.deadline);
  return status.ok() ? stopped : status;
}

// Prints a histogram's non-empty buckets, one line each, with a bar.
void PrintHistogram(absl::string_view title, const std::vector<int>& counts,
                    absl::Duration bucket) {
  std::cout << title << " (" << absl::FormatDuration(bucket) << " buckets, from the kill):\n";
  const int most = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    std::cout << absl::StrFormat("  %7.0f ms %6d %s\n",
                                 absl::ToDoubleMilliseconds(bucket * static_cast<int64_t>(i)),
                                 counts[i], std::string(counts[i] * 50 / most, '#'));
  }
}

void PrintRestartReport(const RestartResult& r, const RunConfig& config) {
  const absl::Duration bucket = absl::GetFlag(FLAGS_histogram_bucket);
  auto quantile = [&](double q) { return LatencyQuantileMs(r.resynced, q); };
  std::cout << absl::StrFormat(
      "\nrelay-restart: %d %s streams over %d connections on a relay in front of facet serve\n",
      config.plans.size(), config.load.delta ? "delta" : "sotw", config.load.connections);
  std::cout << absl::StrFormat(
      "relay down %s ms (kill to ready); %d streams ended, %d reopenings (started up to %s ms "
      "after due); every stream served again after %s ms (p50 %s, p99 %s)\n",
      FormatNumber(absl::ToDoubleMilliseconds(r.down), 0), r.ended, r.attempts.size(),
      FormatNumber(absl::ToDoubleMilliseconds(r.max_start_lag), 0),
      FormatNumber(r.all_served ? absl::ToDoubleMilliseconds(*r.all_served) : NAN, 0),
      FormatNumber(quantile(0.5), 0), FormatNumber(quantile(0.99), 0));
  std::cout << absl::StrFormat(
      "upstream of the restarted relay: %d streams, %d requests, %d subscriptions, %d pushes, for "
      "%d distinct (resource, parameter set) pairs and %d clients (%d streams accepted)\n",
      r.upstream_streams, r.upstream_requests, r.upstream_subscriptions, r.upstream_pushes,
      r.distinct, config.plans.size(), r.downstream_streams);
  const std::vector<int> attempts = Histogram(r.attempts, bucket);
  const std::vector<int> resynced = Histogram(r.resynced, bucket);
  PrintHistogram("reopenings due (backoff drawn)", attempts, bucket);
  PrintHistogram("served again", resynced, bucket);
  if (!r.error.empty()) std::cout << "result: " << r.error << "\n";
  auto ints = [](const std::vector<int>& v) { return absl::StrJoin(v, ","); };
  std::cout << absl::StrCat(
      "{\"scenario\":\"relay-restart\",\"streams\":", config.plans.size(),
      ",\"connections\":", config.load.connections, ",\"ok\":", r.error.empty() ? "true" : "false",
      ",\"sync_ms\":", JsonNumber(r.sync ? absl::ToDoubleMilliseconds(*r.sync) : NAN),
      ",\"down_ms\":", JsonNumber(absl::ToDoubleMilliseconds(r.down)), ",\"all_served_ms\":",
      JsonNumber(r.all_served ? absl::ToDoubleMilliseconds(*r.all_served) : NAN),
      ",\"served_p50_ms\":", JsonNumber(quantile(0.5)),
      ",\"served_p99_ms\":", JsonNumber(quantile(0.99)), ",\"ended\":", r.ended,
      ",\"reopenings\":", r.attempts.size(),
      ",\"max_start_lag_ms\":", JsonNumber(absl::ToDoubleMilliseconds(r.max_start_lag)),
      ",\"upstream\":{\"streams\":", r.upstream_streams, ",\"requests\":", r.upstream_requests,
      ",\"subscriptions\":", r.upstream_subscriptions, ",\"pushes\":", r.upstream_pushes,
      "},\"distinct\":", r.distinct, ",\"downstream_streams\":", r.downstream_streams,
      ",\"bucket_ms\":", JsonNumber(absl::ToDoubleMilliseconds(bucket)),
      ",\"reopenings_histogram\":[", ints(attempts), "],\"served_histogram\":[", ints(resynced),
      "]}\n");
}

void RaiseFileLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int Main() {
  const absl::Time deadline = absl::Now() + absl::GetFlag(FLAGS_deadline);
  RaiseFileLimit();
  RunConfig config;
  config.deadline = deadline;
  config.services = absl::GetFlag(FLAGS_services);
  config.change_service = absl::GetFlag(FLAGS_change_service);
  config.changes = absl::GetFlag(FLAGS_changes);
  const int streams = absl::GetFlag(FLAGS_streams);
  config.load.connections = absl::GetFlag(FLAGS_connections);
  config.load.delta = absl::GetFlag(FLAGS_delta);
  config.load.locators = absl::GetFlag(FLAGS_locators);
  config.load.resource_in_sotw = absl::GetFlag(FLAGS_resource_in_sotw);
  const std::string scenario = absl::GetFlag(FLAGS_scenario);
  const bool restart = scenario == "relay-restart";
  const std::vector<std::string> targets =
      restart ? std::vector<std::string>{"relay"}
              : std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_targets), ','));
  const std::string null_push = absl::GetFlag(FLAGS_null_push);
  auto dists = ParseDistributions(absl::GetFlag(FLAGS_param));
  const std::string service = ServiceName(config.change_service);
  auto subscriptions = ParseResources(absl::GetFlag(FLAGS_resources), service);
  std::string usage_error;
  if (!dists.ok()) usage_error = std::string(dists.status().message());
  if (!subscriptions.ok()) usage_error = std::string(subscriptions.status().message());
  if (streams < 1 || config.load.connections < 1 || config.services < 1 || config.changes < 1 ||
      config.change_service < 0 || config.change_service >= config.services ||
      absl::GetFlag(FLAGS_change_gap) < absl::ZeroDuration()) {
    usage_error =
        "--streams, --connections, --services and --changes must be positive, "
        "--change-service below --services, and --change-gap not negative";
  }
  for (const std::string& target : targets) {
    if (target != "facet" && target != "null" && RelayTiers(target) == 0) {
      usage_error = "--targets: facet, null, relay and/or relay2";
    }
  }
  if (null_push != "all" && null_push != "selected") usage_error = "--null-push: all or selected";
  const bool interleave = absl::GetFlag(FLAGS_interleave);
  if (interleave && std::count_if(targets.begin(), targets.end(),
                                  [](const std::string& target) { return target != "null"; }) > 1) {
    usage_error = "--interleave: at most one target other than null (they would share the world)";
  }
  if (interleave && restart) usage_error = "--interleave: not with --scenario=relay-restart";
  if (scenario != "change" && !restart) usage_error = "--scenario: change or relay-restart";
  if (absl::GetFlag(FLAGS_restart_after) < absl::ZeroDuration() ||
      absl::GetFlag(FLAGS_histogram_bucket) <= absl::ZeroDuration()) {
    usage_error = "--restart-after must not be negative and --histogram-bucket must be positive";
  }
  if (const absl::Duration timeout = absl::GetFlag(FLAGS_server_keepalive_timeout);
      timeout < absl::ZeroDuration() || timeout > absl::Hours(24)) {
    usage_error = "--server-keepalive-timeout must be from 0 to 24h";
  }
  if (const absl::Duration timeout = absl::GetFlag(FLAGS_stop_timeout);
      timeout < absl::Seconds(1) || timeout > absl::Hours(1)) {
    usage_error = "--stop-timeout must be from 1s to 1h";
  }
  if (subscriptions.ok() &&
      std::none_of(subscriptions->begin(), subscriptions->end(), [&](const Subscription& s) {
        return absl::EndsWith(s.type_url, ".RouteConfiguration") &&
               std::find(s.names.begin(), s.names.end(), service) != s.names.end();
      })) {
    usage_error = absl::StrCat("--resources must include the changed route, rds:", service);
  }
  for (const auto& [flag, text, cpus] :
       {std::tuple("--server-cpus", absl::GetFlag(FLAGS_server_cpus), &config.server_cpus),
        std::tuple("--client-cpus", absl::GetFlag(FLAGS_client_cpus), &config.client_cpus)}) {
    if (text.empty()) continue;
    absl::StatusOr<std::vector<int>> parsed = e2e::ParseCpuList(text);
    if (!parsed.ok()) {
      usage_error = absl::StrCat(flag, ": ", parsed.status().message());
    } else {
      *cpus = *std::move(parsed);
    }
  }
  if (!usage_error.empty()) {
    std::cerr << "facet_load: " << usage_error << "\n";
    return 2;
  }
  // Before this client starts a thread, so that every one of them inherits it.
  if (!config.client_cpus.empty()) {
    // Servers not pinned keep the CPUs this process had, not the client's.
    if (config.server_cpus.empty()) {
      absl::StatusOr<std::vector<int>> own = e2e::CallingThreadCpus();
      if (!own.ok()) {
        std::cerr << "facet_load: --client-cpus: " << own.status().message() << "\n";
        return 2;
      }
      config.server_cpus = *std::move(own);
    }
    if (absl::Status pinned = e2e::PinCallingThread(config.client_cpus); !pinned.ok()) {
      std::cerr << "facet_load: --client-cpus: " << pinned.message() << "\n";
      return 2;
    }
  }
  config.load.subscriptions = *subscriptions;
  config.load.watched_type_url = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
  config.load.watched_name = service;
  config.plans = DrawPlans(*dists, streams, absl::GetFlag(FLAGS_seed));

  config.work_dir = absl::GetFlag(FLAGS_work_dir);
  const bool own_work_dir = config.work_dir.empty();
  if (own_work_dir) {
    char dir_template[] = "/tmp/facet-load-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) {
      std::cerr << "facet_load: cannot create a work directory under /tmp\n";
      return 1;
    }
    config.work_dir = dir_template;
  }
  std::filesystem::create_directories(config.work_dir);
  config.world_dir = absl::GetFlag(FLAGS_world);
  if (config.world_dir.empty() &&
      std::any_of(targets.begin(), targets.end(),
                  [](const std::string& target) { return target != "null"; })) {
    config.world_dir = absl::StrCat(config.work_dir, "/world");
    std::filesystem::remove_all(config.world_dir);
    if (absl::Status written = WriteWorld(config.world_dir, config.services); !written.ok()) {
      std::cerr << "facet_load: " << written.message() << "\n";
      return 1;
    }
  }
  std::cerr << "facet_load: work directory " << config.work_dir << "\n";

  bool ok = true;
  if (restart) {
    std::cerr << "facet_load: restarting a relay under " << streams << " streams\n";
    RestartResult result;
    if (absl::Status status = RunRelayRestart(config, result); !status.ok()) {
      result.error = std::string(status.message());
      ok = false;
    }
    PrintRestartReport(result, config);
  }
  std::vector<TargetResult> results;
  for (const std::string& target : restart ? std::vector<std::string>{} : targets) {
    TargetResult& result = results.emplace_back();
    result.name = target;
    result.streams = streams;
  }
  if (interleave && !restart) {
    std::cerr << "facet_load: measuring " << absl::StrJoin(targets, " and ") << ", interleaved\n";
    ok = RunInterleaved(targets, config, results) && ok;
  } else {
    for (TargetResult& result : results) {
      std::cerr << "facet_load: measuring " << result.name << "\n";
      if (absl::Status status = RunTargetSteps(result.name, config, result); !status.ok()) {
        result.error = std::string(status.message());
        ok = false;
      }
    }
  }
  if (!restart) PrintReport(results, config);
  if (ok && own_work_dir) {
    std::filesystem::remove_all(config.work_dir);
  } else if (!ok) {
    std::cerr << "facet_load: server logs are in " << config.work_dir << "\n";
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace facet::load

int main(int argc, char** argv) {
  // As in facet serve: Debian's abseil would otherwise check every Mutex
  // acquisition for lock-order cycles, a graph update per lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage("facet_load [--streams N] [--connections C] [--targets facet,null]");
  facet::e2e::ParseDashedCommandLine(argc, argv);
  return facet::load::Main();
}
