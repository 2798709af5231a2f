// Snapshot building at the scale of the synthetic world in
// docs/performance.md: 2,000 services of six objects each (a listener, a
// four-variant route over env x version, two EDS clusters, two endpoint
// sets), 12,000 objects.
#include <fstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/incremental_builder.h"
#include "xds_server/snapshot/test_objects.h"

namespace facet::xds {
namespace {

ResourceObject Object(const std::string& name, const std::string& type,
                      const std::vector<std::pair<std::string, std::string>>& variants) {
  return testing::MakeObject("bench", name, type, name, variants);
}

std::string Listener(const std::string& route) {
  return R"({api_listener: {api_listener: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, rds: {route_config_name: )" +
         route +
         R"(, config_source: {ads: {}}}, http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}})";
}

std::string RouteTo(const std::string& cluster) {
  return R"({virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {prefix: ""}, route: {cluster: )" +
         cluster + "}}]}]}";
}

std::string Endpoints(int port) {
  return "{endpoints: [{locality: {zone: a}, load_balancing_weight: 1, lb_endpoints: [{endpoint: "
         "{address: {socket_address: {address: 10.0.0.1, port_value: " +
         std::to_string(port) + "}}}}]}]}";
}

ResourceObject Route(const std::string& s, const std::string& prod_v1_cluster) {
  return Object(s + "-route", "route",
                {{"{env: prod, version: v1}", RouteTo(prod_v1_cluster)},
                 {"{env: prod, version: {not: v1}}", RouteTo(s + "-b")},
                 {"{env: {not: prod}, version: v1}", RouteTo(s + "-a")},
                 {"{env: {not: prod}, version: {not: v1}}", RouteTo(s + "-b")}});
}

std::vector<ResourceObject> World(int services) {
  std::vector<ResourceObject> out;
  for (int i = 0; i < services; ++i) {
    const std::string s = "svc" + std::to_string(i);
    out.push_back(Object(s, "listener", {{"", Listener(s + "-route")}}));
    out.push_back(Route(s, s + "-a"));
    for (const char* c : {"-a", "-b"}) {
      out.push_back(Object(s + c, "cluster", {{"", "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"}}));
      ResourceObject endpoints = Object(s + c, "endpoint", {{"", Endpoints(8000 + i % 1000)}});
      endpoints.ref.name += "-endpoints";
      out.push_back(std::move(endpoints));
    }
  }
  return out;
}

// Returns this process's resident set size in bytes (Linux).
double ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  }
  return 0;
}

// A whole build of the world (facet validate; a replica's first build).
// `builder_rss_per_object`: what the builder and its snapshot keep, once the
// objects handed to it are gone.
void BM_WholeBuild(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  double kept = 0;
  size_t objects = 0;
  for (auto _ : state) {
    std::vector<ResourceObject> world = World(services);
    objects = world.size();
    const double before = ResidentBytes();
    IncrementalBuilder builder{BuildOptions{}};
    for (ResourceObject& object : world) builder.Upsert(std::move(object));
    world.clear();
    IncrementalBuilder::Result result = builder.Build();
    benchmark::DoNotOptimize(result.snapshot);
    kept = ResidentBytes() - before;
  }
  state.counters["objects"] = static_cast<double>(objects);
  state.counters["builder_rss_per_object"] = kept / static_cast<double>(objects);
}
BENCHMARK(BM_WholeBuild)->Arg(20)->Arg(2000)->Unit(benchmark::kMillisecond)->Iterations(1);

// One route edited among all objects: validate it, re-check it, derive the
// next snapshot. Alternates between two revisions so every build changes.
void BM_IncrementalRouteEdit(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  IncrementalBuilder builder{BuildOptions{}};
  for (const ResourceObject& object : World(services)) builder.Upsert(object);
  builder.Build();
  const std::string s = "svc" + std::to_string(services / 2);
  const ResourceObject revisions[2] = {Route(s, s + "-b"), Route(s, s + "-a")};
  int64_t i = 0;
  for (auto _ : state) {
    builder.Upsert(revisions[i++ % 2]);
    IncrementalBuilder::Result result = builder.Build();
    if (!result.snapshot_changed || result.validated_objects != 1) state.SkipWithError("no change");
  }
  state.counters["objects"] = static_cast<double>(builder.object_count());
}
BENCHMARK(BM_IncrementalRouteEdit)->Arg(20)->Arg(2000)->Unit(benchmark::kMicrosecond);

// One endpoint set edited: its cluster's references are re-checked too.
void BM_IncrementalEndpointEdit(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  IncrementalBuilder builder{BuildOptions{}};
  for (const ResourceObject& object : World(services)) builder.Upsert(object);
  builder.Build();
  const std::string s = "svc" + std::to_string(services / 2);
  ResourceObject revisions[2] = {Object(s + "-a", "endpoint", {{"", Endpoints(1)}}),
                                 Object(s + "-a", "endpoint", {{"", Endpoints(2)}})};
  for (ResourceObject& r : revisions) r.ref.name += "-endpoints";
  int64_t i = 0;
  for (auto _ : state) {
    builder.Upsert(revisions[i++ % 2]);
    IncrementalBuilder::Result result = builder.Build();
    if (!result.snapshot_changed) state.SkipWithError("no change");
  }
}
BENCHMARK(BM_IncrementalEndpointEdit)->Arg(20)->Arg(2000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace facet::xds

BENCHMARK_MAIN();
