#include "xds_server/constraints/match_syntax.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"
#include "xds_server/constraints/constraints.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kPath[] = "spec.variants[2].match";

absl::StatusOr<DynamicParameterConstraints> CompileYaml(const std::string& yaml,
                                                        const ConstraintLimits& limits = {}) {
  return CompileMatch(YAML::Load(yaml), kPath, limits);
}

DynamicParameterConstraints Proto(const std::string& text) {
  DynamicParameterConstraints proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  return proto;
}

MATCHER_P(EqualsProto, text, "equals " + std::string(text)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  const DynamicParameterConstraints expected = Proto(text);
  if (google::protobuf::util::MessageDifferencer::Equals(*arg, expected)) return true;
  *result_listener << "is " << arg->ShortDebugString();
  return false;
}

void ExpectError(const std::string& yaml, const std::string& message) {
  EXPECT_THAT(CompileYaml(yaml), StatusIs(absl::StatusCode::kInvalidArgument, message)) << yaml;
}

TEST(CompileMatchTest, StringIsExactValue) {
  EXPECT_THAT(CompileYaml("{env: prod}"),
              EqualsProto(R"pb(constraint { key: "env" value: "prod" })pb"));
}

TEST(CompileMatchTest, ScalarsAreTakenAsTheirText) {
  EXPECT_THAT(CompileYaml("{replicas: 1, canary: true, ratio: 0.50, quoted: 'x y'}"),
              EqualsProto(R"pb(and_constraints {
                                 constraints { constraint { key: "canary" value: "true" } }
                                 constraints { constraint { key: "quoted" value: "x y" } }
                                 constraints { constraint { key: "ratio" value: "0.50" } }
                                 constraints { constraint { key: "replicas" value: "1" } }
                               })pb"));
}

TEST(CompileMatchTest, QuotedEmptyStringIsAValue) {
  EXPECT_THAT(CompileYaml("{env: ''}"), EqualsProto(R"pb(constraint { key: "env" value: "" })pb"));
}

TEST(CompileMatchTest, SeveralKeysAreAndedInSortedOrder) {
  EXPECT_THAT(CompileYaml("{version: v1, env: prod}"),
              EqualsProto(R"pb(and_constraints {
                                 constraints { constraint { key: "env" value: "prod" } }
                                 constraints { constraint { key: "version" value: "v1" } }
                               })pb"));
}

TEST(CompileMatchTest, OutputDoesNotDependOnWrittenOrder) {
  absl::StatusOr<DynamicParameterConstraints> a = CompileYaml("{b: [y, x], a: '1'}");
  absl::StatusOr<DynamicParameterConstraints> b = CompileYaml("{a: '1', b: [x, y, x]}");
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
}

TEST(CompileMatchTest, ListOfStringsIsSortedOrOfValues) {
  EXPECT_THAT(CompileYaml("{env: [test, prod, test]}"),
              EqualsProto(R"pb(or_constraints {
                                 constraints { constraint { key: "env" value: "prod" } }
                                 constraints { constraint { key: "env" value: "test" } }
                               })pb"));
}

TEST(CompileMatchTest, OneElementListIsJustTheConstraint) {
  EXPECT_THAT(CompileYaml("{env: [prod]}"),
              EqualsProto(R"pb(constraint { key: "env" value: "prod" })pb"));
}

TEST(CompileMatchTest, ExistsTrueIsPresence) {
  EXPECT_THAT(CompileYaml("{version: {exists: true}}"), EqualsProto(R"pb(constraint {
                                                                           key: "version"
                                                                           exists {}
                                                                         })pb"));
}

TEST(CompileMatchTest, ExistsFalseIsNegatedPresence) {
  EXPECT_THAT(CompileYaml("{version: {exists: false}}"), EqualsProto(R"pb(not_constraints {
                                                                            constraint {
                                                                              key: "version"
                                                                              exists {}
                                                                            }
                                                                          })pb"));
}

TEST(CompileMatchTest, NotNegatesAValueSpec) {
  EXPECT_THAT(CompileYaml("{env: {not: [prod, test]}}"),
              EqualsProto(R"pb(not_constraints {
                                 or_constraints {
                                   constraints { constraint { key: "env" value: "prod" } }
                                   constraints { constraint { key: "env" value: "test" } }
                                 }
                               })pb"));
}

TEST(CompileMatchTest, ExplicitOrAndAndNestOnTheSameKey) {
  EXPECT_THAT(CompileYaml("{env: {and: [{exists: true}, {not: {or: [prod, [qa]]}}]}}"),
              EqualsProto(R"pb(and_constraints {
                                 constraints {
                                   constraint {
                                     key: "env"
                                     exists {}
                                   }
                                 }
                                 constraints {
                                   not_constraints {
                                     or_constraints {
                                       constraints { constraint { key: "env" value: "prod" } }
                                       constraints { constraint { key: "env" value: "qa" } }
                                     }
                                   }
                                 }
                               })pb"));
}

TEST(CompileMatchTest, SingleOperandOrIsTheOperand) {
  EXPECT_THAT(CompileYaml("{env: {or: [prod]}}"),
              EqualsProto(R"pb(constraint { key: "env" value: "prod" })pb"));
}

TEST(CompileMatchTest, OperatorNamesAreParameterKeysInKeyPosition) {
  EXPECT_THAT(CompileYaml("{and: x, exists: {exists: true}, not: y, or: z}"),
              EqualsProto(R"pb(and_constraints {
                                 constraints { constraint { key: "and" value: "x" } }
                                 constraints {
                                   constraint {
                                     key: "exists"
                                     exists {}
                                   }
                                 }
                                 constraints { constraint { key: "not" value: "y" } }
                                 constraints { constraint { key: "or" value: "z" } }
                               })pb"));
}

TEST(CompileMatchTest, ListOfMapsIsOredAcrossKeys) {
  EXPECT_THAT(CompileYaml("[{env: prod}, {version: v1, env: test}]"),
              EqualsProto(R"pb(or_constraints {
                                 constraints { constraint { key: "env" value: "prod" } }
                                 constraints {
                                   and_constraints {
                                     constraints { constraint { key: "env" value: "test" } }
                                     constraints { constraint { key: "version" value: "v1" } }
                                   }
                                 }
                               })pb"));
}

TEST(CompileMatchTest, OneMapListIsTheMap) {
  EXPECT_THAT(CompileYaml("[{env: prod}]"),
              EqualsProto(R"pb(constraint { key: "env" value: "prod" })pb"));
}

TEST(CompileMatchTest, EmptyMapIsUnconstrained) {
  absl::StatusOr<DynamicParameterConstraints> proto = CompileYaml("{}");
  ASSERT_THAT(proto, IsOk());
  EXPECT_EQ(proto->type_case(), DynamicParameterConstraints::TYPE_NOT_SET);
  absl::StatusOr<Constraint> constraint = Constraint::Compile(*proto);
  ASSERT_THAT(constraint, IsOk());
  EXPECT_TRUE(constraint->unconstrained());
}

TEST(CompileMatchTest, TranslationMatchesLikeTheWrittenForm) {
  absl::StatusOr<DynamicParameterConstraints> proto =
      CompileYaml("{env: prod, version: {exists: false}}");
  ASSERT_THAT(proto, IsOk());
  absl::StatusOr<Constraint> constraint = Constraint::Compile(*proto);
  ASSERT_THAT(constraint, IsOk());
  EXPECT_EQ(constraint->ToString(), "env=prod AND NOT exists(version)");
  EXPECT_TRUE(constraint->Matches({{"env", "prod"}}));
  EXPECT_FALSE(constraint->Matches({{"env", "prod"}, {"version", "v1"}}));
}

TEST(CompileMatchTest, KeysThatAreNotIdentifiersAreQuotedInPaths) {
  ExpectError("{'a.b': ~}",
              "spec.variants[2].match[\"a.b\"]: expected a string, a list of "
              "strings, or an object with one of exists/not/or/and");
}

// Errors.

TEST(CompileMatchTest, RejectsNullValue) {
  ExpectError("{env: ~}",
              "spec.variants[2].match.env: expected a string, a list of strings, or "
              "an object with one of exists/not/or/and");
  ExpectError("{env: }",
              "spec.variants[2].match.env: expected a string, a list of strings, or "
              "an object with one of exists/not/or/and");
}

TEST(CompileMatchTest, RejectsEmptyListValue) {
  ExpectError("{env: []}",
              "spec.variants[2].match.env: expected a string, a list of strings, "
              "or an object with one of exists/not/or/and");
}

TEST(CompileMatchTest, RejectsEmptyMapValue) {
  ExpectError("{env: {}}",
              "spec.variants[2].match.env: expected a string, a list of strings, "
              "or an object with one of exists/not/or/and");
}

TEST(CompileMatchTest, RejectsNonStringInValueList) {
  ExpectError("{env: [prod, [test]]}", "spec.variants[2].match.env[1]: expected a string");
  ExpectError("{env: [prod, ~]}", "spec.variants[2].match.env[1]: expected a string");
}

TEST(CompileMatchTest, RejectsUnknownOperator) {
  ExpectError("{env: {in: [a]}}",
              "spec.variants[2].match.env: unknown operator \"in\"; "
              "expected exactly one of exists/not/or/and");
}

TEST(CompileMatchTest, RejectsObjectWithSeveralOperators) {
  ExpectError("{env: {not: a, or: [b]}}",
              "spec.variants[2].match.env: an object in value position must have exactly one "
              "of exists/not/or/and");
}

TEST(CompileMatchTest, RejectsNonBoolExists) {
  ExpectError("{env: {exists: yes}}", "spec.variants[2].match.env.exists: expected true or false");
  ExpectError("{env: {exists: 'true'}}",
              "spec.variants[2].match.env.exists: expected true or false");
  ExpectError("{env: {exists: [true]}}",
              "spec.variants[2].match.env.exists: expected true or false");
}

TEST(CompileMatchTest, RejectsEmptyOrNonListOperands) {
  ExpectError("{env: {or: []}}",
              "spec.variants[2].match.env.or: expected a non-empty list of value specs");
  ExpectError("{env: {and: prod}}",
              "spec.variants[2].match.env.and: expected a non-empty list of value specs");
}

TEST(CompileMatchTest, RejectsBadNestedOperandWithItsPath) {
  ExpectError("{env: {or: [prod, {not: ~}]}}",
              "spec.variants[2].match.env.or[1].not: expected a string, a list of strings, or "
              "an object with one of exists/not/or/and");
}

TEST(CompileMatchTest, RejectsTopLevelThatIsNotAMapOrList) {
  ExpectError("prod",
              "spec.variants[2].match: expected a map of parameter keys to values, or a "
              "list of such maps");
  ExpectError("~",
              "spec.variants[2].match: expected a map of parameter keys to values, or a "
              "list of such maps");
}

TEST(CompileMatchTest, RejectsMissingNode) {
  const YAML::Node spec = YAML::Load("{variants: []}");
  EXPECT_THAT(CompileMatch(spec["match"], "spec.match"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.match: is missing; expected a map of parameter keys to values"));
}

TEST(CompileMatchTest, RejectsEmptyTopLevelList) {
  ExpectError("[]",
              "spec.variants[2].match: must list at least one map of parameter keys to "
              "values");
}

TEST(CompileMatchTest, RejectsNonMapOrEmptyMapInTopLevelList) {
  ExpectError("[{env: prod}, prod]",
              "spec.variants[2].match[1]: expected a map of parameter keys to values");
  EXPECT_THAT(CompileYaml("[{env: prod}, {}]"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.variants[2].match[1]: an empty map matches everything")));
}

TEST(CompileMatchTest, RejectsEmptyAndComplexKeys) {
  ExpectError("{'': prod}", "spec.variants[2].match: parameter keys must not be empty");
  ExpectError("{[a]: prod}", "spec.variants[2].match: parameter keys must be strings");
}

TEST(CompileMatchTest, RejectsDuplicateKeys) {
  ExpectError("{env: prod, env: test}", "spec.variants[2].match: duplicate parameter key \"env\"");
}

TEST(CompileMatchTest, RejectsStringsLongerThanLimit) {
  ConstraintLimits limits;
  limits.max_string_length = 3;
  EXPECT_THAT(CompileYaml("{env: abc}", limits), IsOk());
  EXPECT_THAT(CompileYaml("{env: abcd}", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.variants[2].match.env: the value is 4 characters long, more than 3 "
                       "(limit max_string_length)"));
  EXPECT_THAT(CompileYaml("{envx: a}", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.variants[2].match.envx: the key is 4 characters long")));
}

TEST(CompileMatchTest, RejectsNestingBeyondDepthLimit) {
  ConstraintLimits limits;
  limits.max_depth = 3;
  EXPECT_THAT(CompileYaml("{env: {not: {not: a}}}", limits), IsOk());
  EXPECT_THAT(CompileYaml("{env: {not: {not: {not: a}}}}", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "spec.variants[2].match.env.not.not.not: operators are nested more than 3 "
                       "levels deep (limit max_depth)"));
}

TEST(CompileMatchTest, RejectsTranslationExceedingCompileLimits) {
  ConstraintLimits limits;
  limits.max_depth = 2;
  EXPECT_THAT(CompileYaml("{a: {not: x}, b: y}", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.variants[2].match: the translated constraints are "
                                 "invalid: ")));
}

TEST(CompileMatchTest, UsesMatchAsPathWhenNoneIsGiven) {
  EXPECT_THAT(CompileMatch(YAML::Load("{env: ~}"), ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("match.env: expected")));
}

}  // namespace
}  // namespace facet::xds
