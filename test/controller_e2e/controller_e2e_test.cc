// End-to-end tests of `facet controller`: the test Kubernetes API server
// (TLS, bearer token), objects applied with the real kubectl (over HTTP
// where kubectl is absent), real `facet controller` processes, real gRPC
// backends and the real gRPC C++ xDS client, plus the project's ADS test
// client for what a real client cannot show (a resource that is not served).
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <httplib.h>  // Its feature macros come from pkg-config.

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/ads_client/ads_test_client.h"
#include "test/controller_e2e/controller_harness.h"
#include "test/controller_e2e/controller_test_base.h"
#include "test/kube_api_server/tls.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

namespace ads = ::facet::testing;
using ::envoy::config::endpoint::v3::ClusterLoadAssignment;
using ::facet::testing::IsOk;
using ::testing::ContainsRegex;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr absl::Duration kWait = absl::Seconds(20);
constexpr char kLeasePath[] =
    "/apis/coordination.k8s.io/v1/namespaces/demo/leases/facet-controller";

// The XdsResource objects of test/e2e/testdata/greeter.yaml.tmpl.
const std::vector<std::string>& GreeterObjects() {
  static const auto* const kObjects = new std::vector<std::string>{
      "greeter-listener",     "greeter-routes",         "greeter-prod-cluster",
      "greeter-test-cluster", "greeter-prod-endpoints", "greeter-test-endpoints"};
  return *kObjects;
}

// One replica watching demo, writing status without a Lease.
// One of several replicas electing a leader through the Lease facet-controller.
const std::vector<std::string> kReplica = {"--namespaces",           kDemoNamespace,
                                           "--leader-election=true", "--leader-election-namespace",
                                           kDemoNamespace,           "--leader-election-lease",
                                           "facet-controller"};
const std::vector<std::string> kSingleReplica = {"--namespaces", kDemoNamespace,
                                                 "--leader-election=false"};

int CountLines(absl::string_view text, absl::string_view line) {
  int count = 0;
  for (const std::string& l : SplitLines(text)) count += l == line ? 1 : 0;
  return count;
}

bool IsProgrammed(const Json& object) {
  return HasCondition(object, "Accepted", "True") && HasCondition(object, "ResolvedRefs", "True") &&
         HasCondition(object, "Programmed", "True");
}

// Subscribes a fresh SotW stream on `xds_address` to `names` of `type_url`
// (node metadata `metadata`) and returns the first answer.
absl::StatusOr<ads::DiscoveryResponse> FirstAnswer(
    const std::string& xds_address, absl::string_view type_url,
    const std::vector<std::string>& names, const std::map<std::string, std::string>& metadata) {
  absl::StatusOr<std::unique_ptr<ads::AdsTestClient>> client =
      ads::AdsTestClient::Connect(xds_address);
  if (!client.ok()) return client.status();
  absl::StatusOr<std::unique_ptr<ads::SotwStream>> stream = (*client)->OpenSotw();
  if (!stream.ok()) return stream.status();
  ads::DiscoveryRequest request = ads::MakeRequest(type_url, names);
  *request.mutable_node() = ads::MakeNode("controller-e2e-check", metadata);
  if (absl::Status sent = (*stream)->Send(request); !sent.ok()) return sent;
  return (*stream)->NextOfType(type_url, absl::Seconds(10));
}

// The resources of FirstAnswer().
absl::StatusOr<std::vector<ads::DecodedResource>> Fetch(
    const std::string& xds_address, absl::string_view type_url,
    const std::vector<std::string>& names,
    const std::map<std::string, std::string>& metadata = {}) {
  absl::StatusOr<ads::DiscoveryResponse> response =
      FirstAnswer(xds_address, type_url, names, metadata);
  if (!response.ok()) return response.status();
  return ads::DecodeResources(*response);
}

// The version_info of FirstAnswer(): a digest of what is served, equal on
// every replica serving the same.
absl::StatusOr<std::string> FetchVersion(const std::string& xds_address, absl::string_view type_url,
                                         const std::vector<std::string>& names,
                                         const std::map<std::string, std::string>& metadata) {
  absl::StatusOr<ads::DiscoveryResponse> response =
      FirstAnswer(xds_address, type_url, names, metadata);
  if (!response.ok()) return response.status();
  return response->version_info();
}

std::vector<std::string> Names(const std::vector<ads::DecodedResource>& resources) {
  std::vector<std::string> names;
  for (const ads::DecodedResource& resource : resources) names.push_back(resource.name);
  return names;
}

class ControllerE2eTest : public ControllerTestBase {
 protected:
  // Starts `backends`, applies greeter.yaml, starts one controller (no
  // leader election) and waits until it is ready and every greeter object is
  // programmed at generation 1.
  void ServeGreeter(const std::vector<std::string>& backends, Controller** controller) {
    ASSERT_THAT(h().e2e().StartBackends(backends), IsOk());
    absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
    ASSERT_THAT(greeter, IsOk());
    ASSERT_THAT(h().Apply(*greeter), IsOk());
    absl::StatusOr<Controller*> started = h().StartController("controller", kSingleReplica);
    ASSERT_THAT(started, IsOk());
    *controller = *started;
    ASSERT_THAT(h().WaitReady(**controller), IsOk());
    ASSERT_NO_FATAL_FAILURE(WaitProgrammed(GreeterObjects()));
  }

  // Starts replica-a and replica-b with `args` and waits until both are ready.
  void StartTwoReplicas(const std::vector<std::string>& args, Controller** a, Controller** b) {
    absl::StatusOr<Controller*> first = h().StartController("replica-a", args);
    ASSERT_THAT(first, IsOk());
    absl::StatusOr<Controller*> second = h().StartController("replica-b", args);
    ASSERT_THAT(second, IsOk());
    ASSERT_THAT(h().WaitReady(**first), IsOk());
    ASSERT_THAT(h().WaitReady(**second), IsOk());
    *a = *first;
    *b = *second;
  }

  // Waits until each object is Accepted, ResolvedRefs and Programmed at its
  // current generation.
  void WaitProgrammed(const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      EXPECT_THAT(h().WaitForObject(ResourcePath(name), IsProgrammed, "Programmed=True"), IsOk());
    }
  }

  // Runs one gRPC C++ client per (env, expected backend) through
  // `controller`, three calls each, and checks where they went.
  void ExpectRoutes(const Controller& controller,
                    const std::vector<std::pair<std::string, std::string>>& env_to_backend) {
    std::vector<ClientOptions> clients;
    for (const auto& [env, backend] : env_to_backend) {
      absl::StatusOr<std::string> bootstrap =
          h().WriteBootstrap(controller, absl::StrCat("cpp-", env), {{"env", env}});
      ASSERT_THAT(bootstrap, IsOk());
      clients.push_back({.bootstrap_path = *bootstrap, .count = 3});
    }
    absl::StatusOr<std::vector<ClientRun>> runs = h().e2e().RunClients(clients);
    ASSERT_THAT(runs, IsOk());
    for (size_t i = 0; i < runs->size(); ++i) {
      const ClientRun& run = (*runs)[i];
      EXPECT_TRUE(run.exit.Succeeded()) << run.ToString();
      EXPECT_THAT(run.lines, SizeIs(3)) << run.ToString();
      EXPECT_THAT(run.lines, Each(env_to_backend[i].second))
          << "env=" << env_to_backend[i].first << " via " << controller.name << "\n"
          << run.ToString();
    }
  }

  // Starts a gRPC C++ client with `env` calling `controller` every 20 ms for
  // `duration` and waits until it printed `line` `count` times.
  std::unique_ptr<Process> StartCallingClient(const Controller& controller, const std::string& env,
                                              absl::Duration duration, const std::string& line,
                                              int count) {
    absl::StatusOr<std::string> bootstrap =
        h().WriteBootstrap(controller, absl::StrCat("cpp-calling-", env), {{"env", env}});
    EXPECT_THAT(bootstrap, IsOk());
    if (!bootstrap.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<Process>> client = h().e2e().StartClient(
        {.bootstrap_path = *bootstrap, .duration = duration, .interval = absl::Milliseconds(20)});
    EXPECT_THAT(client, IsOk());
    if (!client.ok()) return nullptr;
    EXPECT_THAT((*client)->WaitForStdout(
                    [&](absl::string_view out) { return CountLines(out, line) >= count; }, kWait),
                IsOk())
        << "no \"" << line << "\" from " << (*client)->description();
    return *std::move(client);
  }

  // Waits for a client started by StartCallingClient to finish and checks
  // that none of its calls failed; returns its output lines.
  std::vector<std::string> ExpectNoFailedCalls(Process& client) {
    absl::StatusOr<ClientRun> run = E2eHarness::FinishClient(client, kWait);
    EXPECT_THAT(run, IsOk());
    if (!run.ok()) return {};
    EXPECT_TRUE(run->exit.Succeeded()) << run->ToString();
    EXPECT_FALSE(run->lines.empty());
    if (!run->lines.empty()) {
      EXPECT_THAT(run->lines.back(), ::testing::MatchesRegex("summary ok=[0-9]+ fail=0"))
          << run->ToString();
    }
    return run->lines;
  }

};

// 1. Objects applied with kubectl are listed, validated, served and given
// status: gRPC C++ clients reach the backend their env selects. Until the
// objects are listed, /readyz answers 503 and the xDS port is closed.
TEST_F(ControllerE2eTest, AppliedObjectsAreServedAndGetStatus) {
  ASSERT_THAT(h().e2e().StartBackends({"prod", "test"}), IsOk());
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  ASSERT_THAT(h().Apply(*greeter), IsOk());

  // While the API server answers nothing, only the admin port is open.
  h().server().SetHang(true);
  absl::Cleanup unhang = [&] { h().server().SetHang(false); };
  absl::StatusOr<Controller*> started =
      h().StartController("controller", kSingleReplica, /*wait_for_ready_file=*/false);
  ASSERT_THAT(started, IsOk());
  Controller* controller = *started;
  std::vector<int> ports;
  ASSERT_THAT(PollUntil(
                  [&] {
                    ports = ListeningPorts(controller->process->pid()).value_or(std::vector<int>());
                    return !ports.empty();
                  },
                  kWait, "the admin port"),
              IsOk());
  EXPECT_THAT(ports, SizeIs(1)) << "the xDS port must stay closed until the first sync";
  absl::StatusOr<std::pair<int, std::string>> readyz =
      ControllerHarness::AdminGet(absl::StrCat("127.0.0.1:", ports.front()), "/readyz");
  ASSERT_THAT(readyz, IsOk());
  EXPECT_EQ(readyz->first, 503) << readyz->second;
  std::move(unhang).Invoke();
  ASSERT_THAT(h().WaitForReadyFile(*controller), IsOk());
  EXPECT_EQ(controller->admin_address, absl::StrCat("127.0.0.1:", ports.front()));
  ASSERT_THAT(h().WaitReady(*controller), IsOk());
  WaitProgrammed(GreeterObjects());

  ExpectRoutes(*controller, {{"prod", "prod"}, {"test", "test"}});
  absl::StatusOr<double> streams =
      ControllerHarness::Metric(*controller, "facet_xds_streams_total");
  ASSERT_THAT(streams, IsOk());
  EXPECT_GE(*streams, 2) << "one ADS stream per client";

  absl::StatusOr<Json> routes = h().GetObject(ResourcePath("greeter-routes"));
  ASSERT_THAT(routes, IsOk());
  EXPECT_EQ(Generation(*routes), 1);
  EXPECT_EQ(ObservedGeneration(*routes), 1);
  EXPECT_EQ(GetString(*routes, {"status", "servedName"}), "greeter") << Dump(*routes);
  const Json* variant_count = FindPath(*routes, {"status", "variantCount"});
  ASSERT_NE(variant_count, nullptr) << Dump(*routes);
  EXPECT_EQ(variant_count->get<int64_t>(), 2);
  const Json* variants = FindPath(*routes, {"status", "variants"});
  ASSERT_TRUE(variants != nullptr && variants->is_array()) << Dump(*routes);
  EXPECT_THAT(*variants, SizeIs(2));
  for (const Json& variant : *variants) {
    EXPECT_FALSE(GetString(variant, {"version"}).empty()) << Dump(variant);
    const Json* clients = Find(variant, "clients");
    EXPECT_TRUE(clients != nullptr && clients->is_number_integer()) << Dump(variant);
  }
  absl::StatusOr<double> rejected =
      ControllerHarness::Metric(*controller, "facet_objects_rejected");
  ASSERT_THAT(rejected, IsOk());
  EXPECT_EQ(*rejected, 0);
}

// What an operator runs (docs/kubernetes.md): `kubectl wait` and `kubectl
// get` see the conditions the controller wrote.
TEST_F(ControllerE2eTest, KubectlSeesConditionsWrittenByController) {
  if (std::string reason = ControllerHarness::KubectlUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << "kubectl test skipped: " << reason;
  }
  Controller* controller = nullptr;
  ASSERT_NO_FATAL_FAILURE(ServeGreeter({"prod", "test"}, &controller));
  EXPECT_THAT(h().Kubectl({"wait", "xr", "--all", "-n", kDemoNamespace,
                           "--for=condition=Programmed", "--timeout=20s"}),
              IsOk());
  absl::StatusOr<std::string> table = h().Kubectl({"get", "xr", "-n", kDemoNamespace});
  ASSERT_THAT(table, IsOk());
  std::vector<std::string> rows = SplitLines(*table);
  ASSERT_THAT(rows, SizeIs(GreeterObjects().size() + 1)) << *table;
  EXPECT_THAT(rows[0], HasSubstr("ACCEPTED")) << *table;
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_THAT(rows[i], HasSubstr(" True ")) << *table;
  absl::StatusOr<std::string> reason =
      h().Kubectl({"get", "xr", "greeter-routes", "-n", kDemoNamespace, "-o",
                   R"(jsonpath={.status.conditions[?(@.type=="Programmed")].reason})"});
  ASSERT_THAT(reason, IsOk());
  EXPECT_EQ(*reason, "Programmed");
}

// 2. Editing a route (kubectl apply of a changed file) moves a client that
// calls continuously to the new cluster within seconds, without one failed
// call, and the status follows the new generation.
TEST_F(ControllerE2eTest, EditedRouteMovesRunningClientWithoutFailures) {
  Controller* controller = nullptr;
  ASSERT_NO_FATAL_FAILURE(ServeGreeter({"prod", "test", "blue"}, &controller));
  std::unique_ptr<Process> client =
      StartCallingClient(*controller, "prod", absl::Seconds(6), "ok prod", /*count=*/25);
  ASSERT_NE(client, nullptr);

  absl::StatusOr<std::string> blue = h().RenderE2eTemplate("greeter-blue.yaml.tmpl");
  ASSERT_THAT(blue, IsOk());
  const absl::Time edited = absl::Now();
  ASSERT_THAT(h().Apply(*blue), IsOk());
  EXPECT_THAT(
      client->WaitForStdout([](absl::string_view out) { return CountLines(out, "ok blue") > 0; },
                            absl::Seconds(5)),
      IsOk())
      << "the client did not switch to backend blue within 5 s of the edit";
  std::cerr << "controller_e2e: switched to blue "
            << absl::FormatDuration(absl::Trunc(absl::Now() - edited, absl::Milliseconds(1)))
            << " after starting the apply\n";

  // prod, prod, ..., blue, blue, ..., summary.
  const std::vector<std::string> lines = ExpectNoFailedCalls(*client);
  bool switched = false;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    switched = switched || lines[i] == "ok blue";
    ASSERT_EQ(lines[i], switched ? "ok blue" : "ok prod") << "line " << i;
  }
  EXPECT_TRUE(switched);

  absl::StatusOr<Json> routes = h().WaitForObject(
      ResourcePath("greeter-routes"),
      [](const Json& o) { return Generation(o) == 2 && IsProgrammed(o); },
      "generation 2 observed and programmed");
  EXPECT_THAT(routes, IsOk());
  WaitProgrammed({"greeter-blue-cluster", "greeter-blue-endpoints"});
}

// EndpointSlices: the prod cluster's endpoints come from the Service
// greeter-prod's slices. A not-ready endpoint gets no traffic; making it ready
// and the other not ready moves a running client without failed calls;
// deleting the slices leaves a warning in status.
TEST_F(ControllerE2eTest, EndpointsFromSlicesRouteClientsAndFollowTheirChanges) {
  Controller* controller = nullptr;
  ASSERT_NO_FATAL_FAILURE(ServeGreeter({"prod", "test", "blue"}, &controller));
  const auto& ports = h().e2e().backend_ports();
  // Two slices of one Service: the pods behind them listen on different
  // ports (named target ports may differ per pod).
  auto slice = [&](const std::string& name, const std::string& backend, bool ready) {
    return absl::StrCat(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: ", name,
        "\n  namespace: demo\n  labels: {kubernetes.io/service-name: greeter-prod}\n"
        "addressType: IPv4\nports: [{name: grpc, port: ",
        ports.at(backend), "}]\nendpoints: [{addresses: [127.0.0.1], conditions: {ready: ",
        ready ? "true" : "false", "}}]\n");
  };
  ASSERT_THAT(h().Apply(slice("greeter-prod-a", "prod", true), /*use_kubectl=*/false), IsOk());
  ASSERT_THAT(h().Apply(slice("greeter-prod-b", "blue", false), /*use_kubectl=*/false), IsOk());
  ASSERT_THAT(h().Apply("apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata:\n"
                        "  name: greeter-prod-endpoints\n  namespace: demo\nspec:\n"
                        "  type: endpoint\n  name: greeter-prod\n  variants:\n"
                        "  - endpointsFrom: {service: greeter-prod, port: grpc}\n"),
              IsOk());
  EXPECT_THAT(h().WaitForObject(
                  ResourcePath("greeter-prod-endpoints"),
                  [](const Json& o) { return Generation(o) == 2 && IsProgrammed(o); },
                  "generation 2 (endpointsFrom) programmed"),
              IsOk());
  // Only the ready endpoint gets traffic; env=test is untouched.
  ExpectRoutes(*controller, {{"prod", "prod"}, {"test", "test"}});

  std::unique_ptr<Process> client =
      StartCallingClient(*controller, "prod", absl::Seconds(6), "ok prod", /*count=*/10);
  ASSERT_NE(client, nullptr);
  // A rolling update: the new pod turns ready, then the old one stops.
  ASSERT_THAT(h().Apply(slice("greeter-prod-b", "blue", true), /*use_kubectl=*/false), IsOk());
  ASSERT_THAT(h().Apply(slice("greeter-prod-a", "prod", false), /*use_kubectl=*/false), IsOk());
  EXPECT_THAT(client->WaitForStdout(
                  [](absl::string_view out) { return CountLines(out, "ok blue") > 3; },
                  absl::Seconds(5)),
              IsOk())
      << "the client did not move to the newly ready endpoint";
  ExpectNoFailedCalls(*client);

  // The Service's slices deleted: nothing to serve, said in status.
  ASSERT_THAT(h().Delete("/apis/discovery.k8s.io/v1/namespaces/demo/endpointslices/greeter-prod-a"),
              IsOk());
  ASSERT_THAT(h().Delete("/apis/discovery.k8s.io/v1/namespaces/demo/endpointslices/greeter-prod-b"),
              IsOk());
  EXPECT_THAT(h().WaitForObject(
                  ResourcePath("greeter-prod-endpoints"),
                  [](const Json& o) { return absl::StrContains(Dump(o), "no ready endpoints"); },
                  "a no-ready-endpoints warning in status"),
              IsOk());
}

// Last good revisions are shared: a replica started while greeter-routes is
// invalid serves its last accepted revision (from the ControllerRevision the
// leader wrote), with the same versions as the replica that saw it valid,
// and a complete listener list. Deleting the object deletes its revisions.
TEST_F(ControllerE2eTest, ReplicaStartedWhileARouteIsInvalidServesItsLastGoodRevision) {
  ASSERT_THAT(h().e2e().StartBackends({"prod", "test"}), IsOk());
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  ASSERT_THAT(h().Apply(*greeter), IsOk());
  const std::vector<std::string>& args = kReplica;
  absl::StatusOr<Controller*> a = h().StartController("replica-a", args);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(h().WaitReady(**a), IsOk());
  WaitProgrammed(GreeterObjects());
  // greeter-routes' revisions (label facet.dev/owner), as stored.
  auto revision_count = [&] {
    absl::StatusOr<Json> list = h().GetObject("/apis/apps/v1/namespaces/demo/controllerrevisions");
    const Json* items = list.ok() ? Find(*list, "items") : nullptr;
    if (items == nullptr || !items->is_array()) return -1;
    int count = 0;
    for (const Json& item : *items) {
      if (GetString(item, {"metadata", "labels", "facet.dev/owner"}) == "greeter-routes") ++count;
    }
    return count;
  };
  ASSERT_THAT(PollUntil([&] { return revision_count() == 1; }, kWait,
                        "the leader's ControllerRevision of greeter-routes"),
              IsOk());
  absl::StatusOr<std::string> good =
      FetchVersion((*a)->xds_address, ads::kRouteConfigurationTypeUrl, {"greeter"}, {{"env", "prod"}});
  ASSERT_THAT(good, IsOk());

  absl::StatusOr<std::string> overlap = ControllerHarness::ReadTestdata("greeter-routes-overlap.yaml");
  ASSERT_THAT(overlap, IsOk());
  ASSERT_THAT(h().Apply(*overlap), IsOk());
  ASSERT_THAT(h().WaitForObject(
                  ResourcePath("greeter-routes"),
                  [](const Json& o) {
                    return Generation(o) == 2 &&
                           HasCondition(o, "Accepted", "False", "OverlappingVariants");
                  },
                  "generation 2 rejected"),
              IsOk());

  // A replica that never saw generation 1.
  absl::StatusOr<Controller*> b = h().StartController("replica-b", args);
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(h().WaitReady(**b), IsOk());
  absl::StatusOr<std::vector<ads::DecodedResource>> listeners =
      Fetch((*b)->xds_address, ads::kListenerTypeUrl, {});
  ASSERT_THAT(listeners, IsOk());
  EXPECT_THAT(Names(*listeners), ::testing::ElementsAre("greeter")) << "the listener must not be withdrawn";
  for (Controller* replica : {*a, *b}) {
    EXPECT_THAT(FetchVersion(replica->xds_address, ads::kRouteConfigurationTypeUrl, {"greeter"},
                             {{"env", "prod"}}),
                ::facet::testing::IsOkAndHolds(*good))
        << replica->name << " must serve the last good revision, with its version";
  }
  ExpectRoutes(**b, {{"prod", "prod"}, {"test", "test"}});

  ASSERT_THAT(h().Delete(ResourcePath("greeter-routes")), IsOk());
  EXPECT_THAT(PollUntil([&] { return revision_count() == 0; }, kWait,
                        "greeter-routes' revisions deleted with it"),
              IsOk());
}

// The admission webhook runs on every replica, leader or not: over TLS
// verified by its CA, it allows a valid object and denies an overlapping one
// with facet validate's message, echoing the request's uid.
TEST_F(ControllerE2eTest, EveryReplicaAnswersAdmissionReviewsOverTls) {
  absl::StatusOr<facet::testing::TlsCredentials> tls = facet::testing::GenerateTestCredentials();
  ASSERT_THAT(tls, IsOk());
  const std::string cert = absl::StrCat(h().e2e().dir(), "/webhook.crt");
  const std::string key = absl::StrCat(h().e2e().dir(), "/webhook.key");
  const std::string ca = absl::StrCat(h().e2e().dir(), "/webhook-ca.crt");
  ASSERT_THAT(WriteFileAtomically(cert, tls->cert_pem), IsOk());
  ASSERT_THAT(WriteFileAtomically(key, tls->key_pem), IsOk());
  ASSERT_THAT(WriteFileAtomically(ca, tls->ca_pem), IsOk());
  std::vector<std::string> args = kReplica;
  for (const char* flag : {"--webhook-address", "127.0.0.1:0"}) args.push_back(flag);
  args.insert(args.end(), {"--webhook-tls-cert", cert, "--webhook-tls-key", key});
  Controller* a_started = nullptr;
  Controller* b_started = nullptr;
  ASSERT_NO_FATAL_FAILURE(StartTwoReplicas(args, &a_started, &b_started));
  Controller** a = &a_started;
  Controller** b = &b_started;
  absl::StatusOr<std::string> overlap = ControllerHarness::ReadTestdata("greeter-routes-overlap.yaml");
  ASSERT_THAT(overlap, IsOk());
  absl::StatusOr<Json> overlapping = ParseYaml(*overlap);
  ASSERT_THAT(overlapping, IsOk());
  auto review = [](const Json& object) {
    return absl::StrCat(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)",
                        R"("request":{"uid":"u-1","operation":"CREATE","namespace":"demo",)",
                        R"("object":)", Dump(object), "}}");
  };
  absl::StatusOr<Json> valid = ParseYaml(
      "{apiVersion: facet.dev/v1alpha1, kind: XdsResource, metadata: {name: e, namespace: demo}, "
      "spec: {type: endpoint, name: e, variants: [{resource: {}}]}}");
  ASSERT_THAT(valid, IsOk());
  for (Controller* replica : {*a, *b}) {
    ASSERT_FALSE(replica->webhook_address.empty());
    const int port = std::stoi(replica->webhook_address.substr(replica->webhook_address.rfind(':') + 1));
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path(ca.c_str());
    client.enable_server_certificate_verification(true);
    auto allowed = client.Post("/validate", review(*valid), "application/json");
    ASSERT_TRUE(allowed) << replica->name << ": " << httplib::to_string(allowed.error());
    absl::StatusOr<Json> answer = ParseJson(allowed->body);
    ASSERT_THAT(answer, IsOk());
    EXPECT_EQ(GetString(*answer, {"response", "uid"}), "u-1");
    EXPECT_EQ(Dump(*FindPath(*answer, {"response", "allowed"})), "true") << allowed->body;
    auto denied = client.Post("/validate", review(*overlapping), "application/json");
    ASSERT_TRUE(denied);
    EXPECT_THAT(denied->body, ::testing::HasSubstr("\"allowed\":false"));
    EXPECT_THAT(denied->body, ::testing::HasSubstr("overlap: both match"));
  }
}

// 3. A generation whose variants overlap is rejected with the reason in its
// status; clients keep the previous revision.
TEST_F(ControllerE2eTest, OverlappingVariantsAreRejectedAndPreviousRevisionKeepsServing) {
  Controller* controller = nullptr;
  ASSERT_NO_FATAL_FAILURE(ServeGreeter({"prod", "test"}, &controller));
  absl::StatusOr<std::string> overlap =
      ControllerHarness::ReadTestdata("greeter-routes-overlap.yaml");
  ASSERT_THAT(overlap, IsOk());
  ASSERT_THAT(h().Apply(*overlap), IsOk());

  absl::StatusOr<Json> routes = h().WaitForObject(
      ResourcePath("greeter-routes"),
      [](const Json& o) {
        return Generation(o) == 2 && HasCondition(o, "Accepted", "False", "OverlappingVariants") &&
               HasCondition(o, "Programmed", "False", "ServingPreviousRevision");
      },
      "Accepted=False OverlappingVariants, Programmed=False ServingPreviousRevision");
  ASSERT_THAT(routes, IsOk());
  const Json* accepted = FindCondition(*routes, "Accepted");
  ASSERT_NE(accepted, nullptr);
  EXPECT_THAT(GetString(*accepted, {"message"}), HasSubstr("prod")) << "names the variants";
  absl::StatusOr<double> rejected =
      ControllerHarness::Metric(*controller, "facet_objects_rejected");
  ASSERT_THAT(rejected, IsOk());
  EXPECT_EQ(*rejected, 1);
  // The rejected generation swaps the clusters; clients still get generation 1.
  ExpectRoutes(*controller, {{"prod", "prod"}, {"test", "test"}});
  // /explain (and so /ui/explain) says the route serves its previous
  // revision, with the rejection's reason, as facet serve's does; /events
  // (the console's timeline) has the rejection with the time it began.
  absl::StatusOr<std::pair<int, std::string>> explain = ControllerHarness::AdminGet(
      controller->admin_address, "/explain?target=greeter&param=env=prod");
  ASSERT_THAT(explain, IsOk());
  EXPECT_EQ(explain->first, 200) << explain->second;
  EXPECT_THAT(explain->second,
              ContainsRegex(R"("serving_previous": ?"spec\.variants\[1\]: variants .*overlap)"))
      << explain->second;
  absl::StatusOr<std::pair<int, std::string>> events =
      ControllerHarness::AdminGet(controller->admin_address, "/events");
  ASSERT_THAT(events, IsOk());
  EXPECT_THAT(events->second, HasSubstr("/greeter-routes rejected: ")) << events->second;
  EXPECT_THAT(events->second, HasSubstr("previous revision serving since ")) << events->second;

  // Fixing the object (generation 3) makes it accepted and programmed again.
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  ASSERT_THAT(h().Apply(*greeter), IsOk());
  EXPECT_THAT(h().WaitForObject(
                  ResourcePath("greeter-routes"),
                  [](const Json& o) { return Generation(o) == 3 && IsProgrammed(o); },
                  "generation 3 programmed again"),
              IsOk());
  EXPECT_THAT(PollUntil(
                  [&] {
                    absl::StatusOr<double> now =
                        ControllerHarness::Metric(*controller, "facet_objects_rejected");
                    return now.ok() && *now == 0;
                  },
                  kWait, "facet_objects_rejected 0"),
              IsOk());
}

// 4. An XdsResource publishing into an authority whose XdsAuthority does not
// admit its namespace is rejected and never served; admitting the namespace
// later serves it.
TEST_F(ControllerE2eTest, ResourceInAuthorityNotAdmittingItsNamespaceIsNeverServed) {
  absl::StatusOr<std::string> authorities =
      ControllerHarness::ReadTestdata("authorities-a-other.yaml");
  absl::StatusOr<std::string> a = ControllerHarness::ReadExample("20-authority-a.yaml");
  absl::StatusOr<std::string> b = ControllerHarness::ReadExample("30-authority-b.yaml");
  ASSERT_THAT(authorities, IsOk());
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(h().Apply(absl::StrCat(*authorities, "\n---\n", *a, "\n---\n", *b)), IsOk());
  // Without --namespaces: the controller watches XdsResources in every namespace.
  absl::StatusOr<Controller*> controller =
      h().StartController("controller", {"--leader-election=false"});
  ASSERT_THAT(controller, IsOk());
  ASSERT_THAT(h().WaitReady(**controller), IsOk());

  absl::StatusOr<Json> a_listener = h().WaitForObject(
      ResourcePath("a-greeter-listener"),
      [](const Json& o) {
        return HasCondition(o, "Accepted", "False", "AuthorityNotAllowed") &&
               HasCondition(o, "Programmed", "False");
      },
      "Accepted=False AuthorityNotAllowed");
  ASSERT_THAT(a_listener, IsOk());
  absl::StatusOr<Json> b_listener =
      h().WaitForObject(ResourcePath("b-greeter-listener"), IsProgrammed, "Programmed=True");
  ASSERT_THAT(b_listener, IsOk());
  const std::string a_name = "xdstp://a.example/envoy.config.listener.v3.Listener/greeter";
  const std::string b_name = GetString(*b_listener, {"status", "servedName"});
  ASSERT_THAT(b_name, HasSubstr("xdstp://b.example/")) << Dump(*b_listener);

  // Each XdsAuthority counts the accepted resources published under it.
  const int b_objects = CountLines(*b, "kind: XdsResource");
  EXPECT_THAT(h().WaitForObject(
                  AuthorityPath("b-example"),
                  [&](const Json& o) {
                    const Json* resources = FindPath(o, {"status", "resources"});
                    return HasCondition(o, "Accepted", "True") && resources != nullptr &&
                           resources->is_number_integer() && resources->get<int64_t>() == b_objects;
                  },
                  absl::StrCat("Accepted=True and status.resources ", b_objects)),
              IsOk());

  absl::StatusOr<std::vector<ads::DecodedResource>> served =
      Fetch((*controller)->xds_address, ads::kListenerTypeUrl, {a_name, b_name}, {{"env", "prod"}});
  ASSERT_THAT(served, IsOk());
  EXPECT_THAT(Names(*served), ::testing::ElementsAre(b_name))
      << "a.example does not admit namespace demo: its listener must not be served";

  // Admitting demo (examples/00-authorities.yaml) serves it.
  absl::StatusOr<std::string> admitting = ControllerHarness::ReadExample("00-authorities.yaml");
  ASSERT_THAT(admitting, IsOk());
  ASSERT_THAT(h().Apply(*admitting), IsOk());
  EXPECT_THAT(h().WaitForObject(ResourcePath("a-greeter-listener"), IsProgrammed,
                                "Programmed=True once a.example admits demo"),
              IsOk());
  std::vector<std::string> names;
  EXPECT_THAT(PollUntil(
                  [&] {
                    served = Fetch((*controller)->xds_address, ads::kListenerTypeUrl,
                                   {a_name, b_name}, {{"env", "prod"}});
                    names = served.ok() ? Names(*served) : std::vector<std::string>();
                    return names.size() == 2;
                  },
                  kWait, "both listeners served"),
              IsOk())
      << absl::StrJoin(names, ", ");
}

// 5. Deleting the listener removes it from a subscribed client, and a new
// client cannot resolve the target.
TEST_F(ControllerE2eTest, DeletedListenerIsRemovedFromClients) {
  Controller* controller = nullptr;
  ASSERT_NO_FATAL_FAILURE(ServeGreeter({"prod", "test"}, &controller));
  absl::StatusOr<std::unique_ptr<ads::AdsTestClient>> client =
      ads::AdsTestClient::Connect(controller->xds_address);
  ASSERT_THAT(client, IsOk());
  absl::StatusOr<std::unique_ptr<ads::SotwStream>> stream = (*client)->OpenSotw();
  ASSERT_THAT(stream, IsOk());
  ads::DiscoveryRequest subscription = ads::MakeRequest(ads::kListenerTypeUrl, {"greeter"});
  ads::DiscoveryRequest first = subscription;
  *first.mutable_node() = ads::MakeNode("ads-delete", {{"env", "prod"}});
  ASSERT_THAT((*stream)->Send(first), IsOk());
  absl::StatusOr<ads::DiscoveryResponse> response =
      (*stream)->NextOfType(ads::kListenerTypeUrl, absl::Seconds(10));
  ASSERT_THAT(response, IsOk());
  ASSERT_THAT(ads::ResourceNames(*response),
              ::facet::testing::IsOkAndHolds(::testing::ElementsAre("greeter")));
  ASSERT_THAT((*stream)->Send(ads::Ack(*response, subscription)), IsOk());

  if (ControllerHarness::KubectlUnavailableReason().empty()) {
    ASSERT_THAT(h().Kubectl({"delete", "xr", "greeter-listener", "-n", kDemoNamespace}), IsOk());
  } else {
    ASSERT_THAT(h().Delete(ResourcePath("greeter-listener")), IsOk());
  }
  response = (*stream)->NextOfType(ads::kListenerTypeUrl, kWait);
  ASSERT_THAT(response, IsOk());
  EXPECT_THAT(ads::ResourceNames(*response), ::facet::testing::IsOkAndHolds(IsEmpty()))
      << "SotW LDS carries the full set: an empty one removes greeter";
  EXPECT_THAT((*stream)->Send(ads::Ack(*response, subscription)), IsOk());

  absl::StatusOr<std::string> bootstrap =
      h().WriteBootstrap(*controller, "cpp-after-delete", {{"env", "prod"}});
  ASSERT_THAT(bootstrap, IsOk());
  absl::StatusOr<ClientRun> run = h().e2e().RunClient(
      {.bootstrap_path = *bootstrap, .count = 1, .rpc_timeout = absl::Seconds(2)});
  ASSERT_THAT(run, IsOk());
  EXPECT_FALSE(run->exit.Succeeded()) << "xds:///greeter must not resolve\n" << run->ToString();
  EXPECT_THAT(run->lines, IsEmpty()) << run->ToString();
  // The rest is untouched.
  WaitProgrammed({"greeter-routes", "greeter-prod-cluster"});
}

// 7. Two replicas with leader election: one leads and alone writes status,
// both serve; SIGTERM hands the Lease over at once.
TEST_F(ControllerE2eTest, OneOfTwoReplicasLeadsWritesStatusAndHandsOverOnSigterm) {
  ASSERT_THAT(h().e2e().StartBackends({"prod", "test", "blue"}), IsOk());
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  absl::StatusOr<std::string> blue = h().RenderE2eTemplate("greeter-blue.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  ASSERT_THAT(blue, IsOk());
  ASSERT_THAT(h().Apply(*greeter), IsOk());
  const std::vector<std::string>& args = kReplica;
  Controller* a_started = nullptr;
  Controller* b_started = nullptr;
  ASSERT_NO_FATAL_FAILURE(StartTwoReplicas(args, &a_started, &b_started));
  Controller** a = &a_started;
  Controller** b = &b_started;

  auto leading = [](const Controller& c) {
    absl::StatusOr<double> value = ControllerHarness::Metric(c, "facet_leader");
    return value.ok() ? *value : -1;
  };
  auto writes = [](const Controller& c) {
    absl::StatusOr<double> value = ControllerHarness::Metric(c, "facet_status_writes_total");
    return value.ok() ? *value : -1;
  };
  ASSERT_THAT(PollUntil([&] { return leading(**a) + leading(**b) == 1; }, kWait,
                        "exactly one replica with facet_leader 1"),
              IsOk());
  Controller* leader = leading(**a) == 1 ? *a : *b;
  Controller* follower = leader == *a ? *b : *a;
  WaitProgrammed(GreeterObjects());
  absl::StatusOr<Json> lease = h().GetObject(kLeasePath);
  ASSERT_THAT(lease, IsOk());
  const std::string first_holder = GetString(*lease, {"spec", "holderIdentity"});
  EXPECT_FALSE(first_holder.empty()) << Dump(*lease);
  // The counter is updated once a round of writes ends, just after the last
  // one is visible.
  EXPECT_THAT(PollUntil([&] { return writes(*leader) > 0; }, kWait, "the leader's status writes"),
              IsOk());
  EXPECT_EQ(writes(*follower), 0) << "only the leader writes status";

  // Both replicas serve xDS.
  ExpectRoutes(*leader, {{"prod", "prod"}});
  ExpectRoutes(*follower, {{"test", "test"}});

  // Applies `manifest`, which makes greeter-routes' generation `generation`,
  // and waits until `writer` has written its status.
  auto apply_and_expect_status_from = [&](const std::string& manifest, int64_t generation,
                                          const Controller& writer) {
    const double before = writes(writer);
    ASSERT_THAT(h().Apply(manifest), IsOk());
    EXPECT_THAT(h().WaitForObject(
                    ResourcePath("greeter-routes"),
                    [&](const Json& o) { return Generation(o) == generation && IsProgrammed(o); },
                    absl::StrCat("generation ", generation, " programmed")),
                IsOk());
    EXPECT_THAT(
        PollUntil([&] { return writes(writer) > before; }, kWait,
                  absl::StrCat(writer.name, "'s status writes for generation ", generation)),
        IsOk());
  };

  // An edit that changes status: written by the leader only.
  ASSERT_NO_FATAL_FAILURE(apply_and_expect_status_from(*blue, 2, *leader));
  EXPECT_EQ(writes(*follower), 0) << "only the leader writes status";
  EXPECT_EQ(leading(*follower), 0);

  // A gRPC client of the leader, calling when the leader stops.
  std::unique_ptr<Process> client =
      StartCallingClient(*leader, "prod", absl::Seconds(3), "ok blue", /*count=*/10);
  ASSERT_NE(client, nullptr);

  // SIGTERM releases the Lease: the follower takes over well within the
  // 15 s lease duration it would otherwise wait out.
  const absl::Time stopping = absl::Now();
  ASSERT_THAT(ControllerHarness::StopController(*leader), IsOk());
  const absl::Time stopped = absl::Now();
  EXPECT_LT(stopped - stopping, absl::Seconds(3)) << "SIGTERM with a client connected";
  ASSERT_THAT(PollUntil([&] { return leading(*follower) == 1; }, kWait,
                        "the follower to lead after the leader's SIGTERM"),
              IsOk());
  const absl::Duration takeover = absl::Now() - stopped;
  std::cerr << "controller_e2e: took over the lease "
            << absl::FormatDuration(absl::Trunc(takeover, absl::Milliseconds(1)))
            << " after the leader exited\n";
  EXPECT_LT(takeover, absl::Seconds(5)) << "the lease was not released on SIGTERM";
  lease = h().GetObject(kLeasePath);
  ASSERT_THAT(lease, IsOk());
  EXPECT_NE(GetString(*lease, {"spec", "holderIdentity"}), first_holder) << Dump(*lease);
  EXPECT_FALSE(GetString(*lease, {"spec", "holderIdentity"}).empty()) << Dump(*lease);

  // The client keeps its configuration when its xDS server goes away.
  ExpectNoFailedCalls(*client);

  // The new leader writes status.
  ASSERT_NO_FATAL_FAILURE(apply_and_expect_status_from(*greeter, 3, *follower));
  ExpectRoutes(*follower, {{"prod", "prod"}});
}

// --- 6. Watch faults --------------------------------------------------------------

// Lists per fault: the watched collections (XdsResources, ControllerRevisions,
// EndpointSlices, Services, GRPCRoutes, ReferenceGrants and XdsVariantPolicies
// in demo; XdsAuthorities), each relisted once, plus two retries where the
// fault fails a list too.
constexpr int64_t kMaxListsPerFault = 10;
// Builds per fault: changes made while the watch is down arrive in one relist
// (one build); changes through an open watch within the debounce window.
constexpr double kMaxBuildsPerFault = 4;
constexpr int kFirstPort = 10000;

std::string MarkerName(int i) { return absl::StrCat("marker-", i); }

// An XdsResource holding a ClusterLoadAssignment `marker-<i>` whose one
// endpoint has port `port` (JSON, which is YAML).
std::string MarkerManifest(int i, int port) {
  return absl::StrCat(
      R"({"apiVersion":"facet.dev/v1alpha1","kind":"XdsResource","metadata":{"name":")",
      MarkerName(i), R"(","namespace":"demo"},"spec":{"type":"endpoint","name":")", MarkerName(i),
      R"(","variants":[{"resource":{"endpoints":[{"locality":{"region":"local","zone":"z"},)",
      R"("load_balancing_weight":1,"lb_endpoints":[{"endpoint":{"address":{"socket_address":)",
      R"({"address":"127.0.0.1","port_value":)", port, "}}}}]}]}}]}}");
}

std::string Describe(const std::map<std::string, int>& endpoints) {
  return absl::StrJoin(endpoints, ", ", absl::PairFormatter("="));
}

// With the controller running, faults of the watch connection interleaved
// with changes made on the server while the watch is down. After each, what
// the controller serves equals the server's state, every object's status
// describes its current generation, and the controller did not relist or
// rebuild more than a bounded number of times.
class WatchFaultTest : public ControllerE2eTest {
 protected:
  void SetUp() override {
    ControllerE2eTest::SetUp();
    if (HasFatalFailure()) return;
    for (int i = 0; i <= 1; ++i) {
      ASSERT_THAT(h().Apply(MarkerManifest(i, kFirstPort + i), /*use_kubectl=*/false), IsOk());
    }
    markers_ = 2;
    absl::StatusOr<Controller*> controller = h().StartController("controller", kSingleReplica);
    ASSERT_THAT(controller, IsOk());
    controller_ = *controller;
    ASSERT_THAT(h().WaitReady(*controller_), IsOk());
    ASSERT_NO_FATAL_FAILURE(ExpectConverged("the initial list"));
    ASSERT_TRUE(h().server().WaitForOpenWatches(2, kWait));
    initial_lists_ = h().server().list_count();
  }

  void TearDown() override {
    if (controller_ != nullptr && !HasFatalFailure()) {
      EXPECT_LE(h().server().list_count() - initial_lists_, kMaxListsPerFault * faults_)
          << "relist storm";
    }
    ControllerE2eTest::TearDown();
  }

  // Creates marker-(k+1), changes marker-k's port, deletes marker-(k-1).
  void ChangeObjects(int k) {
    ASSERT_THAT(h().Apply(MarkerManifest(k + 1, kFirstPort + k + 1), /*use_kubectl=*/false),
                IsOk());
    ASSERT_THAT(h().Apply(MarkerManifest(k, kFirstPort + 1000 + k), /*use_kubectl=*/false), IsOk());
    ASSERT_THAT(h().Delete(ResourcePath(MarkerName(k - 1))), IsOk());
    markers_ = k + 2;
  }

  // Returns the server's ClusterLoadAssignments (name -> port); sets
  // `status_current` to whether every object's status describes its current
  // generation as programmed.
  std::map<std::string, int> ServerEndpoints(bool* status_current) {
    std::map<std::string, int> endpoints;
    *status_current = true;
    absl::StatusOr<Json> list = h().GetObject(kDemoResources);
    if (!list.ok() || Find(*list, "items") == nullptr) return endpoints;
    for (const Json& item : *Find(*list, "items")) {
      *status_current = *status_current && IsProgrammed(item);
      const Json* resource = FindPath(item, {"spec", "variants"});
      if (resource == nullptr || resource->empty()) continue;
      const Json* lb = FindPath(resource->at(0), {"resource", "endpoints"});
      if (lb == nullptr || lb->empty()) continue;
      lb = Find(lb->at(0), "lb_endpoints");
      const Json* port =
          FindPath(lb->at(0), {"endpoint", "address", "socket_address", "port_value"});
      endpoints[GetString(item, {"spec", "name"})] = port != nullptr ? port->get<int64_t>() : -1;
    }
    return endpoints;
  }

  // Returns what the controller serves for every marker name ever used.
  absl::StatusOr<std::map<std::string, int>> ServedEndpoints() {
    std::vector<std::string> names;
    for (int i = 0; i < markers_; ++i) names.push_back(MarkerName(i));
    absl::StatusOr<std::vector<ads::DecodedResource>> resources =
        Fetch(controller_->xds_address, ads::kClusterLoadAssignmentTypeUrl, names);
    if (!resources.ok()) return resources.status();
    std::map<std::string, int> endpoints;
    for (const ads::DecodedResource& resource : *resources) {
      absl::StatusOr<ClusterLoadAssignment> cla = resource.As<ClusterLoadAssignment>();
      if (!cla.ok()) return cla.status();
      endpoints[resource.name] =
          cla->endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value();
    }
    return endpoints;
  }

  void ExpectConverged(absl::string_view what) {
    std::string last;
    absl::Status converged = PollUntil(
        [&] {
          bool status_current = false;
          const std::map<std::string, int> expected = ServerEndpoints(&status_current);
          absl::StatusOr<std::map<std::string, int>> served = ServedEndpoints();
          last = absl::StrCat("server {", Describe(expected), "} served {",
                              served.ok() ? Describe(*served) : served.status().ToString(),
                              "} status ", status_current ? "current" : "behind");
          return served.ok() && *served == expected && status_current;
        },
        kWait, absl::StrCat("the served snapshot to equal the server's state after ", what),
        absl::Milliseconds(100));
    ASSERT_THAT(converged, IsOk()) << last;
  }

  // Waits until the controller is idle: no build, no status write and no
  // new resourceVersion on the server for 300 ms. Every status write is a
  // MODIFIED event that makes the controller build again and re-read each
  // object's status; a fault injected before that settles could be consumed
  // by those reads instead of by the reflectors.
  void WaitIdle() {
    auto sample = [&] {
      absl::StatusOr<std::map<std::string, double>> metrics =
          ControllerHarness::Metrics(*controller_);
      if (!metrics.ok()) return std::string("unavailable");
      return absl::StrCat((*metrics)["facet_snapshot_builds_total"], "/",
                          (*metrics)["facet_status_writes_total"], "/",
                          server().resource_version());
    };
    std::string last = sample();
    absl::Time unchanged_since = absl::Now();
    ASSERT_THAT(PollUntil(
                    [&] {
                      std::string now = sample();
                      if (now != last) {
                        last = now;
                        unchanged_since = absl::Now();
                      }
                      return absl::Now() - unchanged_since >= absl::Milliseconds(300);
                    },
                    kWait, "the controller to be idle"),
                IsOk());
  }

  // Returns how many lines of the controller's log start with "reflector"
  // and contain `text` (e.g. the injected "HTTP 500").
  int ReflectorLogLines(absl::string_view text) {
    int count = 0;
    for (const std::string& line : SplitLines(controller_->process->Stderr())) {
      count += absl::StrContains(line, "] reflector ") && absl::StrContains(line, text) ? 1 : 0;
    }
    return count;
  }

  // Waits until the controller is idle, runs `inject`, changes objects on the
  // server (while the watch is down, for faults that take it down), runs
  // `after_changes`, then expects convergence within bounded lists and builds.
  void Fault(
      absl::string_view name, absl::FunctionRef<void()> inject,
      absl::FunctionRef<void()> after_changes = [] {}) {
    SCOPED_TRACE(name);
    ++faults_;
    ASSERT_NO_FATAL_FAILURE(WaitIdle());
    const int64_t lists = h().server().list_count();
    absl::StatusOr<double> builds =
        ControllerHarness::Metric(*controller_, "facet_snapshot_builds_total");
    ASSERT_THAT(builds, IsOk());
    const absl::Time start = absl::Now();
    inject();
    ASSERT_NO_FATAL_FAILURE(ChangeObjects(faults_));
    after_changes();
    ASSERT_NO_FATAL_FAILURE(ExpectConverged(name));
    const absl::Duration converged = absl::Now() - start;
    ASSERT_TRUE(h().server().WaitForOpenWatches(2, kWait)) << "the watches were not reopened";
    absl::StatusOr<double> builds_after =
        ControllerHarness::Metric(*controller_, "facet_snapshot_builds_total");
    ASSERT_THAT(builds_after, IsOk());
    const int64_t relists = h().server().list_count() - lists;
    std::cerr << "controller_e2e: " << name << ": converged in "
              << absl::FormatDuration(absl::Trunc(converged, absl::Milliseconds(1))) << ", "
              << relists << " list(s), " << *builds_after - *builds << " build(s)\n";
    EXPECT_LE(relists, kMaxListsPerFault) << "relist storm after " << name;
    EXPECT_LE(*builds_after - *builds, kMaxBuildsPerFault) << "builds not debounced after " << name;
  }

  KubeTestServer& server() { return h().server(); }

  Controller* controller_ = nullptr;
  int markers_ = 0;
  int faults_ = 0;
  int64_t initial_lists_ = 0;
};

TEST_F(WatchFaultTest, ConvergesAfterWatchesAreCut) {
  Fault("DropWatches", [&] { server().DropWatches(); });
  Fault("DropWatches(mid_event)", [&] { server().DropWatches(/*mid_event=*/true); });
}

TEST_F(WatchFaultTest, ConvergesAfterWatchesExpireAndHistoryIsCompacted) {
  Fault("ExpireWatches (410)", [&] { server().ExpireWatches(); });
  Fault("CompactHistory", [&] { server().CompactHistory(); });
}

// The two relists after the cut (one per collection) get 500, then succeed.
TEST_F(WatchFaultTest, ConvergesAfterServerErrorsOnRelist) {
  Fault(
      "DropWatches + 500", [&] { server().DropWatches(); },
      [&] { server().FailNextRequests(2, 500); });
  EXPECT_EQ(ReflectorLogLines("HTTP 500"), 2) << "the injected 500s did not reach the reflectors\n"
                                              << controller_->process->Stderr();
}

TEST_F(WatchFaultTest, ConvergesAfterThrottlingOnRelist) {
  Fault(
      "DropWatches + 429", [&] { server().DropWatches(); },
      [&] { server().FailNextRequests(2, 429, /*retry_after_seconds=*/1); });
  EXPECT_EQ(ReflectorLogLines("HTTP 429"), 2) << "the injected 429s did not reach the reflectors\n"
                                              << controller_->process->Stderr();
}

TEST_F(WatchFaultTest, ConvergesAfterApiServerRestart) {
  Fault("Restart", [&] { ASSERT_THAT(server().Restart(), IsOk()); });
}

}  // namespace
}  // namespace facet::e2e
