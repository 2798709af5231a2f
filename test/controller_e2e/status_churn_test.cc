// End-to-end bounds of `facet controller`'s status writes and last good
// revisions at scale: 1,000 XdsResources on the test Kubernetes API server,
// 100 ADS clients (the project's ADS test client) connecting, subscribing and
// leaving over and over, a few real gRPC C++ clients, edits made meanwhile;
// the API server logs every status write it receives. And two replicas: one
// restarted while an object is invalid, both serving its last good revision
// until the object is deleted.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/controller_e2e/controller_harness.h"
#include "test/controller_e2e/controller_test_base.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

namespace ads = ::facet::testing;
using ::facet::testing::IsOk;
using ::facet::testing::StatusWrite;

constexpr absl::Duration kWait = absl::Seconds(20);

// What the controller promises about status writes (KubeSource::Options and
// docs/kubernetes.md, "Leader election"): a pass writes at most
// kMaxWritesPerPass statuses, the statuses that differ from what its watch
// cache holds; passes start at least kPassInterval apart unless one is asked
// for (leadership; none here); client counts and NACKs are re-checked every
// kResync. A pass that stopped at its budget goes on from where it stopped.
constexpr int kMaxWritesPerPass = 100;
constexpr absl::Duration kPassInterval = absl::Seconds(1);
constexpr absl::Duration kResync = absl::Seconds(10);

// 994 endpoint objects plus the six of greeter.yaml.tmpl.
constexpr int kMarkers = 994;
constexpr int kObjects = kMarkers + 6;
// Clients subscribe to markers [0, kSubscribed) only, kNamesPerClient each:
// every subscribed marker has two clients.
constexpr int kClients = 100;
constexpr int kSubscribed = 500;
constexpr int kNamesPerClient = 10;
constexpr int kChurnThreads = 4;
// Markers edited while the clients churn: unsubscribed, and last in the
// order the controller visits objects in (ref order).
const std::vector<int>& EditedMarkers() {
  static const auto* const kEdited = new std::vector<int>{kMarkers - 3, kMarkers - 2, kMarkers - 1};
  return *kEdited;
}

std::string MarkerName(int i) { return absl::StrFormat("marker-%04d", i); }

// An XdsResource serving ClusterLoadAssignment marker-NNNN with one endpoint
// on `port`.
std::string MarkerManifest(int i, int port) {
  return absl::StrCat(
      "apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: ", MarkerName(i),
      ", namespace: demo}\nspec:\n  type: endpoint\n  name: ", MarkerName(i),
      "\n  variants:\n  - resource:\n      endpoints:\n      - locality: {region: local, zone: z}"
      "\n        lb_endpoints:\n        - endpoint: {address: {socket_address: "
      "{address: 127.0.0.1, port_value: ",
      port, "}}}\n");
}

bool IsProgrammed(const Json& object) {
  return HasCondition(object, "Accepted", "True") && HasCondition(object, "ResolvedRefs", "True") &&
         HasCondition(object, "Programmed", "True");
}

// Returns the sum of status.variants[].clients.
int64_t ClientsInStatus(const Json& object) {
  const Json* variants = FindPath(object, {"status", "variants"});
  if (variants == nullptr || !variants->is_array()) return 0;
  int64_t clients = 0;
  for (const Json& variant : *variants) {
    const Json* count = Find(variant, "clients");
    if (count != nullptr && count->is_number_integer()) clients += count->get<int64_t>();
  }
  return clients;
}

// The status writes answered 2xx in [from, to), per object path.
std::map<std::string, int> SuccessfulWritesPerObject(const std::vector<StatusWrite>& log,
                                                     absl::Time from, absl::Time to) {
  std::map<std::string, int> writes;
  for (const StatusWrite& write : log) {
    if (write.code / 100 == 2 && write.time >= from && write.time < to) ++writes[write.path];
  }
  return writes;
}

int Sum(const std::map<std::string, int>& counts) {
  int sum = 0;
  for (const auto& [key, count] : counts) sum += count;
  return sum;
}

// Returns the most 2xx writes in [from, to) that fall within any interval
// shorter than kPassInterval. Passes start at least kPassInterval apart, so
// such an interval meets at most two of them: at most 2 * kMaxWritesPerPass.
int MostWritesWithinAPassInterval(const std::vector<StatusWrite>& log, absl::Time from,
                                  absl::Time to) {
  std::vector<absl::Time> times;
  for (const StatusWrite& write : log) {
    if (write.code / 100 == 2 && write.time >= from && write.time < to) times.push_back(write.time);
  }
  std::sort(times.begin(), times.end());
  int most = 0;
  size_t first = 0;
  for (size_t last = 0; last < times.size(); ++last) {
    while (times[last] - times[first] >= kPassInterval) ++first;
    most = std::max(most, static_cast<int>(last - first + 1));
  }
  return most;
}

// Waits until the API server has received no status write for `quiet`.
absl::Status WaitForNoStatusWrites(KubeTestServer& server, absl::Duration quiet,
                                   absl::Duration timeout) {
  size_t seen = server.status_writes().size();
  absl::Time unchanged_since = absl::Now();
  return PollUntil(
      [&] {
        const size_t now = server.status_writes().size();
        if (now != seen) {
          seen = now;
          unchanged_since = absl::Now();
        }
        return absl::Now() - unchanged_since >= quiet;
      },
      timeout, absl::StrCat("no status write for ", absl::FormatDuration(quiet)),
      absl::Milliseconds(100));
}

// kClients ADS clients, each alternately connecting (a new channel), sending
// its subscription, taking the answer and ACKing it, and leaving, until
// Stop(). Client i subscribes to kNamesPerClient markers from i * 5.
class ChurningClients {
 public:
  explicit ChurningClients(std::string xds_address) : xds_address_(std::move(xds_address)) {}
  ~ChurningClients() { Stop(); }

  void Start() {
    for (int t = 0; t < kChurnThreads; ++t) {
      threads_.emplace_back([this, t] { Run(t); });
    }
  }

  // Stops every thread; every client has left when it returns.
  void Stop() {
    stop_ = true;
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }

  int64_t connections() const { return connections_; }
  std::string first_error() const {
    absl::MutexLock lock(&mu_);
    return first_error_;
  }

 private:
  struct Client {
    std::unique_ptr<ads::AdsTestClient> channel;
    std::unique_ptr<ads::SotwStream> stream;  // Destroyed before its channel.
  };

  void Run(int thread) {
    std::vector<Client> clients(kClients / kChurnThreads);
    while (!stop_) {
      for (size_t k = 0; k < clients.size() && !stop_; ++k) {
        Client& client = clients[k];
        if (client.stream != nullptr) {  // Leave.
          client.stream.reset();
          client.channel.reset();
          continue;
        }
        // A breath between clients, so that four threads do not take both
        // cores from the controller (still hundreds of connections a second).
        absl::SleepFor(absl::Milliseconds(2));
        absl::Status joined = Join(static_cast<int>(k) * kChurnThreads + thread, client);
        if (!joined.ok()) {
          client.stream.reset();
          client.channel.reset();
          absl::MutexLock lock(&mu_);
          if (first_error_.empty()) first_error_ = joined.ToString();
        }
      }
    }
    for (Client& client : clients) {
      client.stream.reset();
      client.channel.reset();
    }
  }

  absl::Status Join(int id, Client& client) {
    absl::StatusOr<std::unique_ptr<ads::AdsTestClient>> channel =
        ads::AdsTestClient::Connect(xds_address_);
    if (!channel.ok()) return channel.status();
    client.channel = *std::move(channel);
    absl::StatusOr<std::unique_ptr<ads::SotwStream>> stream = client.channel->OpenSotw();
    if (!stream.ok()) return stream.status();
    client.stream = *std::move(stream);
    std::vector<std::string> names;
    for (int n = 0; n < kNamesPerClient; ++n) names.push_back(MarkerName((id * 5 + n) % kSubscribed));
    const ads::DiscoveryRequest subscription =
        ads::MakeRequest(ads::kClusterLoadAssignmentTypeUrl, names);
    ads::DiscoveryRequest first = subscription;
    *first.mutable_node() = ads::MakeNode(absl::StrCat("churn-", id));
    if (absl::Status sent = client.stream->Send(first); !sent.ok()) return sent;
    absl::StatusOr<ads::DiscoveryResponse> response =
        client.stream->NextOfType(ads::kClusterLoadAssignmentTypeUrl, absl::Seconds(10));
    if (!response.ok()) return response.status();
    if (response->resources_size() != kNamesPerClient) {
      return absl::InternalError(absl::StrCat("churn-", id, " got ", response->resources_size(),
                                              " of its ", kNamesPerClient, " resources"));
    }
    ++connections_;
    return client.stream->Send(ads::Ack(*response, subscription));
  }

  const std::string xds_address_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> connections_{0};
  std::vector<std::thread> threads_;
  mutable absl::Mutex mu_;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
};

class StatusChurnTest : public ControllerTestBase {
 protected:
  // Returns the XdsResources of namespace demo by name.
  std::map<std::string, Json> Objects() {
    std::map<std::string, Json> objects;
    absl::StatusOr<Json> list = h().GetObject(kDemoResources);
    if (!list.ok() || Find(*list, "items") == nullptr) return objects;
    for (const Json& item : *Find(*list, "items")) {
      objects[GetString(item, {"metadata", "name"})] = item;
    }
    return objects;
  }

  // Polls every object until `done` holds for each (and there are
  // kObjects); on timeout, names one that does not.
  void WaitForEveryObject(absl::FunctionRef<bool(const Json&)> done, absl::string_view what,
                          absl::Duration timeout) {
    std::string pending;
    absl::Status waited = PollUntil(
        [&] {
          const std::map<std::string, Json> objects = Objects();
          pending = objects.size() == kObjects ? "" : absl::StrCat(objects.size(), " objects");
          for (const auto& [name, object] : objects) {
            if (pending.empty() && !done(object)) pending = Dump(object);
          }
          return pending.empty();
        },
        timeout, what, absl::Milliseconds(250));
    ASSERT_THAT(waited, IsOk()) << "first not: " << pending;
  }
};

// 1,000 objects, then 100 clients coming and going. Status writes:
// - the first pass: exactly one per object (each needs its first status;
//   an unchanged status costs no write);
// - while clients churn: none for objects no client subscribes to and
//   nobody edits; one per edited object (its new generation), written while
//   the churn goes on (a pass resumes where the previous stopped, so churn
//   on other objects cannot starve it); client counts are written at most
//   once per object and pass, passes start kPassInterval apart, so any
//   interval shorter than kPassInterval holds at most 2 * kMaxWritesPerPass
//   writes, and the whole churn at most kMaxWritesPerPass per kPassInterval.
// A controller writing status per client connection (or at every change,
// unpaced) breaks the interval bounds: the clients make several hundred
// connections a second, each changing the client count of kNamesPerClient
// objects. One whose passes always start from the first object never writes
// the edited ones while the churn goes on.
TEST_F(StatusChurnTest, StatusWritesStayBoundedWhileClientsComeAndGo) {
  ASSERT_THAT(h().e2e().StartBackends({"prod", "test"}), IsOk());
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  std::string manifest = *greeter;
  for (int i = 0; i < kMarkers; ++i) absl::StrAppend(&manifest, "\n---\n", MarkerManifest(i, 1000));
  const absl::Time applying = absl::Now();
  ASSERT_THAT(h().Apply(manifest, /*use_kubectl=*/false), IsOk());
  std::cerr << "status_churn: applied " << kObjects << " objects in "
            << absl::FormatDuration(absl::Trunc(absl::Now() - applying, absl::Milliseconds(1)))
            << "\n";

  // --- The first pass ---
  const absl::Time start = absl::Now();
  absl::StatusOr<Controller*> started = h().StartController(
      "controller", {"--namespaces", kDemoNamespace, "--leader-election=false"});
  ASSERT_THAT(started, IsOk());
  Controller& controller = **started;
  ASSERT_THAT(h().WaitReady(controller), IsOk());
  ASSERT_NO_FATAL_FAILURE(WaitForEveryObject(IsProgrammed, "every object programmed",
                                             absl::Seconds(40)));
  ASSERT_THAT(WaitForNoStatusWrites(h().server(), 2 * kPassInterval, kWait), IsOk());
  const absl::Time first_pass_done = absl::Now();
  std::vector<StatusWrite> log = h().server().status_writes();
  const std::map<std::string, int> first = SuccessfulWritesPerObject(log, start, first_pass_done);
  std::cerr << "status_churn: first pass: " << Sum(first) << " status writes ("
            << log.size() << " requests) in "
            << absl::FormatDuration(absl::Trunc(first_pass_done - start, absl::Milliseconds(1)))
            << ", at most " << MostWritesWithinAPassInterval(log, start, first_pass_done)
            << " within " << absl::FormatDuration(kPassInterval) << "\n";
  EXPECT_EQ(first.size(), static_cast<size_t>(kObjects)) << "every object gets a status";
  for (const auto& [path, count] : first) EXPECT_EQ(count, 1) << path << " written again";
  EXPECT_EQ(log.size(), static_cast<size_t>(Sum(first))) << "no failed or conflicting writes";
  EXPECT_LE(MostWritesWithinAPassInterval(log, start, first_pass_done), 2 * kMaxWritesPerPass);

  // --- Churn ---
  const absl::Time churn_start = absl::Now();
  ChurningClients clients(controller.xds_address);
  clients.Start();
  // A few real gRPC clients come and go too, on greeter.
  std::vector<ClientOptions> real_clients;
  for (const std::string env : {"prod", "test"}) {
    absl::StatusOr<std::string> bootstrap =
        h().WriteBootstrap(controller, absl::StrCat("cpp-", env), {{"env", env}});
    ASSERT_THAT(bootstrap, IsOk());
    real_clients.push_back({.bootstrap_path = *bootstrap, .count = 2});
  }
  int real_runs = 0;
  // After a resync has met the churn, edit markers that no client holds.
  while (absl::Now() - churn_start < kResync + kPassInterval) {
    absl::StatusOr<std::vector<ClientRun>> runs = h().e2e().RunClients(real_clients);
    ASSERT_THAT(runs, IsOk());
    for (const ClientRun& run : *runs) EXPECT_TRUE(run.exit.Succeeded()) << run.ToString();
    real_runs += static_cast<int>(runs->size());
  }
  const absl::Time edited = absl::Now();
  for (int i : EditedMarkers()) {
    ASSERT_THAT(h().Apply(MarkerManifest(i, 2000), /*use_kubectl=*/false), IsOk());
  }
  for (int i : EditedMarkers()) {
    EXPECT_THAT(h().WaitForObject(
                    ResourcePath(MarkerName(i)),
                    [](const Json& o) { return Generation(o) == 2 && IsProgrammed(o); },
                    "generation 2 programmed while clients churn", absl::Seconds(15)),
                IsOk());
  }
  const absl::Duration edit_latency = absl::Now() - edited;
  // Churn on a while longer, then everyone leaves.
  while (absl::Now() - edited < absl::Seconds(5)) absl::SleepFor(absl::Milliseconds(100));
  clients.Stop();
  const absl::Time churn_end = absl::Now();
  EXPECT_EQ(clients.first_error(), "");
  std::cerr << "status_churn: " << clients.connections() << " ADS client connections and "
            << real_runs << " gRPC client runs in "
            << absl::FormatDuration(absl::Trunc(churn_end - churn_start, absl::Milliseconds(1)))
            << "; edits written "
            << absl::FormatDuration(absl::Trunc(edit_latency, absl::Milliseconds(1)))
            << " after the apply\n";

  // Settled: no client counted anywhere, and nothing left to write.
  ASSERT_NO_FATAL_FAILURE(WaitForEveryObject(
      [](const Json& o) { return ClientsInStatus(o) == 0 && IsProgrammed(o); },
      "every client count back to 0", kResync + kWait));
  ASSERT_THAT(WaitForNoStatusWrites(h().server(), 2 * kPassInterval, kWait), IsOk());
  const absl::Time settled = absl::Now();

  log = h().server().status_writes();
  const std::map<std::string, int> churn = SuccessfulWritesPerObject(log, first_pass_done, settled);
  // A conflict (409: the watch cache was behind) is re-read and retried.
  int conflicts = 0, failed = 0;
  for (const StatusWrite& write : log) {
    conflicts += write.code == 409 ? 1 : 0;
    failed += write.code / 100 == 2 || write.code == 409 ? 0 : 1;
  }
  const int most_in_interval = MostWritesWithinAPassInterval(log, first_pass_done, settled);
  std::cerr << "status_churn: churn and settling: " << Sum(churn) << " status writes to "
            << churn.size() << " objects, " << conflicts << " conflicts, " << failed
            << " failed, at most " << most_in_interval
            << " within " << absl::FormatDuration(kPassInterval) << "\n";

  std::set<std::string> edited_paths;
  for (int i : EditedMarkers()) edited_paths.insert(ResourcePath(MarkerName(i)));
  for (const auto& [path, count] : churn) {
    if (edited_paths.count(path) > 0) {
      EXPECT_EQ(count, 1) << path << ": one write for its one new generation";
      continue;
    }
    // Objects clients held: greeter's (real clients) and the subscribed markers.
    bool held = absl::StrContains(path, "/greeter-");
    for (int i = 0; i < kSubscribed && !held; ++i) held = path == ResourcePath(MarkerName(i));
    EXPECT_TRUE(held) << path << ": no client held it and its spec did not change, yet "
                      << count << " status write(s)";
  }
  for (const std::string& path : edited_paths) EXPECT_EQ(churn.count(path), 1u) << path;
  EXPECT_EQ(failed, 0) << "errors on status writes";
  EXPECT_LE(conflicts, Sum(churn)) << "conflicts retried over and over";
  EXPECT_LE(most_in_interval, 2 * kMaxWritesPerPass)
      << "more than two passes' budget within " << absl::FormatDuration(kPassInterval);
  const int64_t intervals = (settled - first_pass_done) / kPassInterval + 1;
  EXPECT_LE(Sum(churn), kMaxWritesPerPass * intervals);
  absl::StatusOr<double> counted = ControllerHarness::Metric(controller, "facet_status_writes_total");
  ASSERT_THAT(counted, IsOk());
  EXPECT_EQ(*counted, Sum(first) + Sum(churn)) << "the controller's count matches the server's";
}

// --- Last good revisions across a restart ---------------------------------------

// One replica of two electing a leader through the Lease facet-controller.
const std::vector<std::string>& ReplicaArgs() {
  static const auto* const kArgs = new std::vector<std::string>{
      "--namespaces", kDemoNamespace, "--leader-election=true", "--leader-election-namespace",
      kDemoNamespace, "--leader-election-lease", "facet-controller"};
  return *kArgs;
}

// Returns facet_leader of `controller` (-1 when /metrics does not answer).
double Leading(const Controller& controller) {
  absl::StatusOr<double> value = ControllerHarness::Metric(controller, "facet_leader");
  return value.ok() ? *value : -1;
}

// A delta ADS stream on one replica subscribed to RouteConfiguration greeter
// as a client with node metadata env=`env`.
class RouteWatch {
 public:
  static absl::StatusOr<std::unique_ptr<RouteWatch>> Open(const Controller& replica,
                                                          const std::string& env) {
    absl::StatusOr<std::unique_ptr<ads::AdsTestClient>> channel =
        ads::AdsTestClient::Connect(replica.xds_address);
    if (!channel.ok()) return channel.status();
    absl::StatusOr<std::unique_ptr<ads::DeltaStream>> stream = (*channel)->OpenDelta();
    if (!stream.ok()) return stream.status();
    ads::DeltaDiscoveryRequest request =
        ads::MakeDeltaRequest(ads::kRouteConfigurationTypeUrl, {"greeter"});
    *request.mutable_node() =
        ads::MakeNode(absl::StrCat("route-watch-", replica.name, "-", env), {{"env", env}});
    if (absl::Status sent = (*stream)->Send(request); !sent.ok()) return sent;
    return std::unique_ptr<RouteWatch>(new RouteWatch(*std::move(channel), *std::move(stream)));
  }

  ~RouteWatch() { stream_.reset(); }

  // Returns the next response, ACKed.
  absl::StatusOr<ads::DeltaDiscoveryResponse> Next() {
    absl::StatusOr<ads::DeltaDiscoveryResponse> response = stream_->Next(kWait);
    if (!response.ok()) return response.status();
    if (absl::Status sent = stream_->Send(ads::DeltaAck(*response)); !sent.ok()) return sent;
    return response;
  }

 private:
  RouteWatch(std::unique_ptr<ads::AdsTestClient> channel, std::unique_ptr<ads::DeltaStream> stream)
      : channel_(std::move(channel)), stream_(std::move(stream)) {}

  std::unique_ptr<ads::AdsTestClient> channel_;
  std::unique_ptr<ads::DeltaStream> stream_;
};

// Returns the version `replica` serves RouteConfiguration greeter at to a
// client with env=`env` (the variant's version: a digest of its content).
absl::StatusOr<std::string> RouteVersion(const Controller& replica, const std::string& env) {
  absl::StatusOr<std::unique_ptr<RouteWatch>> watch = RouteWatch::Open(replica, env);
  if (!watch.ok()) return watch.status();
  absl::StatusOr<ads::DeltaDiscoveryResponse> response = (*watch)->Next();
  if (!response.ok()) return response.status();
  if (response->resources_size() != 1 || response->resources(0).version().empty()) {
    return absl::InternalError(absl::StrCat(replica.name, " answered RDS greeter (env=", env,
                                            ") with ", response->DebugString()));
  }
  return response->resources(0).version();
}

// Two replicas serve greeter; greeter-routes' generation 2 is invalid; the
// leader is restarted. The restarted replica (which never saw generation 1
// accepted in this life) and the other serve the same last good revision,
// with equal versions, from the one ControllerRevision the first leader
// wrote (whichever leads next records nothing for the rejected generation). Deleting greeter-routes deletes that revision (its
// ownerReference names the object) and both replicas stop serving the route.
TEST_F(StatusChurnTest, RestartedReplicaAndItsPeerServeTheSameLastGoodRevisionUntilDeletion) {
  ASSERT_THAT(h().e2e().StartBackends({"prod", "test"}), IsOk());
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  ASSERT_THAT(h().Apply(*greeter, /*use_kubectl=*/false), IsOk());
  absl::StatusOr<Controller*> a = h().StartController("replica-a", ReplicaArgs());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<Controller*> b = h().StartController("replica-b", ReplicaArgs());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(h().WaitReady(**a), IsOk());
  ASSERT_THAT(h().WaitReady(**b), IsOk());
  ASSERT_THAT(PollUntil([&] { return Leading(**a) + Leading(**b) == 1; }, kWait,
                        "exactly one replica with facet_leader 1"),
              IsOk());
  Controller* leader = Leading(**a) == 1 ? *a : *b;
  Controller* survivor = leader == *a ? *b : *a;
  absl::StatusOr<Json> routes =
      h().WaitForObject(ResourcePath("greeter-routes"), IsProgrammed, "Programmed=True");
  ASSERT_THAT(routes, IsOk());

  // greeter-routes' ControllerRevisions (label facet.dev/owner), as stored.
  auto revisions = [&] {
    std::vector<Json> found;
    absl::StatusOr<Json> list = h().GetObject("/apis/apps/v1/namespaces/demo/controllerrevisions");
    const Json* items = list.ok() ? Find(*list, "items") : nullptr;
    if (items == nullptr || !items->is_array()) return found;
    for (const Json& item : *items) {
      if (GetString(item, {"metadata", "labels", "facet.dev/owner"}) == "greeter-routes") {
        found.push_back(item);
      }
    }
    return found;
  };
  ASSERT_THAT(PollUntil([&] { return revisions().size() == 1; }, kWait,
                        "the leader's ControllerRevision of greeter-routes"),
              IsOk());
  const Json revision = revisions().front();
  const Json* owners = FindPath(revision, {"metadata", "ownerReferences"});
  ASSERT_TRUE(owners != nullptr && owners->is_array() && owners->size() == 1) << Dump(revision);
  EXPECT_EQ(GetString(owners->at(0), {"uid"}), GetString(*routes, {"metadata", "uid"}))
      << Dump(revision);
  EXPECT_EQ(GetString(owners->at(0), {"kind"}), "XdsResource");

  // The versions of generation 1, per env, equal on both replicas.
  std::map<std::string, std::string> good;
  for (const std::string env : {"prod", "test"}) {
    absl::StatusOr<std::string> version = RouteVersion(*leader, env);
    ASSERT_THAT(version, IsOk());
    EXPECT_THAT(RouteVersion(*survivor, env), ::facet::testing::IsOkAndHolds(*version)) << env;
    good[env] = *version;
  }
  EXPECT_NE(good["prod"], good["test"]);

  absl::StatusOr<std::string> overlap =
      ControllerHarness::ReadTestdata("greeter-routes-overlap.yaml");
  ASSERT_THAT(overlap, IsOk());
  ASSERT_THAT(h().Apply(*overlap, /*use_kubectl=*/false), IsOk());
  ASSERT_THAT(h().WaitForObject(
                  ResourcePath("greeter-routes"),
                  [](const Json& o) {
                    return Generation(o) == 2 &&
                           HasCondition(o, "Accepted", "False", "OverlappingVariants") &&
                           HasCondition(o, "Programmed", "False", "ServingPreviousRevision");
                  },
                  "generation 2 rejected, the previous revision serving"),
              IsOk());

  // Restart the leader. It releases the Lease on SIGTERM; either replica
  // may take it (the restarted one knows generation 1 only from the revision).
  ASSERT_THAT(ControllerHarness::StopController(*leader), IsOk());
  absl::StatusOr<Controller*> restarted =
      h().StartController(absl::StrCat(leader->name, "-restarted"), ReplicaArgs());
  ASSERT_THAT(restarted, IsOk());
  ASSERT_THAT(h().WaitReady(**restarted), IsOk());
  ASSERT_THAT(PollUntil([&] { return Leading(**restarted) + Leading(*survivor) == 1; }, kWait,
                        "exactly one leader after the restart"),
              IsOk());
  std::cerr << "status_churn: after the restart, "
            << (Leading(**restarted) == 1 ? (*restarted)->name : survivor->name) << " leads\n";

  for (Controller* replica : {*restarted, survivor}) {
    for (const std::string env : {"prod", "test"}) {
      EXPECT_THAT(RouteVersion(*replica, env), ::facet::testing::IsOkAndHolds(good[env]))
          << replica->name << " must serve the last good revision to env=" << env;
    }
  }
  std::vector<ClientOptions> clients;
  for (const std::string env : {"prod", "test"}) {
    absl::StatusOr<std::string> bootstrap =
        h().WriteBootstrap(**restarted, absl::StrCat("cpp-", env), {{"env", env}});
    ASSERT_THAT(bootstrap, IsOk());
    clients.push_back({.bootstrap_path = *bootstrap, .count = 2});
  }
  absl::StatusOr<std::vector<ClientRun>> runs = h().e2e().RunClients(clients);
  ASSERT_THAT(runs, IsOk());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_THAT((*runs)[0].lines, ::testing::ElementsAre("prod", "prod")) << (*runs)[0].ToString();
  EXPECT_THAT((*runs)[1].lines, ::testing::ElementsAre("test", "test")) << (*runs)[1].ToString();
  // The new leader wrote no revision for the rejected generation 2.
  std::vector<Json> after = revisions();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(GetString(after[0], {"metadata", "name"}), GetString(revision, {"metadata", "name"}));
  const Json* number = Find(after[0], "revision");
  EXPECT_TRUE(number != nullptr && number->is_number_integer() && number->get<int64_t>() == 1)
      << Dump(after[0]);

  // Deleting the object: its revision goes, and both replicas withdraw the route.
  std::vector<std::unique_ptr<RouteWatch>> watches;
  for (Controller* replica : {*restarted, survivor}) {
    absl::StatusOr<std::unique_ptr<RouteWatch>> watch = RouteWatch::Open(*replica, "prod");
    ASSERT_THAT(watch, IsOk());
    absl::StatusOr<ads::DeltaDiscoveryResponse> served = (*watch)->Next();
    ASSERT_THAT(served, IsOk());
    ASSERT_EQ(served->resources_size(), 1) << served->DebugString();
    EXPECT_EQ(served->resources(0).version(), good["prod"]);
    watches.push_back(*std::move(watch));
  }
  ASSERT_THAT(h().Delete(ResourcePath("greeter-routes")), IsOk());
  for (size_t i = 0; i < watches.size(); ++i) {
    absl::StatusOr<ads::DeltaDiscoveryResponse> removal = watches[i]->Next();
    ASSERT_THAT(removal, IsOk()) << "replica " << i;
    EXPECT_EQ(removal->resources_size(), 0) << removal->DebugString();
    std::vector<std::string> removed(removal->removed_resources().begin(),
                                     removal->removed_resources().end());
    for (const auto& name : removal->removed_resource_names()) removed.push_back(name.name());
    EXPECT_THAT(removed, ::testing::ElementsAre("greeter")) << removal->DebugString();
  }
  EXPECT_THAT(PollUntil([&] { return revisions().empty(); }, kWait,
                        "greeter-routes' revision deleted with it"),
              IsOk());
}

}  // namespace
}  // namespace facet::e2e
