// Snapshot building at the scale of the synthetic world in
// docs/performance.md: 2,000 services of six objects each (a listener, a
// four-variant route over env x version, two EDS clusters, two endpoint
// sets), 12,000 objects.
#include <algorithm>
#include <cstdint>
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

// An endpoint object with 1,024 variants that is rejected: `overlap`, the
// partition {env: v0} ... {env: v1023} with one value repeated (found by
// hashing); otherwise {env: vN, version: {not: vN}}, which only the general
// search decides and which runs out of its search budget.
// Object `n` uses keys env<n> and version<n>, so that no two share an outcome.
ResourceObject RejectedPartition(int n, bool overlap) {
  const std::string env = "env" + std::to_string(n), version = "version" + std::to_string(n);
  std::vector<std::pair<std::string, std::string>> variants;
  for (int i = 0; i < 1024; ++i) {
    const std::string v = "v" + std::to_string(overlap && i == 1000 ? 0 : i);
    variants.emplace_back(overlap ? "{" + env + ": " + v + "}"
                                  : "{" + env + ": " + v + ", " + version + ": {not: " + v + "}}",
                          Endpoints(1));
  }
  return Object("rejected-" + std::to_string(n), "endpoint", variants);
}

// The issue's figure: three rejected 1,024-variant objects among all others,
// then one endpoint edit per iteration. The rejected objects' variant sets
// are decided once (the first build, outside the timing) and never again.
void BM_EditAfterThreeRejectedPartitions(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  const bool overlap = state.range(1) != 0;
  IncrementalBuilder builder{BuildOptions{}};
  for (const ResourceObject& object : World(services)) builder.Upsert(object);
  for (int n = 0; n < 3; ++n) builder.Upsert(RejectedPartition(n, overlap));
  IncrementalBuilder::Result first = builder.Build();
  if (builder.rejected_count() != 3) state.SkipWithError("expected three rejected objects");
  const std::string s = "svc" + std::to_string(services / 2);
  ResourceObject revisions[2] = {Object(s + "-a", "endpoint", {{"", Endpoints(1)}}),
                                 Object(s + "-a", "endpoint", {{"", Endpoints(2)}})};
  for (ResourceObject& r : revisions) r.ref.name += "-endpoints";
  int64_t i = 0;
  int64_t searches = 0;
  for (auto _ : state) {
    builder.Upsert(revisions[i++ % 2]);
    IncrementalBuilder::Result result = builder.Build();
    searches += result.variant_set_searches;
    if (!result.snapshot_changed) state.SkipWithError("no change");
  }
  state.counters["first_build_search_steps"] = static_cast<double>(first.search_steps);
  state.counters["searches_per_edit"] =
      static_cast<double>(searches) / static_cast<double>(std::max<int64_t>(i, 1));
}
BENCHMARK(BM_EditAfterThreeRejectedPartitions)
    ->Args({20, 1})
    ->Args({20, 0})
    ->Args({2000, 0})
    ->Unit(benchmark::kMicrosecond);

// The first build of three such objects alone: what deciding them costs once.
void BM_BuildThreeRejectedPartitions(benchmark::State& state) {
  const bool overlap = state.range(0) != 0;
  std::vector<ResourceObject> objects;
  for (int n = 0; n < 3; ++n) objects.push_back(RejectedPartition(n, overlap));
  for (auto _ : state) {
    IncrementalBuilder builder{BuildOptions{}};
    for (const ResourceObject& object : objects) builder.Upsert(object);
    IncrementalBuilder::Result result = builder.Build();
    if (builder.rejected_count() != 3) state.SkipWithError("expected three rejected objects");
    state.counters["search_steps"] = static_cast<double>(result.search_steps);
  }
}
BENCHMARK(BM_BuildThreeRejectedPartitions)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace facet::xds

BENCHMARK_MAIN();
