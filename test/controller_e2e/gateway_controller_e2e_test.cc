// End-to-end: `facet controller` serving the Gateway API from the test
// Kubernetes API server. Services, EndpointSlices and a GRPCRoute
// (test/e2e/testdata/gateway-serve.yaml.tmpl, in namespace demo) applied
// with the real kubectl; both real xDS clients (gRPC C++ 1.51, grpc-js-xds)
// dial xds:///S.demo.svc.cluster.local:P. The route's calls go where its
// rules say, its status carries Facet's parent entry beside another
// controller's (read back with `kubectl get -o jsonpath`), a live
// EndpointSlice edit moves calls without a failed one, and a cluster without
// the Gateway API's CRDs still serves XdsResources and Services. An
// XdsVariantPolicy applied with kubectl makes the route's canary rule exist
// only for env=prod clients (its status names Facet's ancestor entry), a live
// edit of its `when` switches a calling client once, and a second, newer
// policy on the same rule is Conflicted.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
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
constexpr char kPoliciesPath[] = "/apis/facet.dev/v1alpha1/namespaces/demo/xdsvariantpolicies/";
constexpr char kFacetController[] = "facet.dev/gateway-controller";
constexpr char kEchoMethod[] = "/facet.test.Echo/Echo";
const std::map<std::string, std::string> kCanary = {{"env", "canary"}};
const std::vector<std::string> kSingleReplica = {"--namespaces", kDemoNamespace,
                                                 "--leader-election=false"};
const std::vector<std::string> kMethods = {"/facet.test.Echo/Echo", "/facet.test.Echo/EchoTwo",
                                           "/facet.test.Echo/EchoThree"};

// Returns the condition `type` of `controller`'s entry in `object`'s
// status.`entries` (parents of a route, ancestors of a policy), or nullptr.
const Json* EntryCondition(const Json& object, const std::string& entries,
                           const std::string& controller, const std::string& type) {
  const Json* list = FindPath(object, {"status", entries});
  if (list == nullptr || !list->is_array()) return nullptr;
  for (const Json& entry : *list) {
    if (GetString(entry, {"controllerName"}) != controller) continue;
    const auto conditions = entry.find("conditions");
    if (conditions == entry.end() || !conditions->is_array()) return nullptr;
    for (const Json& condition : *conditions) {
      if (condition.value("type", "") == type) return &condition;
    }
  }
  return nullptr;
}

// Whether Facet's entry in `object`'s status.`entries` has Accepted=`status`
// at the object's generation.
bool AcceptedByFacet(const Json& object, const std::string& entries,
                     const std::string& status = "True") {
  const Json* accepted = EntryCondition(object, entries, kFacetController, "Accepted");
  return accepted != nullptr && accepted->value("status", "") == status &&
         accepted->value("observedGeneration", int64_t{0}) == Generation(object);
}

// The XdsVariantPolicy `name` on the route's canary rule, applying `when`
// (flow YAML).
std::string CanaryPolicy(const std::string& name, const std::string& when) {
  return absl::StrCat("apiVersion: facet.dev/v1alpha1\nkind: XdsVariantPolicy\n",
                      "metadata: {name: ", name, ", namespace: demo}\n",
                      "spec:\n"
                      "  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: "
                      "echo, sectionName: canary}]\n"
                      "  when: ",
                      when, "\n");
}

// Returns how many of `out`'s lines are `line`.
int CountLines(absl::string_view out, absl::string_view line) {
  int n = 0;
  for (absl::string_view l : absl::StrSplit(out, '\n')) n += l == line ? 1 : 0;
  return n;
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
    absl::StatusOr<std::string> bootstrap =
        h().WriteBootstrap(*controller_, absl::StrCat("gateway-", ClientKindName(GetParam())), {});
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

  // Options for calls to Echo on kEcho with the canary header through
  // `bootstrap`, `count` of them.
  ClientOptions CanaryCalls(const std::string& bootstrap, int count = 1) {
    ClientOptions options{.kind = GetParam(), .target = kEcho, .bootstrap_path = bootstrap};
    options.count = count;
    options.rpc_timeout = absl::Seconds(10);
    options.methods = {kEchoMethod};
    options.metadata = {kCanary};
    return options;
  }

  // Returns the outcomes of `count` canary calls through `bootstrap`.
  std::vector<std::string> CanaryOutcomes(const std::string& bootstrap, int count) {
    return CallOutcomes(h().e2e(), CanaryCalls(bootstrap, count));
  }

  // Returns a bootstrap whose node metadata has env=`env`.
  std::string BootstrapFor(const std::string& env) {
    absl::StatusOr<std::string> bootstrap = h().WriteBootstrap(
        *controller_, absl::StrCat("gateway-", env, "-", ClientKindName(GetParam())),
        {{"env", env}});
    EXPECT_THAT(bootstrap, IsOk());
    return bootstrap.value_or("");
  }

  // Calls Echo with the canary header through `bootstrap` until `backend`
  // answers; returns whether it did within 30 s.
  bool WaitForCanaryAnsweredBy(const std::string& bootstrap, const std::string& backend) {
    const bool answered = WaitForOutcome(h().e2e(), CanaryCalls(bootstrap), "ok " + backend);
    if (!answered) ADD_FAILURE() << h().ControllerLogs();
    return answered;
  }

  // Returns `kubectl get xdsvariantpolicy <name> -o jsonpath=<path>`.
  std::string PolicyJsonpath(const std::string& name, const std::string& path) {
    absl::StatusOr<std::string> out =
        h().Kubectl({"get", "xdsvariantpolicy", name, "-n", kDemoNamespace, "-o",
                     absl::StrCat("jsonpath=", path)});
    EXPECT_THAT(out, IsOk());
    return out.value_or("");
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

  ASSERT_THAT(h().WaitForObject(
                  kRoutePath, [](const Json& route) { return AcceptedByFacet(route, "parents"); },
                  "Facet's parent Accepted=True"),
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
  const std::string ours =
      R"(.status.parents[?(@.controllerName=="facet.dev/gateway-controller")])";
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
  ASSERT_THAT(
      (*client)->WaitForStdout(
          [](absl::string_view out) { return absl::StrContains(out, "ok plain\n"); }, kWait),
      IsOk());
  ASSERT_THAT(h().Apply(PlainSlice(h().e2e().backend_ports().at("v1"))), IsOk());
  ExpectSwitchedOnce(FinishContinuousRun(**client), "plain", "v1");
}

// An XdsVariantPolicy applied with kubectl on the route's canary rule
// (Echo with env: canary to v3) with when {env: prod}: an env=prod client's
// call takes the rule, an env=dev client's takes the Echo rule (v1); the
// policy's status holds Facet's ancestor entry, Accepted at its generation,
// as kubectl shows it.
TEST_P(GatewayControllerTest, PolicyRuleOnlyForProd) {
  const std::string prod = BootstrapFor("prod");
  const std::string dev = BootstrapFor("dev");
  // Without the policy every client takes the canary rule.
  ASSERT_TRUE(WaitForCanaryAnsweredBy(dev, "v3"));
  ASSERT_THAT(h().Apply(CanaryPolicy("canary-policy", "{env: prod}")), IsOk());
  ASSERT_TRUE(WaitForCanaryAnsweredBy(dev, "v1"));
  EXPECT_EQ(absl::StrJoin(CanaryOutcomes(dev, 3), ", "), "ok v1, ok v1, ok v1");
  EXPECT_EQ(absl::StrJoin(CanaryOutcomes(bootstrap_, 2), ", "), "ok v1, ok v1")
      << "no node metadata: not prod";
  ClientOptions prod_calls = CanaryCalls(prod, 2);
  prod_calls.methods.push_back("/facet.test.Echo/EchoTwo");
  prod_calls.metadata.push_back({});
  EXPECT_EQ(absl::StrJoin(CallOutcomes(h().e2e(), prod_calls), ", "),
            "ok v3, ok v2, ok v1, ok v2, ok v3, ok v2, ok v1, ok v2");

  const std::string path = absl::StrCat(kPoliciesPath, "canary-policy");
  absl::StatusOr<Json> policy = h().WaitForObject(
      path, [](const Json& object) { return AcceptedByFacet(object, "ancestors"); },
      "Facet's ancestor Accepted=True");
  ASSERT_THAT(policy, IsOk());
  if (std::string reason = ControllerHarness::KubectlUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << "kubectl checks skipped: " << reason;
  }
  const std::string ours =
      R"(.status.ancestors[?(@.controllerName=="facet.dev/gateway-controller")])";
  EXPECT_EQ(PolicyJsonpath("canary-policy", "{.status.ancestors[*].controllerName}"),
            kFacetController);
  EXPECT_EQ(PolicyJsonpath("canary-policy", absl::StrCat("{", ours, ".ancestorRef.name}")), "echo");
  EXPECT_EQ(
      PolicyJsonpath("canary-policy",
                     absl::StrCat("{", ours, R"(.conditions[?(@.type=="Accepted")].status})")),
      "True");
  const std::string generation = PolicyJsonpath("canary-policy", "{.metadata.generation}");
  EXPECT_EQ(generation, absl::StrCat(Generation(*policy)));
  EXPECT_EQ(
      PolicyJsonpath(
          "canary-policy",
          absl::StrCat("{", ours, R"(.conditions[?(@.type=="Accepted")].observedGeneration})")),
      generation);
}

// The policy's `when` edited with kubectl apply from env=prod to env=dev
// while an env=prod client calls in a loop: it leaves the canary rule (v3)
// for the Echo rule (v1) once, without a failed call; the policy is
// Accepted at its new generation.
TEST_P(GatewayControllerTest, LivePolicyEditNoFailedRpc) {
  const std::string prod = BootstrapFor("prod");
  ASSERT_THAT(h().Apply(CanaryPolicy("canary-policy", "{env: prod}")), IsOk());
  ASSERT_TRUE(WaitForCanaryAnsweredBy(BootstrapFor("dev"), "v1"));
  ClientOptions continuous = CanaryCalls(prod);
  continuous.duration = absl::Seconds(8);
  continuous.interval = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<Process>> client = h().e2e().StartClient(continuous);
  ASSERT_THAT(client, IsOk());
  // About a second of calls answered by v3.
  ASSERT_THAT(
      (*client)->WaitForStdout([](absl::string_view out) { return CountLines(out, "ok v3") >= 50; },
                               absl::Seconds(20)),
      IsOk());
  ASSERT_THAT(h().Apply(CanaryPolicy("canary-policy", "{env: dev}")), IsOk());
  EXPECT_THAT(
      (*client)->WaitForStdout([](absl::string_view out) { return CountLines(out, "ok v1") > 0; },
                               absl::Seconds(5)),
      IsOk())
      << "the client did not switch to v1 within 5 s of the edit";
  ExpectSwitchedOnce(FinishContinuousRun(**client), "v3", "v1");
  absl::StatusOr<Json> policy = h().WaitForObject(
      absl::StrCat(kPoliciesPath, "canary-policy"),
      [](const Json& object) {
        return Generation(object) == 2 && AcceptedByFacet(object, "ancestors");
      },
      "Facet's ancestor Accepted=True at generation 2");
  EXPECT_THAT(policy, IsOk());
}

// A second policy on the same rule, created after the first, is
// Accepted=False with reason Conflicted (naming the first); the first stays
// Accepted and keeps deciding who reaches the rule.
TEST_P(GatewayControllerTest, NewerPolicyOnTheSameRuleIsConflicted) {
  ASSERT_THAT(h().Apply(CanaryPolicy("canary-policy", "{env: prod}")), IsOk());
  const std::string first = absl::StrCat(kPoliciesPath, "canary-policy");
  ASSERT_THAT(h().WaitForObject(
                  first, [](const Json& object) { return AcceptedByFacet(object, "ancestors"); },
                  "the first policy Accepted=True"),
              IsOk());
  // Named after the first too, so it loses even within the same second.
  ASSERT_THAT(h().Apply(CanaryPolicy("canary-policy-later", "{env: dev}")), IsOk());
  absl::StatusOr<Json> later = h().WaitForObject(
      absl::StrCat(kPoliciesPath, "canary-policy-later"),
      [](const Json& object) { return AcceptedByFacet(object, "ancestors", "False"); },
      "the later policy Accepted=False");
  ASSERT_THAT(later, IsOk());
  const Json* accepted = EntryCondition(*later, "ancestors", kFacetController, "Accepted");
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(accepted->value("reason", ""), "Conflicted") << Dump(*accepted);
  // "(older)", or "(as old, ...)" when both were created within a second.
  EXPECT_THAT(accepted->value("message", ""),
              ::testing::AllOf(::testing::HasSubstr("demo/canary-policy ("),
                               ::testing::HasSubstr("targets GRPCRoute demo/echo rule canary; "
                                                    "only one policy applies")));
  EXPECT_THAT(h().GetObject(first),
              ::facet::testing::IsOkAndHolds(::testing::Truly(
                  [](const Json& object) { return AcceptedByFacet(object, "ancestors"); })));
  // The first policy still decides: env=dev does not reach the rule.
  EXPECT_EQ(absl::StrJoin(CanaryOutcomes(BootstrapFor("dev"), 2), ", "), "ok v1, ok v1");
  if (std::string reason = ControllerHarness::KubectlUnavailableReason(); !reason.empty()) {
    GTEST_SKIP() << "kubectl checks skipped: " << reason;
  }
  const std::string ours =
      R"(.status.ancestors[?(@.controllerName=="facet.dev/gateway-controller")])";
  EXPECT_EQ(
      PolicyJsonpath("canary-policy-later",
                     absl::StrCat("{", ours, R"(.conditions[?(@.type=="Accepted")].reason})")),
      "Conflicted");
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
  EXPECT_THAT(h().WaitForObject(
                  ResourcePath("greeter-routes"),
                  [](const Json& object) { return HasCondition(object, "Programmed", "True"); },
                  "Programmed=True"),
              IsOk());

  absl::StatusOr<std::string> prod =
      h().WriteBootstrap(**controller, "cpp-prod", {{"env", "prod"}});
  ASSERT_THAT(prod, IsOk());
  absl::StatusOr<std::string> plain = h().WriteBootstrap(**controller, "cpp-plain", {});
  ASSERT_THAT(plain, IsOk());
  absl::StatusOr<std::vector<ClientRun>> runs =
      h().e2e().RunClients({{.bootstrap_path = *prod, .count = 3},
                            {.target = kPlain, .bootstrap_path = *plain, .count = 3}});
  ASSERT_THAT(runs, IsOk());
  ASSERT_THAT(*runs, SizeIs(2));
  EXPECT_THAT((*runs)[0].lines, Each("prod")) << (*runs)[0].ToString();
  EXPECT_THAT((*runs)[1].lines, Each("plain")) << (*runs)[1].ToString();

  for (const auto& [kind, available] : std::map<std::string, double>{
           {"GRPCRoute", 0}, {"ReferenceGrant", 0}, {"XdsVariantPolicy", 1}}) {
    EXPECT_THAT(
        ControllerHarness::Metric(
            **controller, absl::StrCat("facet_gateway_kind_available{kind=\"", kind, "\"}")),
        ::facet::testing::IsOkAndHolds(available))
        << kind;
  }
}

}  // namespace
}  // namespace facet::e2e
