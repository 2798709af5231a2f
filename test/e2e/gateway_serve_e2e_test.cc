// End-to-end: `facet serve` on a directory of Gateway API objects
// (testdata/gateway-serve.yaml.tmpl: Services, EndpointSlices to e2e
// backends, a GRPCRoute), called through both real xDS clients (gRPC C++
// 1.51 and grpc-js-xds 1.14) with wait-for-ready on, dialling
// xds:///S.N.svc.cluster.local:P: a Service without a route reaches its own
// endpoints; the route's method and header matches pick the backend, and a
// call no rule matches fails UNIMPLEMENTED. `facet validate` accepts the
// directory and /status shows each object, the route with its status. An
// XdsVariantPolicy written beside them makes the route's canary rule exist
// only for clients whose node metadata says env=prod, and editing its
// `when` switches a running client without a failed call. A consumer route
// (a GRPCRoute in namespace a on Service e2e/echo) is for the clients whose
// node metadata says namespace=a only.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test/e2e/client_checks.h"
#include "test/e2e/e2e_harness.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {
namespace {

using ::facet::testing::IsOk;
using ::testing::Each;
using ::testing::HasSubstr;

constexpr char kPlain[] = "xds:///plain.e2e.svc.cluster.local:50051";
constexpr char kEcho[] = "xds:///echo.e2e.svc.cluster.local:7070";

class GatewayServeTest : public ServedManifestTest {
 protected:
  void SetUp() override {
    Serve({"plain", "v1", "v2", "v3"}, "gateway-serve.yaml.tmpl", "gateway.yaml",
          "1 valid, 0 rejected; 0 errors, 0 warnings", "gateway");
  }

  // Calls `methods` in turn on `target`, `count` rounds, once per metadata
  // set; returns each call's outcome in order.
  std::vector<std::string> Outcomes(const std::string& target, std::vector<std::string> methods,
                                    int count,
                                    std::vector<std::map<std::string, std::string>> metadata = {}) {
    return CallOutcomes(*harness_, {.kind = GetParam(),
                                    .target = target,
                                    .bootstrap_path = bootstrap_,
                                    .count = count,
                                    .rpc_timeout = absl::Seconds(10),
                                    .methods = std::move(methods),
                                    .metadata = std::move(metadata)});
  }

  // Writes the XdsVariantPolicy demo-canary on the route's canary rule with
  // `when` (flow YAML) as policy.yaml, atomically.
  void WritePolicy(const std::string& when) {
    WriteManifest(
        "policy.yaml",
        absl::StrCat(
            "apiVersion: facet.dev/v1alpha1\nkind: XdsVariantPolicy\n"
            "metadata: {name: canary-policy, namespace: e2e}\n"
            "spec:\n"
            "  targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: echo, "
            "sectionName: canary}]\n"
            "  when: ",
            when, "\n"));
  }

  // Writes `text` as the manifest file `name`, atomically.
  void WriteManifest(const std::string& name, const std::string& text) {
    const std::filesystem::path file = std::filesystem::path(harness_->manifest_dir()) / name;
    std::ofstream(file.string() + ".tmp") << text;
    std::filesystem::rename(file.string() + ".tmp", file);
  }

  // Returns a bootstrap whose node metadata has `key`=`value`.
  std::string BootstrapFor(const std::string& value, const std::string& key = "env") {
    absl::StatusOr<std::string> bootstrap = harness_->WriteBootstrap(
        {.node_id = absl::StrCat("gateway-", key, "-", value, "-", ClientKindName(GetParam())),
         .metadata = {{key, value}},
         .authorities = {}});
    EXPECT_THAT(bootstrap, IsOk());
    return bootstrap.ok() ? *bootstrap : "";
  }

  // Writes the consumer route a/echo-for-a on e2e/echo:7070 (every call to
  // echo-v2) and the ReferenceGrant in e2e it needs, as consumer.yaml, atomically.
  void WriteConsumerRoute() {
    WriteManifest(
        "consumer.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\n"
        "metadata: {name: echo-for-a, namespace: a}\n"
        "spec:\n"
        "  parentRefs: [{group: '', kind: Service, name: echo, namespace: e2e, port: 7070}]\n"
        "  rules: [{backendRefs: [{name: echo-v2, namespace: e2e, port: 7070}]}]\n"
        "---\n"
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\n"
        "metadata: {name: from-a, namespace: e2e}\n"
        "spec:\n"
        "  from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: a}]\n"
        "  to: [{group: '', kind: Service}]\n");
  }

  // Calls Echo with the canary header through `bootstrap` until it is
  // answered by `backend` (a client at a time: a new policy file is held
  // until it is quiet); returns whether it was within 30 s.
  bool WaitForCanaryAnsweredBy(const std::string& bootstrap, const std::string& backend) {
    return WaitForOutcome(*harness_,
                          {.kind = GetParam(),
                           .target = kEcho,
                           .bootstrap_path = bootstrap,
                           .rpc_timeout = absl::Seconds(10),
                           .methods = {kEchoMethod},
                           .metadata = {kCanary}},
                          "ok " + backend);
  }

  // Returns the XdsVariantPolicy's status as /status shows it (null when
  // absent).
  nlohmann::json PolicyStatus() {
    absl::StatusOr<std::string> text = harness_->AdminGet(E2eHarness::kFacet, "/status");
    if (!text.ok()) return nullptr;
    const nlohmann::json status = nlohmann::json::parse(*text);
    for (const nlohmann::json& object : status["gateway_objects"]) {
      if (object["kind"] == "XdsVariantPolicy" && object.contains("status")) {
        return object["status"];
      }
    }
    return nullptr;
  }

  static constexpr char kEchoMethod[] = "/facet.test.Echo/Echo";
  inline static const std::map<std::string, std::string> kCanary = {{"env", "canary"}};

  // Returns the GRPCRoute's status as /status shows it (null when absent).
  nlohmann::json RouteStatus() {
    absl::StatusOr<std::string> text = harness_->AdminGet(E2eHarness::kFacet, "/status");
    if (!text.ok()) return nullptr;
    const nlohmann::json status = nlohmann::json::parse(*text);
    for (const nlohmann::json& object : status["gateway_objects"]) {
      if (object["kind"] == "GRPCRoute" && object.contains("status")) return object["status"];
    }
    return nullptr;
  }
};

const std::vector<std::string> kMethods = {"/facet.test.Echo/Echo", "/facet.test.Echo/EchoTwo",
                                           "/facet.test.Echo/EchoThree"};

// MeshBasic: a Service no GRPCRoute names is served to its own endpoints.
TEST_P(GatewayServeTest, ServiceWithoutRouteIsServed) {
  EXPECT_THAT(Outcomes(kPlain, {"/facet.test.Echo/Whoami", "/other.Service/Anything"}, 3),
              Each("ok plain"));
}

// GRPCExactMethodMatching and a header match on the same method.
TEST_P(GatewayServeTest, MethodAndHeaderRouting) {
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, kMethods, 2, {{}, {{"env", "canary"}}}), ", "),
            absl::StrJoin({"ok v1", "ok v2", "fail UNIMPLEMENTED",  // No metadata.
                           "ok v3", "ok v2", "fail UNIMPLEMENTED",  // env: canary.
                           "ok v1", "ok v2", "fail UNIMPLEMENTED",  // Second round.
                           "ok v3", "ok v2", "fail UNIMPLEMENTED"},
                          ", "));
}

// /status lists the Gateway API objects; the route with its status.
TEST_P(GatewayServeTest, StatusShowsTheRouteAccepted) {
  absl::StatusOr<std::string> text = harness_->AdminGet(E2eHarness::kFacet, "/status");
  ASSERT_THAT(text, IsOk());
  const nlohmann::json status = nlohmann::json::parse(*text);
  std::map<std::string, int> kinds;
  nlohmann::json route;
  for (const nlohmann::json& object : status["gateway_objects"]) {
    ++kinds[object["kind"].get<std::string>()];
    if (object["kind"] == "GRPCRoute") route = object;
  }
  EXPECT_EQ(kinds,
            (std::map<std::string, int>{{"EndpointSlice", 4}, {"GRPCRoute", 1}, {"Service", 5}}));
  ASSERT_TRUE(route.contains("status")) << *text;
  const nlohmann::json& parent = route["status"]["parents"][0];
  EXPECT_EQ(parent["controllerName"], "facet.dev/gateway-controller");
  EXPECT_EQ(parent["parentRef"]["name"], "echo");
  for (const nlohmann::json& condition : parent["conditions"]) {
    EXPECT_EQ(condition["status"], "True") << condition.dump();
  }
}

// An edit that makes one rule invalid (a method regex that is not RE2):
// the last accepted route keeps serving, and /status says so (Fall Back).
TEST_P(GatewayServeTest, PartiallyInvalidEditFallsBackToTheLastAccepted) {
  absl::StatusOr<std::string> text = harness_->RenderManifest("gateway-serve.yaml.tmpl");
  ASSERT_THAT(text, IsOk());
  const std::string valid = "{method: {service: facet.test.Echo, method: EchoTwo}}";
  ASSERT_THAT(*text, HasSubstr(valid));
  const std::string invalid = absl::StrReplaceAll(
      *text, {{valid,
               "{method: {type: RegularExpression, service: facet.test.Echo, method: "
               "\"(\"}}"}});
  const std::filesystem::path file = std::filesystem::path(harness_->manifest_dir()) / "gateway";
  std::ofstream(file.string() + ".tmp") << invalid;
  std::filesystem::rename(file.string() + ".tmp", file.string() + ".yaml");
  nlohmann::json conditions;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(50))) {
    const nlohmann::json status = RouteStatus();
    if (status.is_null()) continue;
    conditions = status["parents"][0]["conditions"];
    if (conditions.size() == 3) break;
  }
  ASSERT_EQ(conditions.size(), 3u) << conditions.dump();
  EXPECT_EQ(conditions[0]["type"], "Accepted");
  EXPECT_EQ(conditions[0]["status"], "True");
  EXPECT_EQ(conditions[2]["type"], "PartiallyInvalid");
  EXPECT_EQ(conditions[2]["status"], "True");
  EXPECT_EQ(conditions[2]["reason"], "UnsupportedValue");
  EXPECT_THAT(conditions[2]["message"].get<std::string>(),
              HasSubstr("Fall Back: spec.rules[1].matches[0].method.method: "));
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, kMethods, 1), ", "), "ok v1, ok v2, fail UNIMPLEMENTED");
}

// The canary rule (Echo with env: canary to v3) exists only for clients
// with env=prod in their node metadata; an env=dev client's same call takes
// the Echo rule (v1). /status shows the policy Accepted on the Service.
TEST_P(GatewayServeTest, PolicyRuleOnlyForProd) {
  WritePolicy("{env: prod}");
  const std::string prod = BootstrapFor("prod");
  const std::string dev = BootstrapFor("dev");
  // Without the policy every client takes the canary rule.
  ASSERT_TRUE(WaitForCanaryAnsweredBy(dev, "v1"));
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, {kEchoMethod}, 3, {kCanary}), ", "),
            "ok v1, ok v1, ok v1")
      << "no node metadata: not prod";
  bootstrap_ = prod;
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, {kEchoMethod, "/facet.test.Echo/EchoTwo"}, 2,
                                   {kCanary, {}}),
                          ", "),
            "ok v3, ok v2, ok v1, ok v2, ok v3, ok v2, ok v1, ok v2");
  bootstrap_ = dev;
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, {kEchoMethod}, 3, {kCanary}), ", "),
            "ok v1, ok v1, ok v1");
  nlohmann::json status;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(10); absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(50))) {
    status = PolicyStatus();
    if (!status.is_null()) break;
  }
  ASSERT_FALSE(status.is_null());
  const nlohmann::json& ancestor = status["ancestors"][0];
  EXPECT_EQ(ancestor["controllerName"], "facet.dev/gateway-controller");
  EXPECT_EQ(ancestor["ancestorRef"]["name"], "echo");
  EXPECT_EQ(ancestor["conditions"][0]["type"], "Accepted");
  EXPECT_EQ(ancestor["conditions"][0]["status"], "True") << ancestor.dump();
}

// The policy's `when` edited from env=prod to env=dev while an env=prod
// client calls in a loop: it leaves the canary rule (v3) for the Echo rule
// (v1) once, without a failed call.
TEST_P(GatewayServeTest, LivePolicyEditNoFailedRpc) {
  WritePolicy("{env: prod}");
  const std::string prod = BootstrapFor("prod");
  ASSERT_TRUE(WaitForCanaryAnsweredBy(BootstrapFor("dev"), "v1"));
  absl::StatusOr<std::unique_ptr<Process>> client =
      harness_->StartClient({.kind = GetParam(),
                             .target = kEcho,
                             .bootstrap_path = prod,
                             .duration = absl::Seconds(8),
                             .interval = absl::Milliseconds(20),
                             .methods = {kEchoMethod},
                             .metadata = {kCanary}});
  ASSERT_THAT(client, IsOk());
  auto count = [](absl::string_view out, absl::string_view line) {
    int n = 0;
    for (absl::string_view l : absl::StrSplit(out, '\n')) n += l == line ? 1 : 0;
    return n;
  };
  // About a second of calls answered by v3.
  ASSERT_THAT((*client)->WaitForStdout(
                  [&](absl::string_view out) { return count(out, "ok v3") >= 50; },
                  absl::Seconds(20)),
              IsOk());
  WritePolicy("{env: dev}");
  EXPECT_THAT((*client)->WaitForStdout(
                  [&](absl::string_view out) { return count(out, "ok v1") > 0; },
                  absl::Seconds(5)),
              IsOk())
      << "the client did not switch to v1 within 5 s of the edit";
  ExpectSwitchedOnce(FinishContinuousRun(**client), "v3", "v1");
}

// MeshConsumerRoute: a GRPCRoute in namespace a on Service e2e/echo sends
// every call of a client in namespace a (node metadata) to v2; a client in
// namespace b keeps the producer route (Echo to v1, EchoTwo to v2,
// EchoThree UNIMPLEMENTED). /status shows the consumer route Accepted.
TEST_P(GatewayServeTest, ConsumerRouteOnlyForItsNamespace) {
  WriteConsumerRoute();
  const std::string in_a = BootstrapFor("a", "namespace");
  const std::string in_b = BootstrapFor("b", "namespace");
  ASSERT_TRUE(WaitForCanaryAnsweredBy(in_a, "v2"));
  bootstrap_ = in_a;
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, kMethods, 2), ", "),
            "ok v2, ok v2, ok v2, ok v2, ok v2, ok v2");
  bootstrap_ = in_b;
  EXPECT_EQ(absl::StrJoin(Outcomes(kEcho, kMethods, 2), ", "),
            "ok v1, ok v2, fail UNIMPLEMENTED, ok v1, ok v2, fail UNIMPLEMENTED");
  absl::StatusOr<std::string> text = harness_->AdminGet(E2eHarness::kFacet, "/status");
  ASSERT_THAT(text, IsOk());
  const nlohmann::json status = nlohmann::json::parse(*text);
  nlohmann::json consumer;
  for (const nlohmann::json& object : status["gateway_objects"]) {
    if (object["object"] == "a/echo-for-a") consumer = object;
  }
  ASSERT_TRUE(consumer.contains("status")) << *text;
  const nlohmann::json& parent = consumer["status"]["parents"][0];
  EXPECT_EQ(parent["parentRef"]["namespace"], "e2e");
  for (const nlohmann::json& condition : parent["conditions"]) {
    EXPECT_EQ(condition["status"], "True") << condition.dump();
  }
}

// MeshGRPCRouteWeight's shape: a route on Service split:7070 sends 70 % of
// calls to v1 and 30 % to v2, and names a missing Service with weight 0:
// that backend gets no traffic and no call fails, and the route is Accepted
// with ResolvedRefs False BackendNotFound.
TEST_P(GatewayServeTest, WeightedSplitWithAMissingWeightZeroBackend) {
  constexpr char kSplit[] = "xds:///split.e2e.svc.cluster.local:7070";
  WriteManifest("split.yaml",
                "apiVersion: v1\nkind: Service\n"
                "metadata: {name: split, namespace: e2e}\n"
                "spec: {ports: [{name: grpc, port: 7070}]}\n"
                "---\n"
                "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\n"
                "metadata: {name: split, namespace: e2e}\n"
                "spec:\n"
                "  parentRefs: [{group: '', kind: Service, name: split, port: 7070}]\n"
                "  rules:\n"
                "  - backendRefs:\n"
                "    - {name: echo-v1, port: 7070, weight: 70}\n"
                "    - {name: echo-v2, port: 7070, weight: 30}\n"
                "    - {name: echo-missing, port: 7070, weight: 0}\n");
  // Served once a call is answered (by either backend: a new gRPC C++
  // process makes the same first weighted pick every time).
  bool served = false;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(30);
       !served && absl::Now() < deadline;) {
    const std::vector<std::string> first = Outcomes(kSplit, {"/facet.test.Echo/Whoami"}, 1);
    served = !first.empty() && absl::StartsWith(first[0], "ok ");
  }
  ASSERT_TRUE(served) << "split.e2e.svc.cluster.local:7070 never answered";
  constexpr int kCalls = 400;
  std::map<std::string, int> counts;
  for (const std::string& outcome : Outcomes(kSplit, {"/facet.test.Echo/Whoami"}, kCalls)) {
    ++counts[outcome];
  }
  EXPECT_EQ(counts["ok v1"] + counts["ok v2"], kCalls) << ::testing::PrintToString(counts);
  // 70 % of 400 is 280; 240..320 is more than four standard deviations of a
  // weighted random pick either side.
  EXPECT_GE(counts["ok v1"], 240) << ::testing::PrintToString(counts);
  EXPECT_LE(counts["ok v1"], 320) << ::testing::PrintToString(counts);

  absl::StatusOr<std::string> text = harness_->AdminGet(E2eHarness::kFacet, "/status");
  ASSERT_THAT(text, IsOk());
  const nlohmann::json status = nlohmann::json::parse(*text);
  nlohmann::json split;
  for (const nlohmann::json& object : status["gateway_objects"]) {
    if (object["object"] == "e2e/split" && object["kind"] == "GRPCRoute") split = object;
  }
  ASSERT_TRUE(split.contains("status")) << *text;
  std::map<std::string, std::string> conditions;
  for (const nlohmann::json& condition : split["status"]["parents"][0]["conditions"]) {
    conditions[condition["type"].get<std::string>()] =
        absl::StrCat(condition["status"].get<std::string>(), " ",
                     condition["reason"].get<std::string>());
  }
  EXPECT_EQ(conditions["Accepted"], "True Accepted");
  EXPECT_EQ(conditions["ResolvedRefs"], "False BackendNotFound");
}

INSTANTIATE_TEST_SUITE_P(Clients, GatewayServeTest,
                         ::testing::Values(ClientKind::kCpp, ClientKind::kNode),
                         [](const auto& info) { return ClientKindName(info.param); });

}  // namespace
}  // namespace facet::e2e
