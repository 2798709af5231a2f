#include "test/kube_api_server/strategic_merge.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::testing {
namespace {

const std::vector<std::pair<std::string, std::string>> kServiceKeys = {{"spec.ports", "port"}};

Json J(const std::string& text) {
  auto json = ParseJson(text);
  EXPECT_THAT(json, IsOk()) << text;
  return json.ok() ? *json : Json();
}

std::string Patched(const std::string& original, const std::string& patch) {
  auto result = ApplyStrategicMergePatch(J(original), J(patch), kServiceKeys);
  EXPECT_THAT(result, IsOk()) << patch;
  return result.ok() ? Dump(*result) : "";
}

TEST(StrategicMergeTest, MapsMergeAndNullRemovesAKey) {
  EXPECT_EQ(Patched(R"({"spec":{"type":"ClusterIP","selector":{"app":"a"}}})",
                    R"({"spec":{"selector":null,"sessionAffinity":"None"}})"),
            R"({"spec":{"sessionAffinity":"None","type":"ClusterIP"}})");
}

// What kubectl apply sends after a targetPort edit of one port.
TEST(StrategicMergeTest, KeyedListMergesTheElementWithTheSameKey) {
  EXPECT_EQ(Patched(R"({"spec":{"ports":[{"name":"a","port":80,"protocol":"TCP","targetPort":80},)"
                    R"({"name":"b","port":81,"protocol":"TCP","targetPort":81}]}})",
                    R"({"spec":{"$setElementOrder/ports":[{"port":80},{"port":81}],)"
                    R"("ports":[{"port":81,"targetPort":9090}]}})"),
            R"({"spec":{"ports":[{"name":"a","port":80,"protocol":"TCP","targetPort":80},)"
            R"({"name":"b","port":81,"protocol":"TCP","targetPort":9090}]}})");
}

TEST(StrategicMergeTest, KeyedListAppendsNewKeysDeletesMarkedOnesAndFollowsTheOrder) {
  EXPECT_EQ(Patched(R"({"spec":{"ports":[{"port":80,"name":"a"},{"port":81,"name":"b"}]}})",
                    R"({"spec":{"$setElementOrder/ports":[{"port":82},{"port":80}],)"
                    R"("ports":[{"port":82,"name":"c"},{"$patch":"delete","port":81}]}})"),
            R"({"spec":{"ports":[{"name":"c","port":82},{"name":"a","port":80}]}})");
}

TEST(StrategicMergeTest, UnkeyedListsAreReplaced) {
  EXPECT_EQ(Patched(R"({"spec":{"externalIPs":["1.1.1.1","2.2.2.2"]}})",
                    R"({"spec":{"externalIPs":["3.3.3.3"]}})"),
            R"({"spec":{"externalIPs":["3.3.3.3"]}})");
}

TEST(StrategicMergeTest, ReplaceDirectivesReplaceAMapOrAList) {
  EXPECT_EQ(Patched(R"({"spec":{"selector":{"a":"1","b":"2"}}})",
                    R"({"spec":{"selector":{"$patch":"replace","c":"3"}}})"),
            R"({"spec":{"selector":{"c":"3"}}})");
  EXPECT_EQ(Patched(R"({"spec":{"ports":[{"port":80},{"port":81}]}})",
                    R"({"spec":{"ports":[{"$patch":"replace"},{"port":82}]}})"),
            R"({"spec":{"ports":[{"port":82}]}})");
}

TEST(StrategicMergeTest, RetainKeysAndDeleteFromPrimitiveList) {
  EXPECT_EQ(
      Patched(R"({"spec":{"a":1,"b":2,"c":3}})", R"({"spec":{"$retainKeys":["a","d"],"d":4}})"),
      R"({"spec":{"a":1,"d":4}})");
  EXPECT_EQ(Patched(R"({"metadata":{"finalizers":["x","y"]}})",
                    R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}})"),
            R"({"metadata":{"finalizers":["y"]}})");
}

TEST(StrategicMergeTest, FinalizersMergeAsASetAndOwnerReferencesByUid) {
  EXPECT_EQ(
      Patched(R"({"metadata":{"finalizers":["x"]}})", R"({"metadata":{"finalizers":["y","x"]}})"),
      R"({"metadata":{"finalizers":["x","y"]}})");
  EXPECT_EQ(Patched(R"({"metadata":{"ownerReferences":[{"uid":"1","name":"a"}]}})",
                    R"({"metadata":{"ownerReferences":[{"uid":"1","name":"b"},{"uid":"2"}]}})"),
            R"({"metadata":{"ownerReferences":[{"name":"b","uid":"1"},{"uid":"2"}]}})");
}

TEST(StrategicMergeTest, MalformedPatchesAreInvalidArgument) {
  EXPECT_THAT(ApplyStrategicMergePatch(J(R"({"spec":{"ports":[]}})"),
                                       J(R"({"spec":{"ports":[{"name":"x"}]}})"), kServiceKeys),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      ApplyStrategicMergePatch(J("{}"), J(R"({"spec":{"$patch":"sideways"}})"), kServiceKeys),
      StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ApplyStrategicMergePatch(J("{}"), J("[]"), kServiceKeys),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace facet::testing
