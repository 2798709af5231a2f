// Benchmarks of the admin port's /clients JSON: 10,000 connected gRPC
// clients, each holding a listener, a route, a cluster and an endpoint
// assignment (the bound page /clients serves, and the whole document).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "xds_server/ads/client_status.h"
#include "xds_server/ads/csds_service.h"
#include "xds_server/resources/resource_type.h"

namespace facet::xds {
namespace {

// A report of `clients` clients as AdsService::ClientStatuses gives it: one
// in ten holds a resource it has not ACKed yet, one in a hundred a NACKed one.
ClientStatusReport Report(int clients) {
  ClientStatusReport report;
  const std::string version(16, 'a');
  auto detail = std::make_shared<const std::string>(
      "cluster greeter-prod: unsupported lb_policy LEAST_REQUEST");
  for (int i = 0; i < clients; ++i) {
    ClientStatus client;
    client.stream_id = static_cast<uint64_t>(i + 1);
    client.peer = absl::StrCat("ipv4:10.0.", i / 250, ".", i % 250, ":", 40000 + i % 20000);
    client.node.set_id(absl::StrCat("greeter-client-", i));
    client.node.set_user_agent_name("gRPC C-core");
    client.node.set_user_agent_version("1.51.1");
    const std::string env = i % 2 == 0 ? "prod" : "staging";
    (*client.node.mutable_metadata()->mutable_fields())["env"].set_string_value(env);
    client.parameters = {{"env", env}};
    const std::pair<const ResourceType*, std::string> held[] = {
        {&ListenerType(), "greeter"},
        {&RouteConfigurationType(), "greeter"},
        {&ClusterType(), "greeter-" + env},
        {&ClusterLoadAssignmentType(), "greeter-" + env}};
    for (const auto& [type, name] : held) {
      ResourceStatus resource;
      resource.type_url = type->type_url();
      resource.name = name;
      resource.version = version;
      resource.state = ResourceStatus::State::kAcked;
      resource.object = absl::StrCat("demo/", name, "-", type->alias());
      resource.variant = env;
      resource.constraints = absl::StrCat("env=", env);
      client.resources.push_back(std::move(resource));
    }
    if (i % 10 == 0) {
      client.resources[2].state = ResourceStatus::State::kRequested;
      client.resources[2].stale_since = absl::FromUnixSeconds(1'800'000'000);
    }
    if (i % 100 == 0) {
      client.resources[2].state = ResourceStatus::State::kNacked;
      client.resources[2].nacked_version = std::string(16, 'b');
      client.resources[2].error_detail = detail;
    }
    report.clients.push_back(std::move(client));
  }
  return report;
}

// What /clients answers: the first page, cut at its byte bound.
void BM_ClientsJsonPage(benchmark::State& state) {
  const ClientStatusReport report = Report(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = ReportToJson(report, ClientStatusService::kDefaultMaxResponseBytes - 1);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ClientsJsonPage)->Arg(10'000)->Unit(benchmark::kMillisecond);

// Every client in one document, without a bound: what paging avoids.
void BM_ClientsJsonWhole(benchmark::State& state) {
  const ClientStatusReport report = Report(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = ReportToJson(report);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
  state.counters["bytes_per_client"] = static_cast<double>(bytes) / state.range(0);
}
BENCHMARK(BM_ClientsJsonWhole)->Arg(10'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace facet::xds

BENCHMARK_MAIN();
