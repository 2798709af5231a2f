// One edit in a world of S Services, from the change a source records to
// the snapshot in the SnapshotStore, the way a source does it: Upsert into
// the GatewayFrontEnd, Flush into the builder, then the Publisher's Build
// and publication. Each Service has one port (grpc 7070) and one
// EndpointSlice; every tenth one is the parent of a GRPCRoute that sends
// 90/10 to itself and the next Service. Edits alternate between two
// revisions, so every iteration changes what is served (the Service edit
// changes a label only, and publishes nothing).
//
// BM_XdsResourceEndpointsEdit is the same number of Services written as
// XdsResources (Listener, RouteConfiguration, Cluster, and a
// ClusterLoadAssignment with `endpointsFrom`), where a slice edit refills
// one assignment from the slices, as the Kubernetes source does.
//
// Counters, per edit: `translated` (units the front end translated:
// Service ports, assignments, RouteConfigurations, routes resolved),
// `upserted` (objects handed to the builder), `validated` (objects the
// builder validated anew). Figures: docs/performance.md.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "controller/gateway/front_end/gateway_front_end.h"
#include "controller/gateway/model/gateway_parser.h"
#include "controller/gateway/translate/service_port.h"
#include "controller/kubernetes/endpoints/endpoint_slices.h"
#include "controller/sources/publisher/publisher.h"
#include "spdlog/spdlog.h"
#include "xds_server/snapshot_store/snapshot_store.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {
namespace {

constexpr char kNamespace[] = "load";
// The Service whose objects the edits change: a route's parent, mid-world.
int Edited(int services) { return services / 20 * 10; }

std::string ServiceName(int index) { return absl::StrFormat("svc-%05d", index); }

GatewayObject Parse(const std::string& yaml) {
  return ParseGatewayObject(YAML::Load(yaml), "benchmark.yaml:1", kNamespace);
}

GatewayObject ServiceObject(int index, int revision = 0) {
  return Parse(absl::StrCat("apiVersion: v1\nkind: Service\nmetadata: {name: ", ServiceName(index),
                            ", namespace: ", kNamespace, ", generation: ", revision + 1,
                            ", labels: {revision: r", revision,
                            "}}\nspec: {ports: [{name: grpc, port: 7070}]}"));
}

std::string SliceYaml(int index, int revision = 0) {
  return absl::StrCat(
      "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: ", ServiceName(index),
      "-a, namespace: ", kNamespace, ", labels: {kubernetes.io/service-name: ", ServiceName(index),
      "}}\naddressType: IPv4\nports: [{name: grpc, port: 9000, protocol: TCP}]\n"
      "endpoints: [{addresses: [10.",
      index / 250, ".", index % 250, ".", 1 + revision, "], conditions: {ready: true}}]");
}

GatewayObject RouteObject(int index, int services, int revision = 0) {
  const int weight = revision == 0 ? 90 : 80;
  return Parse(absl::StrCat(
      "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: route-",
      ServiceName(index), ", namespace: ", kNamespace, ", generation: ", revision + 1,
      "}\nspec: {parentRefs: [{group: '', kind: Service, name: ", ServiceName(index),
      ", port: 7070}], rules: [{matches: [{method: {service: Echo}}], backendRefs: [{name: ",
      ServiceName(index), ", port: 7070, weight: ", weight, "}, {name: ",
      ServiceName((index + 1) % services), ", port: 7070, weight: ", 100 - weight, "}]}]}"));
}

// The front end, the publisher and the store of a world of `services`.
class GatewayWorld {
 public:
  explicit GatewayWorld(int services) : publisher_(store_, {}) {
    for (int i = 0; i < services; ++i) {
      front_end_.Upsert(ServiceObject(i));
      front_end_.Upsert(Parse(SliceYaml(i)));
      if (i % 10 == 0) front_end_.Upsert(RouteObject(i, services));
    }
    Publish();
  }

  // Flushes what was upserted, builds and publishes; adds this edit's work
  // to the counters.
  void Publish() {
    const FlushStats stats = front_end_.Flush(publisher_.builder());
    const Publisher::Outcome outcome = publisher_.BuildAndPublish(absl::Now());
    front_end_.Reconcile(publisher_.builder(), outcome.result);
    translated_ += stats.service_ports + stats.endpoints + stats.parents + stats.routes;
    upserted_ += static_cast<int64_t>(stats.upserted.size() + stats.removed.size());
    validated_ += outcome.result.validated_objects;
    published_ = outcome.published;
  }

  GatewayFrontEnd& front_end() { return front_end_; }
  bool published() const { return published_; }

  // Sets the counters of the edits since the world was made.
  void Report(benchmark::State& state, int services) {
    state.counters["translated"] = benchmark::Counter(
        static_cast<double>(translated_ - initial_translated_), benchmark::Counter::kAvgIterations);
    state.counters["upserted"] = benchmark::Counter(
        static_cast<double>(upserted_ - initial_upserted_), benchmark::Counter::kAvgIterations);
    state.counters["validated"] = benchmark::Counter(
        static_cast<double>(validated_ - initial_validated_), benchmark::Counter::kAvgIterations);
    state.counters["services"] = services;
  }

  void StartCounting() {
    initial_translated_ = translated_;
    initial_upserted_ = upserted_;
    initial_validated_ = validated_;
  }

 private:
  xds::SnapshotStore store_;
  Publisher publisher_;
  GatewayFrontEnd front_end_;
  int64_t translated_ = 0, upserted_ = 0, validated_ = 0;
  int64_t initial_translated_ = 0, initial_upserted_ = 0, initial_validated_ = 0;
  bool published_ = false;
};

// Runs `edit(revision)` then Publish() per iteration; each must publish a
// snapshot when `publishes`.
template <typename Edit>
void RunEdits(benchmark::State& state, Edit edit, bool publishes = true) {
  const int services = static_cast<int>(state.range(0));
  GatewayWorld world(services);
  world.StartCounting();
  int revision = 0;
  for (auto _ : state) {
    revision = 1 - revision;
    edit(world.front_end(), services, revision);
    world.Publish();
    if (publishes && !world.published()) {
      state.SkipWithError("the edit published no snapshot");
      break;
    }
  }
  world.Report(state, services);
}

// (a) An EndpointSlice edit: the Service's assignment.
void BM_GatewaySliceEdit(benchmark::State& state) {
  RunEdits(state, [](GatewayFrontEnd& front_end, int services, int revision) {
    front_end.Upsert(Parse(SliceYaml(Edited(services), revision)));
  });
}

// (c) A GRPCRoute edit (its weights): the RouteConfiguration of its parent.
void BM_GatewayRouteEdit(benchmark::State& state) {
  RunEdits(state, [](GatewayFrontEnd& front_end, int services, int revision) {
    front_end.Upsert(RouteObject(Edited(services), services, revision));
  });
}

// (c) A Service edit (a label): its port, and the routes naming it as
// parent or backend, translated again; what is served stays, so nothing is
// published.
void BM_GatewayServiceEdit(benchmark::State& state) {
  RunEdits(
      state,
      [](GatewayFrontEnd& front_end, int services, int revision) {
        front_end.Upsert(ServiceObject(Edited(services), revision));
      },
      /*publishes=*/false);
}

// (b) The XdsResource world: per Service the four objects a Service port
// generates, written as XdsResources, the assignment by `endpointsFrom`.
void BM_XdsResourceEndpointsEdit(benchmark::State& state) {
  const int services = static_cast<int>(state.range(0));
  xds::SnapshotStore store;
  Publisher publisher(store, {});
  const TranslateOptions options;
  xds::EndpointsFrom from;
  const int edited_index = Edited(services);
  from.service = ServiceName(edited_index);
  from.port_name = "grpc";
  from.match_name_only = true;
  xds::ResourceObject edited;
  for (int i = 0; i < services; ++i) {
    const GatewayObject service = ServiceObject(i);
    const std::vector<YAML::Node> slices = {YAML::Load(SliceYaml(i))};
    ServicePortObjects objects = TranslateServicePort(
        service, std::get<ServiceInfo>(service.spec).ports.at(0), slices, options);
    for (xds::ResourceObject* object :
         {&objects.listener, &objects.route_configuration, &objects.cluster, &objects.endpoints}) {
      object->ref.kind = xds::kXdsResourceKind;
      object->generated_from.reset();
    }
    xds::EndpointsFrom own = from;
    own.service = ServiceName(i);
    objects.endpoints.spec->variants.at(0).endpoints_from = own;
    if (i == edited_index) edited = objects.endpoints;
    for (xds::ResourceObject* object :
         {&objects.listener, &objects.route_configuration, &objects.cluster, &objects.endpoints}) {
      publisher.builder().Upsert(std::move(*object));
    }
  }
  publisher.BuildAndPublish(absl::Now());
  int64_t validated = 0;
  int revision = 0;
  for (auto _ : state) {
    revision = 1 - revision;
    // The slice event: the variant's assignment from the Service's slices.
    controller::SlicedEndpoints sliced = controller::ClusterLoadAssignmentFromSlices(
        {YAML::Load(SliceYaml(edited_index, revision))}, from, "spec.variants[0].endpointsFrom");
    xds::ResourceObject object = edited;
    object.spec->variants.at(0).resource = std::move(sliced.resource);
    publisher.builder().Upsert(std::move(object));
    const Publisher::Outcome outcome = publisher.BuildAndPublish(absl::Now());
    validated += outcome.result.validated_objects;
    if (!outcome.published) {
      state.SkipWithError("the edit published no snapshot");
      break;
    }
  }
  state.counters["translated"] = 1;  // The assignment from the slices.
  state.counters["upserted"] = 1;
  state.counters["validated"] =
      benchmark::Counter(static_cast<double>(validated), benchmark::Counter::kAvgIterations);
  state.counters["services"] = services;
}

BENCHMARK(BM_GatewaySliceEdit)->Arg(20)->Arg(2000)->Iterations(50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_XdsResourceEndpointsEdit)
    ->Arg(20)
    ->Arg(2000)
    ->Iterations(50)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GatewayRouteEdit)->Arg(20)->Arg(2000)->Iterations(50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GatewayServiceEdit)->Arg(20)->Arg(2000)->Iterations(50)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace facet::controller::gateway

// The publisher's line per build is left out of the output (and the time).
int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
