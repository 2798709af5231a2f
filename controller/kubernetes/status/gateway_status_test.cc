#include "controller/kubernetes/status/gateway_status.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/kubernetes/status/status_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/fakes/fake_clock.h"
#include "test/fakes/fake_kube_client.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::FakeClock;
using ::facet::testing::FakeKubeClient;
using ::facet::testing::IsOkAndHolds;
using kube::FieldAt;
using kube::StringAt;
using ::testing::ElementsAre;

constexpr char kRoutes[] = "/apis/gateway.networking.k8s.io/v1/grpcroutes";
constexpr char kPolicies[] = "/apis/facet.dev/v1alpha1/xdsvariantpolicies";
constexpr char kIstio[] = "istio.io/gateway-controller";

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
const absl::Time kT1 = kT0 + absl::Hours(1);

// A parentRef to Service `name` port `port` in the route's namespace.
gateway::ObjectReference ServiceRef(const std::string& name, int port = 50051) {
  gateway::ObjectReference ref;
  ref.group = "";
  ref.kind = "Service";
  ref.name = name;
  ref.port = port;
  return ref;
}

gateway::Condition Condition(const std::string& type, const std::string& status,
                             const std::string& reason, const std::string& message,
                             int64_t generation) {
  gateway::Condition condition;
  condition.type = type;
  condition.status = status;
  condition.reason = reason;
  condition.message = message;
  condition.observed_generation = generation;
  return condition;
}

gateway::ParentStatus Parent(const std::string& service, const std::string& accepted = "True",
                             int64_t generation = 2) {
  gateway::ParentStatus parent;
  parent.parent_ref = ServiceRef(service);
  parent.conditions.push_back(Condition("Accepted", accepted,
                                        accepted == "True" ? "Accepted" : "NoMatchingParent",
                                        "message", generation));
  parent.conditions.push_back(Condition("ResolvedRefs", "True", "ResolvedRefs", "", generation));
  return parent;
}

gateway::GatewayStatus Route(std::vector<gateway::ParentStatus> parents, int64_t generation = 2) {
  gateway::GatewayStatus route;
  route.object = {"GRPCRoute", "demo", "greeter"};
  route.generation = generation;
  route.parents = std::move(parents);
  return route;
}

YAML::Node Status(const std::string& yaml) { return YAML::Load(yaml); }

// The entries of `status` as "controllerName parentRef.name".
std::vector<std::string> Entries(const YAML::Node& status, const std::string& list = "parents",
                                 const std::string& ref = "parentRef") {
  std::vector<std::string> out;
  for (const YAML::Node& entry : FieldAt(status, {list})) {
    out.push_back(
        absl::StrCat(StringAt(entry, {"controllerName"}), " ", StringAt(entry, {ref, "name"})));
  }
  return out;
}

// The condition of `type` of the entry for parentRef.name `name` of our controller.
YAML::Node OurCondition(const YAML::Node& status, const std::string& name, const std::string& type,
                        const std::string& list = "parents", const std::string& ref = "parentRef") {
  for (const YAML::Node& entry : FieldAt(status, {list})) {
    if (StringAt(entry, {"controllerName"}) != gateway::kControllerName ||
        StringAt(entry, {ref, "name"}) != name) {
      continue;
    }
    for (const YAML::Node& condition : FieldAt(entry, {"conditions"})) {
      if (StringAt(condition, {"type"}) == type) return condition;
    }
  }
  return YAML::Node();
}

TEST(GatewayStatusTest, WritesOneEntryPerParentWithItsConditions) {
  const YAML::Node status =
      DesiredRouteStatus(YAML::Node(), Route({Parent("greeter")}), gateway::kControllerName, kT0);
  ASSERT_EQ(FieldAt(status, {"parents"}).size(), 1u);
  const YAML::Node entry = FieldAt(status, {"parents"})[0];
  EXPECT_EQ(StringAt(entry, {"controllerName"}), "facet.dev/gateway-controller");
  EXPECT_TRUE(FieldAt(entry, {"parentRef", "group"}).IsDefined());
  EXPECT_EQ(StringAt(entry, {"parentRef", "group"}), "");
  EXPECT_EQ(StringAt(entry, {"parentRef", "kind"}), "Service");
  EXPECT_EQ(StringAt(entry, {"parentRef", "name"}), "greeter");
  EXPECT_EQ(StringAt(entry, {"parentRef", "port"}), "50051");
  EXPECT_FALSE(FieldAt(entry, {"parentRef", "namespace"}).IsDefined());
  EXPECT_FALSE(FieldAt(entry, {"parentRef", "sectionName"}).IsDefined());
  const YAML::Node accepted = OurCondition(status, "greeter", "Accepted");
  EXPECT_EQ(StringAt(accepted, {"status"}), "True");
  EXPECT_EQ(StringAt(accepted, {"reason"}), "Accepted");
  EXPECT_EQ(StringAt(accepted, {"observedGeneration"}), "2");
  EXPECT_EQ(StringAt(accepted, {"lastTransitionTime"}), "2023-11-14T22:13:20Z");
  EXPECT_EQ(StringAt(OurCondition(status, "greeter", "ResolvedRefs"), {"status"}), "True");
}

TEST(GatewayStatusTest, KeepsForeignParents) {
  // Istio on the same Service, and a Gateway of another controller.
  const YAML::Node current = Status(R"(
    parents:
    - parentRef: {group: "", kind: Service, name: greeter, port: 50051}
      controllerName: istio.io/gateway-controller
      conditions: [{type: Accepted, status: "False", reason: Other, message: m,
                    observedGeneration: 1, lastTransitionTime: "2020-01-01T00:00:00Z"},
                   {type: example.com/Custom, status: "True", reason: Custom}]
    - parentRef: {name: edge}
      controllerName: example.com/gateway
      conditions: [{type: Accepted, status: "True", reason: Accepted}]
  )");
  const YAML::Node status =
      DesiredRouteStatus(current, Route({Parent("greeter")}), gateway::kControllerName, kT0);
  EXPECT_THAT(Entries(status),
              ElementsAre(absl::StrCat(kIstio, " greeter"), "example.com/gateway edge",
                          "facet.dev/gateway-controller greeter"));
  EXPECT_TRUE(SameStatus(FieldAt(status, {"parents"})[0], FieldAt(current, {"parents"})[0]));
  EXPECT_TRUE(SameStatus(FieldAt(status, {"parents"})[1], FieldAt(current, {"parents"})[1]));
  // Without parents of ours, theirs stay all the same.
  const YAML::Node none = DesiredRouteStatus(current, Route({}), gateway::kControllerName, kT0);
  EXPECT_TRUE(SameStatus(none, current));
}

TEST(GatewayStatusTest, DropsOwnStaleParent) {
  const YAML::Node first = DesiredRouteStatus(
      YAML::Node(), Route({Parent("greeter"), Parent("old")}), gateway::kControllerName, kT0);
  ASSERT_EQ(FieldAt(first, {"parents"}).size(), 2u);
  // Generation 3 no longer names "old".
  gateway::GatewayStatus route = Route({Parent("greeter", "True", 3)}, /*generation=*/3);
  const YAML::Node second = DesiredRouteStatus(first, route, gateway::kControllerName, kT1);
  EXPECT_THAT(Entries(second), ElementsAre("facet.dev/gateway-controller greeter"));
  // None left: an empty list (the field is required).
  const YAML::Node third = DesiredRouteStatus(second, Route({}, 4), gateway::kControllerName, kT1);
  ASSERT_TRUE(FieldAt(third, {"parents"}).IsSequence());
  EXPECT_EQ(FieldAt(third, {"parents"}).size(), 0u);
}

TEST(GatewayStatusTest, KeepsOwnParentWrittenFromANewerGeneration) {
  // A replica that saw generation 3 wrote "new"; we still evaluate 2.
  const YAML::Node current = DesiredRouteStatus(
      YAML::Node(), Route({Parent("greeter", "True", 3), Parent("new", "True", 3)}, 3),
      gateway::kControllerName, kT0);
  const YAML::Node status =
      DesiredRouteStatus(current, Route({Parent("greeter")}, 2), gateway::kControllerName, kT1);
  EXPECT_THAT(Entries(status), ElementsAre("facet.dev/gateway-controller greeter",
                                           "facet.dev/gateway-controller new"));
}

TEST(GatewayStatusTest, MatchesParentRefsAfterDefaulting) {
  // Written with the namespace and without group and kind (their defaults:
  // the Gateway API group, Gateway).
  const YAML::Node current = Status(R"(
    parents:
    - parentRef: {namespace: demo, name: edge}
      controllerName: facet.dev/gateway-controller
      conditions: [{type: Accepted, status: "True", reason: Accepted, message: m,
                    observedGeneration: 1, lastTransitionTime: "2020-01-01T00:00:00Z"}]
    - parentRef: {group: gateway.networking.k8s.io, kind: Service, name: greeter, port: 50051}
      controllerName: facet.dev/gateway-controller
      conditions: [{type: Accepted, status: "True", reason: Accepted, message: m,
                    observedGeneration: 1, lastTransitionTime: "2020-01-01T00:00:00Z"}]
  )");
  gateway::ParentStatus gateway_parent;
  gateway_parent.parent_ref.group = "gateway.networking.k8s.io";
  gateway_parent.parent_ref.kind = "Gateway";
  gateway_parent.parent_ref.name = "edge";
  gateway_parent.conditions.push_back(Condition("Accepted", "True", "Accepted", "m", 2));
  // A core Service (group ""): not the entry of the Gateway API group's "Service".
  const YAML::Node status = DesiredRouteStatus(current, Route({gateway_parent, Parent("greeter")}),
                                               gateway::kControllerName, kT1);
  EXPECT_THAT(Entries(status), ElementsAre("facet.dev/gateway-controller edge",
                                           "facet.dev/gateway-controller greeter"));
  EXPECT_EQ(StringAt(OurCondition(status, "edge", "Accepted"), {"lastTransitionTime"}),
            "2020-01-01T00:00:00Z");
  EXPECT_EQ(StringAt(OurCondition(status, "edge", "Accepted"), {"observedGeneration"}), "2");
  EXPECT_EQ(StringAt(OurCondition(status, "greeter", "Accepted"), {"lastTransitionTime"}),
            "2023-11-14T23:13:20Z");
  EXPECT_EQ(StringAt(FieldAt(status, {"parents"})[1], {"parentRef", "group"}), "");
}

TEST(GatewayStatusTest, KeepsTransitionTimeWhenUnchanged) {
  const YAML::Node first =
      DesiredRouteStatus(YAML::Node(), Route({Parent("greeter")}), gateway::kControllerName, kT0);
  const std::string since =
      StringAt(OurCondition(first, "greeter", "Accepted"), {"lastTransitionTime"});
  // Another generation, another message, the same status: the time stays.
  gateway::ParentStatus same = Parent("greeter", "True", 3);
  same.conditions[0].message = "other words";
  const YAML::Node second =
      DesiredRouteStatus(first, Route({same}, 3), gateway::kControllerName, kT1);
  const YAML::Node accepted = OurCondition(second, "greeter", "Accepted");
  EXPECT_EQ(StringAt(accepted, {"lastTransitionTime"}), since);
  EXPECT_EQ(StringAt(accepted, {"message"}), "other words");
  EXPECT_EQ(StringAt(accepted, {"observedGeneration"}), "3");
  // The status flips: a new time.
  const YAML::Node third = DesiredRouteStatus(second, Route({Parent("greeter", "False", 4)}, 4),
                                              gateway::kControllerName, kT1);
  EXPECT_EQ(StringAt(OurCondition(third, "greeter", "Accepted"), {"lastTransitionTime"}),
            "2023-11-14T23:13:20Z");
  EXPECT_EQ(StringAt(OurCondition(third, "greeter", "ResolvedRefs"), {"lastTransitionTime"}),
            since);
}

TEST(GatewayStatusTest, NeverLowersObservedGeneration) {
  const YAML::Node current = DesiredRouteStatus(
      YAML::Node(), Route({Parent("greeter", "False", 5)}, 5), gateway::kControllerName, kT0);
  // A stale cache: we evaluated generation 4, which was fine.
  gateway::ParentStatus stale = Parent("greeter", "True", 4);
  stale.conditions[1].observed_generation = 5;  // The same generation: replaced.
  stale.conditions[1].status = "False";
  stale.conditions[1].reason = "BackendNotFound";
  const YAML::Node status =
      DesiredRouteStatus(current, Route({stale}, 4), gateway::kControllerName, kT1);
  const YAML::Node accepted = OurCondition(status, "greeter", "Accepted");
  EXPECT_EQ(StringAt(accepted, {"status"}), "False");
  EXPECT_EQ(StringAt(accepted, {"observedGeneration"}), "5");
  EXPECT_EQ(StringAt(OurCondition(status, "greeter", "ResolvedRefs"), {"reason"}),
            "BackendNotFound");
}

TEST(GatewayStatusTest, RemovesOwnConditionTypesNoLongerReportedAndKeepsOthers) {
  const YAML::Node current = Status(R"(
    parents:
    - parentRef: {group: "", kind: Service, name: greeter, port: 50051}
      controllerName: facet.dev/gateway-controller
      conditions:
      - {type: Accepted, status: "True", reason: Accepted, message: m, observedGeneration: 2,
         lastTransitionTime: "2020-01-01T00:00:00Z"}
      - {type: PartiallyInvalid, status: "True", reason: UnsupportedValue, message: "Fall Back: x",
         observedGeneration: 2, lastTransitionTime: "2020-01-01T00:00:00Z"}
      - {type: example.com/Audited, status: "True", reason: Audited, message: m,
         observedGeneration: 9, lastTransitionTime: "2020-01-01T00:00:00Z"}
  )");
  const YAML::Node status = DesiredRouteStatus(current, Route({Parent("greeter", "True", 3)}, 3),
                                               gateway::kControllerName, kT1);
  std::vector<std::string> types;
  for (const YAML::Node& c : FieldAt(status, {"parents"})[0]["conditions"]) {
    types.push_back(StringAt(c, {"type"}));
  }
  EXPECT_THAT(types, ElementsAre("Accepted", "example.com/Audited", "ResolvedRefs"));
  // Reported by a newer generation than ours: it stays.
  const YAML::Node older = DesiredRouteStatus(current, Route({Parent("greeter", "True", 1)}, 1),
                                              gateway::kControllerName, kT1);
  EXPECT_TRUE(OurCondition(older, "greeter", "PartiallyInvalid").IsDefined());
}

TEST(GatewayStatusTest, CapsParentsAt32KeepingOthersEntries) {
  YAML::Node current;
  for (int i = 0; i < 30; ++i) {
    YAML::Node entry = Status(R"({parentRef: {group: "", kind: Service, port: 50051},
                                  controllerName: istio.io/gateway-controller,
                                  conditions: [{type: Accepted, status: "True", reason: Accepted}]})");
    entry["parentRef"]["name"] = absl::StrCat("s", i);
    current["parents"].push_back(entry);
  }
  std::vector<gateway::ParentStatus> ours;
  for (int i = 0; i < 5; ++i) ours.push_back(Parent(absl::StrCat("s", i)));
  const YAML::Node status = DesiredRouteStatus(current, Route(ours), gateway::kControllerName, kT0);
  std::vector<std::string> entries = Entries(status);
  ASSERT_EQ(entries.size(), kMaxStatusParents);
  EXPECT_EQ(entries[29], "istio.io/gateway-controller s29");
  EXPECT_EQ(entries[30], "facet.dev/gateway-controller s0");
  EXPECT_EQ(entries[31], "facet.dev/gateway-controller s1");
}

gateway::GatewayStatus Policy(int ancestors) {
  gateway::GatewayStatus policy;
  policy.object = {"XdsVariantPolicy", "demo", "canary"};
  policy.generation = 1;
  for (int i = 0; i < ancestors; ++i) {
    gateway::AncestorStatus ancestor;
    ancestor.ancestor_ref = ServiceRef(absl::StrCat("s", i));
    ancestor.conditions.push_back(
        Condition("Accepted", "False", "Invalid", "too many ancestors", 1));
    policy.ancestors.push_back(ancestor);
  }
  return policy;
}

TEST(GatewayStatusTest, CapsAncestorsAt16) {
  const YAML::Node status =
      DesiredPolicyStatus(YAML::Node(), Policy(20), gateway::kControllerName, kT0);
  std::vector<std::string> entries = Entries(status, "ancestors", "ancestorRef");
  ASSERT_EQ(entries.size(), kMaxStatusAncestors);
  EXPECT_EQ(entries.front(), "facet.dev/gateway-controller s0");
  EXPECT_EQ(entries.back(), "facet.dev/gateway-controller s15");
  EXPECT_FALSE(FieldAt(status, {"parents"}).IsDefined());
  // When the list is full of others' entries, ours are left out; theirs stay.
  YAML::Node full;
  for (int i = 0; i < 16; ++i) {
    YAML::Node entry = Status(R"({ancestorRef: {group: "", kind: Service},
                                  controllerName: example.com/policy,
                                  conditions: [{type: Accepted, status: "True", reason: Accepted}]})");
    entry["ancestorRef"]["name"] = absl::StrCat("x", i);
    full["ancestors"].push_back(entry);
  }
  const YAML::Node none = DesiredPolicyStatus(full, Policy(2), gateway::kControllerName, kT0);
  EXPECT_TRUE(SameStatus(none, full));
}

TEST(GatewayStatusTest, PolicyAncestorsMergeAsRouteParentsDo) {
  const YAML::Node first =
      DesiredPolicyStatus(YAML::Node(), Policy(2), gateway::kControllerName, kT0);
  gateway::GatewayStatus policy = Policy(1);
  policy.generation = 2;
  policy.ancestors[0].conditions[0] = Condition("Accepted", "False", "Invalid", "still", 2);
  const YAML::Node second = DesiredPolicyStatus(first, policy, gateway::kControllerName, kT1);
  EXPECT_THAT(Entries(second, "ancestors", "ancestorRef"),
              ElementsAre("facet.dev/gateway-controller s0"));
  const YAML::Node accepted = OurCondition(second, "s0", "Accepted", "ancestors", "ancestorRef");
  EXPECT_EQ(StringAt(accepted, {"lastTransitionTime"}), "2023-11-14T22:13:20Z");
  EXPECT_EQ(StringAt(accepted, {"observedGeneration"}), "2");
}

TEST(GatewayStatusTest, CapsConditionsAt8OursFirst) {
  YAML::Node current = Status(R"(
    parents:
    - parentRef: {group: "", kind: Service, name: greeter, port: 50051}
      controllerName: facet.dev/gateway-controller
      conditions: []
  )");
  for (int i = 0; i < 8; ++i) {
    YAML::Node condition = Status("{status: 'True', reason: Other}");
    condition["type"] = absl::StrCat("example.com/T", i);
    current["parents"][0]["conditions"].push_back(condition);
  }
  const YAML::Node status =
      DesiredRouteStatus(current, Route({Parent("greeter")}), gateway::kControllerName, kT0);
  const YAML::Node conditions = FieldAt(status, {"parents"})[0]["conditions"];
  ASSERT_EQ(conditions.size(), kMaxEntryConditions);
  EXPECT_EQ(StringAt(conditions[5], {"type"}), "example.com/T5");
  EXPECT_EQ(StringAt(conditions[6], {"type"}), "Accepted");
  EXPECT_EQ(StringAt(conditions[7], {"type"}), "ResolvedRefs");
}

TEST(GatewayStatusTest, CutsLongMessagesAtACharacterBoundary) {
  gateway::ParentStatus parent = Parent("greeter");
  parent.conditions[0].message.clear();
  for (int i = 0; i < 20000; ++i) parent.conditions[0].message += "\xc3\xa9";  // é
  const YAML::Node status =
      DesiredRouteStatus(YAML::Node(), Route({parent}), gateway::kControllerName, kT0);
  const std::string message = StringAt(OurCondition(status, "greeter", "Accepted"), {"message"});
  // 32765 bytes would end inside a character: 32764 of them are kept.
  EXPECT_EQ(message.size(), 32767u);
  EXPECT_EQ(message.substr(message.size() - 3), "...");
  EXPECT_EQ(message.substr(message.size() - 5, 2), "\xc3\xa9");
}

TEST(GatewayStatusTest, KeepsOtherStatusFields) {
  const YAML::Node current = Status("{parents: [], example: {kept: true}}");
  const YAML::Node status =
      DesiredRouteStatus(current, Route({Parent("greeter")}), gateway::kControllerName, kT0);
  EXPECT_EQ(StringAt(status, {"example", "kept"}), "true");
  EXPECT_EQ(FieldAt(status, {"parents"}).size(), 1u);
}

class GatewayStatusWriterTest : public ::testing::Test {
 protected:
  GatewayStatusWriterTest() : writer_(client_, [this] { return clock_.Now(); }) {
    client_.Put(kRoutes, Status(R"({apiVersion: gateway.networking.k8s.io/v1, kind: GRPCRoute,
        metadata: {name: greeter, namespace: demo, generation: 2},
        spec: {parentRefs: [{group: "", kind: Service, name: greeter, port: 50051}]}})"));
  }
  YAML::Node Stored() { return client_.Objects(kRoutes)["demo/greeter"]; }

  FakeKubeClient client_;
  FakeClock clock_;
  StatusWriter writer_;
};

TEST_F(GatewayStatusWriterTest, WritesARoutesParentsOnceThroughItsPath) {
  EXPECT_THAT(writer_.SyncRouteStatus(Route({Parent("greeter")})), IsOkAndHolds(true));
  EXPECT_THAT(Entries(kube::Field(Stored(), "status")),
              ElementsAre("facet.dev/gateway-controller greeter"));
  EXPECT_EQ(StringAt(Stored(), {"metadata", "generation"}), "2");
  const std::string version = client_.resource_version();
  clock_.Advance(absl::Minutes(5));
  YAML::Node cached = Stored();
  EXPECT_THAT(writer_.SyncRouteStatus(Route({Parent("greeter")}), &cached), IsOkAndHolds(false));
  EXPECT_EQ(client_.resource_version(), version);
  // Gone: nothing to write.
  ASSERT_TRUE(client_.Delete(kRoutes, "demo", "greeter"));
  EXPECT_THAT(writer_.SyncRouteStatus(Route({Parent("greeter")})), IsOkAndHolds(false));
}

TEST_F(GatewayStatusWriterTest, AConflictRereadsAndKeepsAnEntryAnotherControllerJustWrote) {
  YAML::Node cached = YAML::Clone(Stored());
  // Istio writes its entry after our cache saw the route.
  YAML::Node theirs = YAML::Clone(Stored());
  theirs["status"] = Status(R"({parents: [{parentRef: {group: "", kind: Service, name: greeter},
      controllerName: istio.io/gateway-controller,
      conditions: [{type: Accepted, status: "True", reason: Accepted}]}]})");
  client_.Put(kRoutes, theirs);
  EXPECT_THAT(writer_.SyncRouteStatus(Route({Parent("greeter")}), &cached), IsOkAndHolds(true));
  EXPECT_THAT(
      Entries(kube::Field(Stored(), "status")),
      ElementsAre("istio.io/gateway-controller greeter", "facet.dev/gateway-controller greeter"));
}

TEST_F(GatewayStatusWriterTest, ARouteOfAnotherControllerIsNeverWritten) {
  const std::string version = client_.resource_version();
  EXPECT_THAT(writer_.SyncRouteStatus(Route({})), IsOkAndHolds(false));
  EXPECT_EQ(client_.resource_version(), version);
  EXPECT_FALSE(kube::Field(Stored(), "status").IsDefined());
  // Once ours, an entry that leaves the spec is dropped.
  EXPECT_THAT(writer_.SyncRouteStatus(Route({Parent("greeter")})), IsOkAndHolds(true));
  EXPECT_THAT(writer_.SyncRouteStatus(Route({})), IsOkAndHolds(true));
  EXPECT_THAT(Entries(kube::Field(Stored(), "status")), ElementsAre());
}

TEST_F(GatewayStatusWriterTest, WritesAPolicysAncestorsThroughItsPath) {
  client_.Put(kPolicies, Status(R"({apiVersion: facet.dev/v1alpha1, kind: XdsVariantPolicy,
      metadata: {name: canary, namespace: demo},
      spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: GRPCRoute, name: greeter}],
             when: {env: prod}}})"));
  EXPECT_THAT(writer_.SyncPolicyStatus(Policy(1)), IsOkAndHolds(true));
  EXPECT_THAT(Entries(kube::Field(client_.Objects(kPolicies)["demo/canary"], "status"), "ancestors",
                      "ancestorRef"),
              ElementsAre("facet.dev/gateway-controller s0"));
}

}  // namespace
}  // namespace facet::controller
