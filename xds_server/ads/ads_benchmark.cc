// Benchmarks of the serving path: building snapshots, pushing a variant
// change to many streams, and memoized selection.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "xds_server/ads/stream_state.h"
#include "xds_server/ads/wire.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/snapshot/builder.h"

// Heap allocations made through operator new (for "allocations_per_ack").
std::atomic<int64_t> g_allocations{0};

// Not inlined: GCC would otherwise pair malloc with callers' deletes and warn.
[[gnu::noinline]] void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;

ResourceObject Route(int index, const std::string& prod_cluster) {
  ResourceObject object;
  object.ref = {kXdsResourceKind, "bench", absl::StrCat("route-", index)};
  ResourceSpec spec;
  spec.type = "route";
  spec.name = absl::StrCat("route-", index);
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"{env: prod}", prod_cluster}, {"{env: {not: prod}}", "c"}};
  for (const auto& [match, cluster] : variants) {
    VariantSpec variant;
    variant.label = match;
    variant.constraints = *CompileMatch(YAML::Load(match), "match");
    variant.resource = YAML::Load(absl::StrCat(
        "{virtual_hosts: [{name: v, domains: [greeter], routes: [{match: {prefix: \"\"}, route: "
        "{cluster: ", cluster, "}}]}]}"));
    spec.variants.push_back(std::move(variant));
  }
  object.spec = std::move(spec);
  return object;
}

ResourceObject Cluster(const std::string& name) {
  ResourceObject object;
  object.ref = {kXdsResourceKind, "bench", "cluster-" + name};
  ResourceSpec spec;
  spec.type = "cluster";
  spec.name = name;
  VariantSpec variant;
  variant.label = "all";
  variant.resource = YAML::Load("{type: LOGICAL_DNS}");
  spec.variants.push_back(std::move(variant));
  object.spec = std::move(spec);
  return object;
}

// An object of `type` named `name` with one variant, `resource`.
ResourceObject Single(const std::string& type, const std::string& name,
                      const std::string& resource) {
  ResourceObject object;
  object.ref = {kXdsResourceKind, "bench", absl::StrCat(type, "-", name)};
  ResourceSpec spec;
  spec.type = type;
  spec.name = name;
  VariantSpec variant;
  variant.label = "all";
  variant.resource = YAML::Load(resource);
  spec.variants.push_back(std::move(variant));
  object.spec = std::move(spec);
  return object;
}

std::vector<ResourceObject> Objects(int routes, const std::string& prod_cluster) {
  std::vector<ResourceObject> objects = {
      Cluster("a"), Cluster("b"), Cluster("c"),
      Single("listener", "listener-0",
             "{api_listener: {api_listener: {'@type': "
             "'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."
             "HttpConnectionManager', rds: {route_config_name: route-0, config_source: {ads: "
             "{}}}, http_filters: [{name: router, typed_config: {'@type': "
             "'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router'}}]}}}"),
      Single("endpoints", "a", "{cluster_name: a}"), Single("endpoints", "b", "{cluster_name: b}")};
  for (int i = 0; i < routes; ++i) objects.push_back(Route(i, i == 0 ? prod_cluster : "a"));
  return objects;
}

std::shared_ptr<const Snapshot> Build(const std::vector<ResourceObject>& objects,
                                      const Snapshot* previous = nullptr) {
  BuildOptions options;
  options.authority_policy = BuildOptions::AuthorityPolicy::kWarnUndeclared;
  return BuildSnapshot(objects, {}, previous, options).snapshot;
}

// Subscribes `s` to `names` of `type` with node metadata env=`env`, as a
// SotW client does, and ACKs every response.
void SubscribeAndAck(StreamState& s, const ResourceType& type, const std::vector<std::string>& names,
                     const std::string& env) {
  DiscoveryRequest request;
  request.set_type_url(type.type_url());
  for (const std::string& name : names) request.add_resource_names(name);
  (*request.mutable_node()->mutable_metadata()->mutable_fields())["env"].set_string_value(env);
  RequestOutcome outcome;
  (void)s.OnRequest(request, &outcome);
  DiscoveryResponse response;
  PushRecord record;
  while (s.NextResponse(&response, &record)) {
    DiscoveryRequest ack = request;
    ack.set_version_info(response.version_info());
    ack.set_response_nonce(response.nonce());
    (void)s.OnRequest(ack, &outcome);
  }
}

// The same for a delta client: subscribes, then ACKs every response.
void DeltaSubscribeAndAck(StreamState& s, const ResourceType& type,
                          const std::vector<std::string>& names, const std::string& env) {
  DeltaDiscoveryRequest request;
  request.set_type_url(type.type_url());
  for (const std::string& name : names) request.add_resource_names_subscribe(name);
  (*request.mutable_node()->mutable_metadata()->mutable_fields())["env"].set_string_value(env);
  RequestOutcome outcome;
  (void)s.OnRequest(request, &outcome);
  DeltaResponse response;
  PushRecord record;
  while (s.NextResponse(&response, &record)) {
    DeltaDiscoveryRequest ack;
    ack.set_type_url(type.type_url());
    ack.set_response_nonce(response.nonce);
    (void)s.OnRequest(ack, &outcome);
  }
}

// Validating and building a snapshot of N two-variant routes.
void BM_BuildSnapshot(benchmark::State& state) {
  const auto objects = Objects(static_cast<int>(state.range(0)), "a");
  for (auto _ : state) benchmark::DoNotOptimize(Build(objects));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_BuildSnapshot)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// One change to route-0's prod variant, offered to S streams (half env=prod,
// half env=test, each subscribed to route-0): per iteration, every stream
// adopts the new snapshot and builds what it must send. Only prod streams
// push; the counter "pushes" per iteration shows it.
void BM_PushVariantChange(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  auto a = std::make_shared<ServingSnapshot>(Build(Objects(10, "a")));
  auto b = std::make_shared<ServingSnapshot>(Build(Objects(10, "b")));
  auto mapping = std::make_shared<ParameterMapping>();
  std::vector<std::unique_ptr<StreamState>> states;
  for (int i = 0; i < streams; ++i) {
    auto s = std::make_unique<StreamState>(Protocol::kSotw, mapping);
    s->SetSnapshot(a);
    SubscribeAndAck(*s, RouteConfigurationType(), {"route-0"}, i % 2 == 0 ? "prod" : "test");
    states.push_back(std::move(s));
  }
  int64_t pushes = 0;
  bool flip = false;
  for (auto _ : state) {
    flip = !flip;
    const auto& next = flip ? b : a;
    DiscoveryResponse response;
    PushRecord record;
    for (auto& s : states) {
      s->SetSnapshot(next);
      while (s->NextResponse(&response, &record)) ++pushes;
    }
  }
  state.counters["pushes_per_change"] =
      benchmark::Counter(static_cast<double>(pushes) / state.iterations());
  state.SetItemsProcessed(state.iterations() * streams);
}
BENCHMARK(BM_PushVariantChange)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// What the server does for each stream woken by a change to route-0: adopt
// the snapshot, re-examine the name, decide what is due and encode it for
// the wire. Returns the pushes.
grpc::ByteBuffer Encode(const SotwResponse& response) { return EncodeSotwResponse(response); }
grpc::ByteBuffer Encode(const DeltaResponse& response) { return EncodeDeltaResponse(response); }

template <typename Response = SotwResponse>
int64_t PushRouteChange(const std::vector<StreamState*>& woken,
                        const std::shared_ptr<ServingSnapshot>& next) {
  int64_t pushes = 0;
  PushRecord record;
  record.with_items = false;  // As the server, unless it logs at debug level.
  for (StreamState* s : woken) {
    s->AdoptSnapshot(next);
    s->MarkDirty(RouteConfigurationType(), "route-0");
    Response response;
    while (s->NextResponse(&response, &record)) {
      benchmark::DoNotOptimize(Encode(response));
      ++pushes;
    }
  }
  return pushes;
}

// Returns the bytes the program has allocated and not freed (glibc's count).
int64_t HeapBytesInUse() { return static_cast<int64_t>(mallinfo2().uordblks); }

// BM_PushVariantChange with streams that hold what a gRPC client dialling
// one service holds, as in the load benchmark: with range(1) == 4 the four
// types (LDS: the listener, RDS: the route, CDS: two clusters, EDS: their
// endpoints), with 1 only the route. The change to the route's prod variant
// is found and sent among the stream's other types. The counter
// "bytes_per_stream" is the heap the streams' states hold after subscribing
// (and ACKing), divided by their number; "allocations_per_push" the heap
// allocations (operator new) of deciding and encoding each push.
template <Protocol kProtocol>
void BM_PushToClientStream(benchmark::State& state) {
  using Response = std::conditional_t<kProtocol == Protocol::kSotw, SotwResponse, DeltaResponse>;
  const int streams = static_cast<int>(state.range(0));
  auto base = Build(Objects(1000, "a"));
  auto other = Build(Objects(1, "b"));
  auto a = std::make_shared<ServingSnapshot>(base);
  auto b = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      *base, {other->resources(RouteConfigurationType()).at("route-0")}, {}));
  auto a2 = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      b->snapshot(), {base->resources(RouteConfigurationType()).at("route-0")}, {}));
  auto mapping = std::make_shared<ParameterMapping>();
  const bool four_types = state.range(1) == 4;
  std::vector<std::unique_ptr<StreamState>> states;
  std::vector<StreamState*> woken;
  states.reserve(streams);
  const int64_t heap_before = HeapBytesInUse();
  for (int i = 0; i < streams; ++i) {
    auto s = std::make_unique<StreamState>(kProtocol, mapping);
    s->SetSnapshot(a);
    const std::string env = i % 2 == 0 ? "prod" : "test";
    auto subscribe = kProtocol == Protocol::kSotw ? SubscribeAndAck : DeltaSubscribeAndAck;
    if (four_types) {
      subscribe(*s, ListenerType(), {"listener-0"}, env);
      subscribe(*s, ClusterType(), {"a", "b"}, env);
      subscribe(*s, ClusterLoadAssignmentType(), {"a", "b"}, env);
    }
    subscribe(*s, RouteConfigurationType(), {"route-0"}, env);
    woken.push_back(s.get());
    states.push_back(std::move(s));
  }
  state.counters["bytes_per_stream"] =
      benchmark::Counter(static_cast<double>(HeapBytesInUse() - heap_before) / streams);
  int64_t pushes = 0;
  int64_t allocations = 0;
  bool flip = false;
  for (auto _ : state) {
    flip = !flip;
    const int64_t before = g_allocations.load(std::memory_order_relaxed);
    pushes += PushRouteChange<Response>(woken, flip ? b : a2);
    allocations += g_allocations.load(std::memory_order_relaxed) - before;
  }
  state.counters["pushes_per_change"] =
      benchmark::Counter(static_cast<double>(pushes) / state.iterations());
  state.counters["allocations_per_push"] =
      benchmark::Counter(pushes == 0 ? 0 : static_cast<double>(allocations) / pushes);
  state.SetItemsProcessed(state.iterations() * streams);
}
BENCHMARK_TEMPLATE(BM_PushToClientStream, Protocol::kSotw)
    ->Args({10000, 4})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_PushToClientStream, Protocol::kDelta)
    ->Args({10000, 4})
    ->Args({10000, 1})
    ->Unit(benchmark::kMillisecond);

// One route changed (an incremental snapshot, as the builder derives it),
// fanned out to S streams subscribed to 1,000 routes (S/1,000 watch each).
// The server's index wakes only the watchers of the changed name; the
// counter "streams_touched" shows how many did any work per change.
void BM_FanOutOneChange(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  constexpr int kRoutes = 1000;
  auto base = Build(Objects(kRoutes, "a"));
  auto other = Build(Objects(1, "b"));
  auto changed_route = other->resources(RouteConfigurationType()).at("route-0");
  auto original_route = base->resources(RouteConfigurationType()).at("route-0");
  auto a = std::make_shared<ServingSnapshot>(base);
  auto b = std::make_shared<ServingSnapshot>(Snapshot::Derive(*base, {changed_route}, {}));
  auto a2 = std::make_shared<ServingSnapshot>(Snapshot::Derive(b->snapshot(), {original_route}, {}));
  auto mapping = std::make_shared<ParameterMapping>();
  std::vector<std::unique_ptr<StreamState>> states;
  std::vector<std::vector<StreamState*>> index(kRoutes);  // route -> watchers
  for (int i = 0; i < streams; ++i) {
    auto s = std::make_unique<StreamState>(Protocol::kSotw, mapping);
    s->SetSnapshot(a);
    SubscribeAndAck(*s, RouteConfigurationType(), {absl::StrCat("route-", i % kRoutes)}, "prod");
    index[i % kRoutes].push_back(s.get());
    states.push_back(std::move(s));
  }
  int64_t pushes = 0;
  int64_t touched = 0;
  bool flip = false;
  for (auto _ : state) {
    flip = !flip;
    touched += static_cast<int64_t>(index[0].size());
    pushes += PushRouteChange(index[0], flip ? b : a2);
  }
  state.counters["pushes_per_change"] =
      benchmark::Counter(static_cast<double>(pushes) / state.iterations());
  state.counters["streams_touched"] =
      benchmark::Counter(static_cast<double>(touched) / state.iterations());
}
BENCHMARK(BM_FanOutOneChange)->Arg(10000)->Unit(benchmark::kMicrosecond);

// An ACK on a stream subscribed to N names (SotW repeats the names in every
// request; delta does not). No diff over the subscriptions.
template <Protocol kProtocol>
void BM_AckWithManySubscriptions(benchmark::State& state) {
  const int names = static_cast<int>(state.range(0));
  auto serving = std::make_shared<ServingSnapshot>(Build(Objects(10, "a")));
  StreamState s(kProtocol, std::make_shared<ParameterMapping>());
  s.SetSnapshot(serving);
  RequestOutcome outcome;
  std::string nonce;
  if constexpr (kProtocol == Protocol::kSotw) {
    DiscoveryRequest request;
    request.set_type_url(ClusterLoadAssignmentType().type_url());
    for (int i = 0; i < names; ++i) request.add_resource_names(absl::StrCat("endpoints-", i));
    (void)s.OnRequest(request, &outcome);
    DiscoveryResponse response;
    PushRecord record;
    while (s.NextResponse(&response, &record)) nonce = response.nonce();
    request.set_response_nonce(nonce);
    for (auto _ : state) {
      (void)s.OnRequest(request, &outcome);
      benchmark::DoNotOptimize(s.NextResponse(&response, &record));
    }
  } else {
    DeltaDiscoveryRequest request;
    request.set_type_url(ClusterLoadAssignmentType().type_url());
    for (int i = 0; i < names; ++i) request.add_resource_names_subscribe(absl::StrCat("endpoints-", i));
    (void)s.OnRequest(request, &outcome);
    DeltaResponse response;
    PushRecord record;
    while (s.NextResponse(&response, &record)) nonce = response.nonce;
    DeltaDiscoveryRequest ack;
    ack.set_type_url(request.type_url());
    ack.set_response_nonce(nonce);
    for (auto _ : state) {
      (void)s.OnRequest(ack, &outcome);
      benchmark::DoNotOptimize(s.NextResponse(&response, &record));
    }
  }
}
BENCHMARK_TEMPLATE(BM_AckWithManySubscriptions, Protocol::kSotw)->Arg(10000);
BENCHMARK_TEMPLATE(BM_AckWithManySubscriptions, Protocol::kDelta)->Arg(10000);

// The ACK of a push on a stream that holds what a gRPC client dialling one
// service holds (the four types of BM_PushToClientStream), as the server
// handles it: decoded from the wire into the stream's reused request,
// applied, and the next response looked for (none is due). The counter
// "allocations_per_ack" is the heap allocations (operator new) each one makes.
template <Protocol kProtocol>
void BM_AckOnClientStream(benchmark::State& state) {
  using Request = std::conditional_t<kProtocol == Protocol::kSotw, DiscoveryRequest,
                                     DeltaDiscoveryRequest>;
  using Response = std::conditional_t<kProtocol == Protocol::kSotw, SotwResponse, DeltaResponse>;
  auto base = Build(Objects(1000, "a"));
  auto other = Build(Objects(1, "b"));
  auto a = std::make_shared<ServingSnapshot>(base);
  auto b = std::make_shared<ServingSnapshot>(Snapshot::Derive(
      *base, {other->resources(RouteConfigurationType()).at("route-0")}, {}));
  StreamState s(kProtocol, std::make_shared<ParameterMapping>());
  s.SetSnapshot(a);
  auto subscribe = kProtocol == Protocol::kSotw ? SubscribeAndAck : DeltaSubscribeAndAck;
  subscribe(s, ListenerType(), {"listener-0"}, "prod");
  subscribe(s, ClusterType(), {"a", "b"}, "prod");
  subscribe(s, ClusterLoadAssignmentType(), {"a", "b"}, "prod");
  subscribe(s, RouteConfigurationType(), {"route-0"}, "prod");
  // A change to the route, pushed: the ACK answers it.
  s.AdoptSnapshot(b);
  s.MarkDirty(RouteConfigurationType(), "route-0");
  Response response;
  PushRecord record;
  Request ack;
  ack.set_type_url(RouteConfigurationType().type_url());
  while (s.NextResponse(&response, &record)) {
    if constexpr (kProtocol == Protocol::kSotw) {
      ack.set_version_info(response.version_info);
      ack.set_response_nonce(response.nonce);
      ack.add_resource_names("route-0");
    } else {
      ack.set_response_nonce(response.nonce);
    }
  }
  const grpc::ByteBuffer wire = EncodeMessage(ack);
  Request request;  // Reused, as each stream reuses its own.
  int64_t allocations = 0;
  bool acks = true;
  for (auto _ : state) {
    grpc::ByteBuffer buffer(wire);
    const int64_t before = g_allocations.load(std::memory_order_relaxed);
    if (!DecodeMessage(&buffer, &request)) state.SkipWithError("the ACK does not decode");
    RequestOutcome outcome;  // Each request's own, as the server's.
    benchmark::DoNotOptimize(s.OnRequest(request, &outcome));
    benchmark::DoNotOptimize(s.NextResponse(&response, &record));
    request.Clear();
    allocations += g_allocations.load(std::memory_order_relaxed) - before;
    acks = acks && outcome.kind == RequestOutcome::Kind::kAck;
  }
  if (!acks) state.SkipWithError("a request is not an ACK");
  state.counters["allocations_per_ack"] =
      benchmark::Counter(static_cast<double>(allocations) / state.iterations());
}
BENCHMARK_TEMPLATE(BM_AckOnClientStream, Protocol::kSotw);
BENCHMARK_TEMPLATE(BM_AckOnClientStream, Protocol::kDelta);

// Hostile request contents: each case is one request of N entries on a fresh
// stream (N and 10N): the time per entry stays flat when the handling is
// linear (or N log N).

// Applies `request` to a fresh stream of `protocol` and builds its answers.
template <typename Request, typename Response>
void ApplyOnce(Protocol protocol, const std::shared_ptr<const ServingSnapshot>& serving,
               const std::vector<Request>& setup, const Request& request) {
  StreamState::Limits limits;
  limits.max_names = 1 << 30;
  StreamState s(protocol, std::make_shared<ParameterMapping>(), limits);
  s.SetSnapshot(serving);
  RequestOutcome outcome;
  Response response;
  PushRecord record;
  for (const Request& r : setup) {
    (void)s.OnRequest(r, &outcome);
    while (s.NextResponse(&response, &record)) {
    }
  }
  (void)s.OnRequest(request, &outcome);
  while (s.NextResponse(&response, &record)) {
  }
}

// One request naming the same resource N times.
template <Protocol kProtocol>
void BM_HostileDuplicateNames(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto serving = std::make_shared<ServingSnapshot>(Build(Objects(10, "a")));
  if constexpr (kProtocol == Protocol::kSotw) {
    DiscoveryRequest request;
    request.set_type_url(RouteConfigurationType().type_url());
    for (int i = 0; i < n; ++i) request.add_resource_names("route-0");
    for (auto _ : state) ApplyOnce<DiscoveryRequest, DiscoveryResponse>(kProtocol, serving, {}, request);
  } else {
    DeltaDiscoveryRequest request;
    request.set_type_url(RouteConfigurationType().type_url());
    for (int i = 0; i < n; ++i) request.add_resource_names_subscribe("route-0");
    for (auto _ : state) {
      ApplyOnce<DeltaDiscoveryRequest, DeltaResponse>(kProtocol, serving, {}, request);
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK_TEMPLATE(BM_HostileDuplicateNames, Protocol::kSotw)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_HostileDuplicateNames, Protocol::kDelta)->Arg(1000)->Arg(10000);

// A delta stream subscribed to N names and the wildcard; one request
// unsubscribing "*" N times and every name (each "*" used to look at every
// name again: N x N).
void BM_HostileDeltaUnsubscribeList(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto serving = std::make_shared<ServingSnapshot>(Build(Objects(10, "a")));
  DeltaDiscoveryRequest subscribe;
  subscribe.set_type_url(ClusterLoadAssignmentType().type_url());
  subscribe.add_resource_names_subscribe("*");
  for (int i = 0; i < n; ++i) subscribe.add_resource_names_subscribe(absl::StrCat("e-", i));
  DeltaDiscoveryRequest unsubscribe;
  unsubscribe.set_type_url(subscribe.type_url());
  for (int i = 0; i < n; ++i) {
    unsubscribe.add_resource_names_unsubscribe("*");
    unsubscribe.add_resource_names_unsubscribe(absl::StrCat("e-", i));
  }
  for (auto _ : state) {
    ApplyOnce<DeltaDiscoveryRequest, DeltaResponse>(Protocol::kDelta, serving, {subscribe},
                                                    unsubscribe);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
// Up to 5,000: both requests stay within kMaxNamesPerRequest (10,000 entries).
BENCHMARK(BM_HostileDeltaUnsubscribeList)->Arg(500)->Arg(5000)->Unit(benchmark::kMillisecond);

// N xdstp names, each with 60 context parameters in reverse order and every
// key twice (canonicalised: sorted, last value of a key kept).
void BM_HostileContextParameters(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto serving = std::make_shared<ServingSnapshot>(Build(Objects(10, "a")));
  DiscoveryRequest request;
  request.set_type_url(ClusterLoadAssignmentType().type_url());
  for (int i = 0; i < n; ++i) {
    std::string name = absl::StrCat(
        "xdstp://a.example/envoy.config.endpoint.v3.ClusterLoadAssignment/e-", i, "?");
    for (int k = 30; k > 0; --k) absl::StrAppend(&name, "k", k, "=1&k", k, "=2&");
    name.pop_back();
    request.add_resource_names(name);
  }
  for (auto _ : state) {
    ApplyOnce<DiscoveryRequest, DiscoveryResponse>(Protocol::kSotw, serving, {}, request);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_HostileContextParameters)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// N locators of one name, each with its own set of 30 dynamic parameters.
void BM_HostileLocatorParameters(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto serving = std::make_shared<ServingSnapshot>(Build(Objects(10, "a")));
  DeltaDiscoveryRequest request;
  request.set_type_url(RouteConfigurationType().type_url());
  for (int i = 0; i < n; ++i) {
    auto* locator = request.add_resource_locators_subscribe();
    locator->set_name("route-0");
    auto& params = *locator->mutable_dynamic_parameters();
    for (int k = 0; k < 30; ++k) params[absl::StrCat("k", k)] = absl::StrCat(i);
  }
  for (auto _ : state) {
    ApplyOnce<DeltaDiscoveryRequest, DeltaResponse>(Protocol::kDelta, serving, {}, request);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_HostileLocatorParameters)->Arg(1000)->Arg(3000)->Arg(10000)->Unit(benchmark::kMillisecond);

// Variant selection for a parameter set: memoized per snapshot.
void BM_SelectMemoized(benchmark::State& state) {
  auto serving = std::make_shared<ServingSnapshot>(Build(Objects(1, "a")));
  const ServedResource* route = serving->snapshot().Find(RouteConfigurationType(), "route-0");
  Parameters params(ParameterSet{{"env", "test"}, {"zone", "z1"}, {"version", "v3"}});
  for (auto _ : state) benchmark::DoNotOptimize(serving->Select(*route, params));
}
BENCHMARK(BM_SelectMemoized);

}  // namespace
}  // namespace facet::xds

// As BENCHMARK_MAIN, with abseil's lock-order checks off, as `facet` turns
// them off (Debian's abseil otherwise updates a graph on every Mutex
// acquisition, which the server does not pay).
int main(int argc, char** argv) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
