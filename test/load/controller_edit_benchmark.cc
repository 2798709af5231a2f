// `facet controller`'s path from a watch event to a published snapshot, in
// the synthetic world of docs/performance.md: the Kubernetes source over a
// fake API client (events delivered as a watch would), the incremental
// builder, the snapshot store. One route edit per iteration, alternating
// between two revisions; the time is from the event to the publication of
// the snapshot that carries it.
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "controller/kubernetes/source/kube_source.h"
#include "test/fakes/fake_kube_client.h"
#include "test/load/world.h"
#include "yaml-cpp/yaml.h"

namespace facet {
namespace {

constexpr char kResources[] = "/apis/facet.dev/v1alpha1/xdsresources";

// The route document of service `index`, edited or not.
YAML::Node RouteOf(int index, bool edited) {
  for (const YAML::Node& document : YAML::LoadAll(load::ServiceManifest(index, edited))) {
    if (document["spec"]["type"].as<std::string>() == "route") return document;
  }
  return YAML::Node();
}

void BM_ControllerWatchEventToSnapshot(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  testing::FakeKubeClient client;
  for (int i = 0; i < services; ++i) {
    for (const YAML::Node& document : YAML::LoadAll(load::ServiceManifest(i, false))) {
      client.Put(kResources, document, /*deliver=*/false);
    }
  }
  xds::SnapshotStore store;
  absl::Mutex mu;
  int64_t published = 0;
  auto watch = store.Watch([&](std::shared_ptr<const xds::Snapshot>) {
    absl::MutexLock lock(&mu);
    ++published;
  });
  controller::KubeSource::Options options;
  controller::KubeSource source(client, store, nullptr, /*is_leader=*/[] { return false; },
                                options);
  source.Start();
  while (!source.ready()) absl::SleepFor(absl::Milliseconds(10));
  const int service = services / 2;
  const YAML::Node revisions[2] = {RouteOf(service, true), RouteOf(service, false)};
  int64_t i = 0;
  for (auto _ : state) {
    int64_t before;
    {
      absl::MutexLock lock(&mu);
      before = published;
    }
    const absl::Time start = absl::Now();
    client.Put(kResources, revisions[i++ % 2]);
    {
      absl::MutexLock lock(&mu);
      auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return published > before; };
      if (!mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10))) {
        state.SkipWithError("no snapshot published");
        break;
      }
    }
    state.SetIterationTime(absl::ToDoubleSeconds(absl::Now() - start));
  }
  state.counters["objects"] = services * 6;
  source.Stop();
}
BENCHMARK(BM_ControllerWatchEventToSnapshot)
    ->Arg(20)
    ->Arg(2000)
    ->UseManualTime()
    ->Iterations(50)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace facet

BENCHMARK_MAIN();
