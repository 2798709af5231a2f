// A GRPCRoute's status from its translation, the generation that falls
// back in its place, and the builder's conflicts.
#include "controller/gateway/front_end/route_status.h"

#include <string>
#include <vector>

#include "controller/gateway/translate/translate_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::Parse;
using ::facet::controller::gateway::testing::Service;
using ::facet::controller::gateway::testing::World;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// GRPCRoute demo/greeter at `generation` with `rules` (flow YAML), on
// Service echo port 7070 and a Gateway (not Facet's).
GatewayObject Greeter(int generation, const std::string& rules) {
  return Parse(absl::StrCat(
      "apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: greeter, "
      "namespace: demo, generation: ",
      generation,
      "}\nspec: {parentRefs: [{group: '', kind: Service, name: echo, port: 7070}, {name: edge}], "
      "rules: ",
      rules, "}"));
}

constexpr char kGoodRules[] = "[{backendRefs: [{name: echo, port: 7070}]}]";
constexpr char kOneBadRule[] =
    "[{backendRefs: [{name: echo, port: 7070}]}, "
    "{matches: [{method: {type: RegularExpression, service: '('}}], "
    "backendRefs: [{name: echo, port: 7070}]}]";
constexpr char kEveryRuleBad[] =
    "[{filters: [{type: RequestMirror, requestMirror: {backendRef: {name: echo, port: 7070}}}], "
    "backendRefs: [{name: echo, port: 7070}]}]";

class RouteStatusTest : public ::testing::Test {
 protected:
  RouteStatusTest() { world_.Add(Service("echo", "{ports: [{name: grpc, port: 7070}]}")); }

  // The status of `route` with `fallback` (null: none) serving instead.
  GatewayStatus StatusOf(const GatewayObject& route, const GatewayObject* fallback) {
    const TranslatedRoute translated = TranslateRoute(route, nullptr, world_.Lookup(), {});
    std::optional<TranslatedRoute> served;
    if (fallback != nullptr) served = TranslateRoute(*fallback, nullptr, world_.Lookup(), {});
    std::vector<ParentResolution> resolutions;
    for (const ObjectReference& parent : std::get<GrpcRoute>(route.spec).parent_refs) {
      resolutions.push_back(ResolveParentRef("demo", parent, world_.Lookup()));
    }
    return RouteStatus(route, translated, served ? &*served : nullptr, resolutions);
  }

  static const Condition* Find(const ParentStatus& parent, const std::string& type) {
    for (const Condition& condition : parent.conditions) {
      if (condition.type == type) return &condition;
    }
    return nullptr;
  }

  World world_;
};

TEST_F(RouteStatusTest, AcceptedRouteHasOneEntryPerFacetParent) {
  const GatewayStatus status = StatusOf(Greeter(3, kGoodRules), nullptr);
  EXPECT_EQ(status.generation, 3);
  ASSERT_THAT(status.parents, SizeIs(1));  // The Gateway is another controller's.
  EXPECT_EQ(status.parents[0].parent_ref.field, "spec.parentRefs[0]");
  EXPECT_EQ(Find(status.parents[0], kConditionAccepted)->status, kStatusTrue);
  EXPECT_EQ(Find(status.parents[0], kConditionPartiallyInvalid), nullptr);
}

TEST_F(RouteStatusTest, InvalidWithoutFallBackIsNotAccepted) {
  const GatewayStatus status = StatusOf(Greeter(4, kOneBadRule), nullptr);
  ASSERT_THAT(status.parents, SizeIs(1));
  const Condition* accepted = Find(status.parents[0], kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_EQ(accepted->reason, kReasonUnsupportedValue);
  EXPECT_EQ(accepted->observed_generation, 4);
  EXPECT_EQ(Find(status.parents[0], kConditionPartiallyInvalid), nullptr);
}

TEST_F(RouteStatusTest, FallBackWithAValidRuleIsPartiallyInvalid) {
  const GatewayObject last_good = Greeter(3, kGoodRules);
  const GatewayStatus status = StatusOf(Greeter(4, kOneBadRule), &last_good);
  EXPECT_EQ(status.generation, 4);
  ASSERT_THAT(status.parents, SizeIs(1));
  const Condition* accepted = Find(status.parents[0], kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusTrue);
  EXPECT_EQ(accepted->observed_generation, 3);  // The generation served.
  const Condition* partially = Find(status.parents[0], kConditionPartiallyInvalid);
  ASSERT_NE(partially, nullptr);
  EXPECT_EQ(partially->status, kStatusTrue);
  EXPECT_EQ(partially->reason, kReasonUnsupportedValue);
  EXPECT_EQ(partially->observed_generation, 4);
  EXPECT_THAT(partially->message, ::testing::StartsWith("Fall Back: spec.rules[1].matches[0]"));
  EXPECT_EQ(Find(status.parents[0], kConditionResolvedRefs)->observed_generation, 3);
}

TEST_F(RouteStatusTest, FallBackWithEveryRuleInvalidIsNotAcceptedAndSaysWhatServes) {
  const GatewayObject last_good = Greeter(3, kGoodRules);
  const GatewayStatus status = StatusOf(Greeter(4, kEveryRuleBad), &last_good);
  ASSERT_THAT(status.parents, SizeIs(1));
  const Condition* accepted = Find(status.parents[0], kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_EQ(accepted->reason, kReasonIncompatibleFilters);
  EXPECT_EQ(accepted->observed_generation, 4);
  EXPECT_THAT(accepted->message, HasSubstr("generation 3, the last accepted, keeps serving"));
  EXPECT_EQ(Find(status.parents[0], kConditionPartiallyInvalid), nullptr);
}

TEST_F(RouteStatusTest, ConflictsMakeAcceptedAndResolvedRefsFalse) {
  GatewayStatus status = StatusOf(Greeter(3, kGoodRules), nullptr);
  BuilderConflicts conflicts;
  EXPECT_TRUE(conflicts.empty());
  conflicts.parents = {{{"spec.parentRefs[0]", "duplicate: listener \"l\" ..."}}};
  conflicts.backends = {{"spec.rules[0].backendRefs[0]", "duplicate: cluster \"c\" ..."}};
  EXPECT_FALSE(conflicts.empty());
  AddConflicts(conflicts, &status);
  const Condition* accepted = Find(status.parents[0], kConditionAccepted);
  EXPECT_EQ(accepted->status, kStatusFalse);
  EXPECT_EQ(accepted->reason, kReasonConflicted);
  EXPECT_EQ(accepted->message, "spec.parentRefs[0]: duplicate: listener \"l\" ...");
  const Condition* resolved = Find(status.parents[0], kConditionResolvedRefs);
  EXPECT_EQ(resolved->reason, kReasonConflicted);
  EXPECT_THAT(resolved->causes, SizeIs(1));
}

TEST_F(RouteStatusTest, FalseConditionKeepsItsReasonAndGainsTheConflict) {
  GatewayStatus status = StatusOf(Greeter(4, kOneBadRule), nullptr);
  BuilderConflicts conflicts;
  conflicts.parents = {{{"spec.parentRefs[0]", "duplicate"}}};
  AddConflicts(conflicts, &status);
  const Condition* accepted = Find(status.parents[0], kConditionAccepted);
  EXPECT_EQ(accepted->reason, kReasonUnsupportedValue);
  EXPECT_THAT(accepted->causes, SizeIs(2));
  EXPECT_THAT(accepted->message, HasSubstr("spec.parentRefs[0]: duplicate"));
  EXPECT_EQ(Find(status.parents[0], kConditionResolvedRefs)->status, kStatusTrue);
}

}  // namespace
}  // namespace facet::controller::gateway
