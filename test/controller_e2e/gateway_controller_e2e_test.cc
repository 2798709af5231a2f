// End-to-end: `facet controller` serving the Gateway API from the test
// Kubernetes API server. Services, EndpointSlices and a GRPCRoute
// (test/e2e/testdata/gateway-serve.yaml.tmpl, in namespace demo) applied
// with the real kubectl; both real xDS clients (gRPC C++ 1.51, grpc-js-xds)
// dial xds:///S.demo.svc.cluster.local:P. The route's calls go where its
// rules say, its status carries Facet's parent entry beside another
// controller's (read back with `kubectl get -o jsonpath`), a live
// EndpointSlice edit moves calls without a failed one, and a cluster without
// the Gateway API's CRDs still serves XdsResources and Services.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/controller_e2e/controller_harness.h"
#include "test/controller_e2e/controller_test_base.h"
#include "test/e2e/client_checks.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::facet::testing::IsOk;
using ::testing::Each;
using ::testing::SizeIs;

constexpr absl::Duration kWait = absl::Seconds(20);
constexpr char kPlain[] = "xds:///plain.demo.svc.cluster.local:50051";
constexpr char kEcho[] = "xds:///echo.demo.svc.cluster.local:7070";
constexpr char kRoutePath[] = "/apis/gateway.networking.k8s.io/v1/namespaces/demo/grpcroutes/echo";
const std::vector<std::string> kSingleReplica = {"--namespaces", kDemoNamespace,
                                                 "--leader-election=false"};
const std::vector<std::string> kMethods = {"/facet.test.Echo/Echo", "/facet.test.Echo/EchoTwo",
                                           "/facet.test.Echo/EchoThree"};

// Returns the status.parents entry of `controller` in `route`, or nullptr.
const Json* ParentOf(const Json& route, const std::string& controller) {
  const Json* parents = FindPath(route, {"status", "parents"});
  if (parents == nullptr || !parents->is_array()) return nullptr;
  for (const Json& parent : *parents) {
    if (GetString(parent, {"controllerName"}) == controller) return &parent;
  }
  return nullptr;
}

// Whether Facet's entry in `route` is Accepted=True at the route's generation.
bool AcceptedByFacet(const Json& route) {
  const Json* parent = ParentOf(route, "facet.dev/gateway-controller");
  if (parent == nullptr) return false;
  for (const Json& condition : parent->value("conditions", Json::array())) {
    if (condition.value("type", "") == "Accepted") {
      return condition.value("status", "") == "True" &&
             condition.value("observedGeneration", int64_t{0}) == Generation(route);
    }
  }
  return false;
}

// The slice of Service plain, sending its calls to 127.0.0.1:`port`.
std::string PlainSlice(int port) {
  return absl::StrCat(R"(apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: plain-1, namespace: demo, labels: {kubernetes.io/service-name: plain}}
addressType: IPv4
ports: [{name: grpc, port: )",
                      port, R"(}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
)");
}

class GatewayControllerTest : public ControllerTestBase,
                              public ::testing::WithParamInterface<ClientKind> {
 protected:
  void SetUp() override {
    if (GetParam() == ClientKind::kNode) {
      if (std::string reason = E2eHarness::NodeClientUnavailableReason(); !reason.empty()) {
        GTEST_SKIP() << reason;
      }
    }
    ControllerTestBase::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_THAT(h().e2e().StartBackends({"plain", "v1", "v2", "v3"}), IsOk());
    absl::StatusOr<std::string> objects = h().e2e().RenderManifest("gateway-serve.yaml.tmpl");
    ASSERT_THAT(objects, IsOk());
    ASSERT_THAT(h().Apply(absl::StrReplaceAll(*objects, {{"namespace: e2e", "namespace: demo"}})),
                IsOk());
    // Another controller (a mesh serving the same route to sidecars) wrote
    // its entry first.
    absl::StatusOr<Json> route = h().GetObject(kRoutePath);
    ASSERT_THAT(route, IsOk());
    (*route)["status"] = *ParseJson(R"({"parents": [{
        "parentRef": {"group": "", "kind": "Service", "name": "echo", "port": 7070},
        "controllerName": "istio.io/gateway-controller",
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                        "message": "istio", "observedGeneration": 1,
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]})");
    ASSERT_THAT(h().KubeRequest("PUT", absl::StrCat(kRoutePath, "/status"), "application/json",
                                Dump(*route)),
                IsOk());
    absl::StatusOr<Controller*> started = h().StartController("controller", kSingleReplica);
    ASSERT_THAT(started, IsOk());
    controller_ = *started;
    ASSERT_THAT(h().WaitReady(*controller_), IsOk());
    absl::StatusOr<std::string> bootstrap = h().WriteBootstrap(
        *controller_, absl::StrCat("gateway-", ClientKindName(GetParam())), {});
    ASSERT_THAT(bootstrap, IsOk());
    bootstrap_ = *bootstrap;
  }

  // Calls `methods` in turn on `target`, `count` rounds; returns each call's
  // outcome ("ok <backend>" or "fail <CODE>") in order.
  std::vector<std::string> Outcomes(const std::string& target, std::vector<std::string> methods,
                                    int count) {
    return CallOutcomes(h().e2e(), {.kind = GetParam(),
                                    .target = target,
                                    .bootstrap_path = bootstrap_,
                                    .count = count,
                                    .rpc_timeout = absl::Seconds(10),
                                    .methods = std::move(methods)});
  }

  Controller* controller_ = nullptr;
  std::string bootstrap_;
};

// The route's rules decide where calls go (Echo to v1, EchoTwo to v2,
// anything else UNIMPLEMENTED); a Service without a route reaches its own
// endpoints; the route's status holds Facet's entry, accepted at its
// generation, after the other controller's, as kubectl shows it.
TEST_P(GatewayControllerTest, RoutedCallsAndStatusBesideAnotherControllers) {
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, kMethods, 2), ", "),
            "ok v1, ok v2, fail UNIMPLEMENTED, ok v1, ok v2, fail UNIMPLEMENTED");
  EXPECT_THAT(Outcomes(kPlain, {"/facet.test.Echo/Whoami"}, 3), Each("ok plain"));

  ASSERT_THAT(h().WaitForObject(kRoutePath, AcceptedByFacet, "Facet's parent Accepted=True"),
              IsOk());
  if (std::string reason = ControllerHarness::KubectlUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << "kubectl checks skipped: " << reason;
  }
  auto jsonpath = [&](const std::string& path) -> std::string {
    absl::StatusOr<std::string> out = h().Kubectl(
        {"get", "grpcroute", "echo", "-n", kDemoNamespace, "-o", absl::StrCat("jsonpath=", path)});
    EXPECT_THAT(out, IsOk());
    return out.value_or("");
  };
  const std::string ours = R"(.status.parents[?(@.controllerName=="facet.dev/gateway-controller")])";
  EXPECT_EQ(jsonpath(absl::StrCat("{", ours, R"(.conditions[?(@.type=="Accepted")].status})")),
            "True");
  EXPECT_EQ(jsonpath(absl::StrCat("{", ours,
                                  R"(.conditions[?(@.type=="Accepted")].observedGeneration})")),
            "1");
  EXPECT_EQ(jsonpath(absl::StrCat("{", ours, R"(.conditions[?(@.type=="ResolvedRefs")].status})")),
            "True");
  EXPECT_EQ(jsonpath("{.status.parents[*].controllerName}"),
            "istio.io/gateway-controller facet.dev/gateway-controller");
  EXPECT_EQ(jsonpath(R"({.status.parents[?(@.controllerName=="istio.io/gateway-controller")])"
                     R"(.conditions[0].message})"),
            "istio");
}

// An EndpointSlice edit (kubectl apply) moves a calling client from one
// backend to the other without a failed call.
TEST_P(GatewayControllerTest, LiveEndpointSliceEditFailsNoCall) {
  absl::StatusOr<std::unique_ptr<Process>> client =
      h().e2e().StartClient({.kind = GetParam(),
                             .target = kPlain,
                             .bootstrap_path = bootstrap_,
                             .duration = absl::Seconds(6),
                             .interval = absl::Milliseconds(20)});
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT((*client)->WaitForStdout(
                  [](absl::string_view out) { return absl::StrContains(out, "ok plain\n"); }, kWait),
              IsOk());
  ASSERT_THAT(h().Apply(PlainSlice(h().e2e().backend_ports().at("v1"))), IsOk());
  ExpectSwitchedOnce(FinishContinuousRun(**client), "plain", "v1");
}

INSTANTIATE_TEST_SUITE_P(Clients, GatewayControllerTest,
                         ::testing::Values(ClientKind::kCpp, ClientKind::kNode),
                         [](const auto& info) { return ClientKindName(info.param); });

class GatewayCrdsMissingTest : public ControllerTestBase {};

// A cluster without the Gateway API's CRDs: the controller publishes at
// once, serves XdsResources and Services, and says which kinds it lacks.
TEST_F(GatewayCrdsMissingTest, XdsResourcesAndServicesAreStillServed) {
  harness_.reset();
  absl::StatusOr<std::unique_ptr<ControllerHarness>> harness =
      ControllerHarness::Create({"gateway.networking.k8s.io"});
  ASSERT_THAT(harness, IsOk());
  harness_ = *std::move(harness);
  ASSERT_THAT(h().e2e().StartBackends({"prod", "test", "plain"}), IsOk());
  absl::StatusOr<std::string> greeter = h().RenderE2eTemplate("greeter.yaml.tmpl");
  ASSERT_THAT(greeter, IsOk());
  ASSERT_THAT(h().Apply(*greeter), IsOk());
  ASSERT_THAT(h().Apply(absl::StrCat(
                  "apiVersion: v1\nkind: Service\nmetadata: {name: plain, namespace: demo}\n"
                  "spec: {ports: [{name: grpc, port: 50051}]}\n---\n",
                  PlainSlice(h().e2e().backend_ports().at("plain")))),
              IsOk());
  absl::StatusOr<Controller*> controller = h().StartController("controller", kSingleReplica);
  ASSERT_THAT(controller, IsOk());
  ASSERT_THAT(h().WaitReady(**controller), IsOk());
  EXPECT_THAT(h().WaitForObject(ResourcePath("greeter-routes"),
                                [](const Json& object) {
                                  return HasCondition(object, "Programmed", "True");
                                },
                                "Programmed=True"),
              IsOk());

  absl::StatusOr<std::string> prod = h().WriteBootstrap(**controller, "cpp-prod", {{"env", "prod"}});
  ASSERT_THAT(prod, IsOk());
  absl::StatusOr<std::string> plain = h().WriteBootstrap(**controller, "cpp-plain", {});
  ASSERT_THAT(plain, IsOk());
  absl::StatusOr<std::vector<ClientRun>> runs = h().e2e().RunClients(
      {{.bootstrap_path = *prod, .count = 3}, {.target = kPlain, .bootstrap_path = *plain, .count = 3}});
  ASSERT_THAT(runs, IsOk());
  ASSERT_THAT(*runs, SizeIs(2));
  EXPECT_THAT((*runs)[0].lines, Each("prod")) << (*runs)[0].ToString();
  EXPECT_THAT((*runs)[1].lines, Each("plain")) << (*runs)[1].ToString();

  for (const auto& [kind, available] : std::map<std::string, double>{
           {"GRPCRoute", 0}, {"ReferenceGrant", 0}, {"XdsVariantPolicy", 1}}) {
    EXPECT_THAT(ControllerHarness::Metric(
                    **controller, absl::StrCat("facet_gateway_kind_available{kind=\"", kind, "\"}")),
                ::facet::testing::IsOkAndHolds(available))
        << kind;
  }
}

}  // namespace
}  // namespace facet::e2e
