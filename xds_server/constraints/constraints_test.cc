#include "xds_server/constraints/constraints.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

DynamicParameterConstraints Proto(const std::string& text) {
  DynamicParameterConstraints proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  return proto;
}

Constraint MustCompile(const std::string& text) {
  absl::StatusOr<Constraint> constraint = Constraint::Compile(Proto(text));
  EXPECT_THAT(constraint, IsOk()) << text;
  return constraint.ok() ? *constraint : Constraint::Unconstrained();
}

absl::Status CompileError(const std::string& text, const ConstraintLimits& limits = {}) {
  return Constraint::Compile(Proto(text), limits).status();
}

// Nests `inner` in `levels` not_constraints.
std::string Nested(int levels, const std::string& inner) {
  std::string text = inner;
  for (int i = 0; i < levels; ++i) text = absl::StrCat("not_constraints { ", text, " }");
  return text;
}

// An and_constraints list of `n` leaves (n + 1 nodes).
std::string AndOfLeaves(int n) {
  std::string text = "and_constraints { ";
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&text, "constraints { constraint { key: \"k", i, "\" value: \"v\" } } ");
  }
  return text + "}";
}

constexpr char kEnvProd[] = R"pb(constraint { key: "env" value: "prod" })pb";
constexpr char kEnvProdWithoutVersion[] = R"pb(
  and_constraints {
    constraints { constraint { key: "env" value: "prod" } }
    constraints {
      not_constraints {
        constraint {
          key: "version"
          exists {}
        }
      }
    }
  })pb";

TEST(ConstraintTest, UnconstrainedMatchesEveryParameterSet) {
  const Constraint constraint = Constraint::Unconstrained();
  EXPECT_TRUE(constraint.unconstrained());
  EXPECT_TRUE(constraint.Matches({}));
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}, {"version", "v1"}}));
  EXPECT_THAT(constraint.keys(), IsEmpty());
  EXPECT_EQ(constraint.ToString(), "unconstrained");
}

TEST(ConstraintTest, DefaultConstructedIsUnconstrained) {
  EXPECT_TRUE(Constraint().unconstrained());
  EXPECT_TRUE(Constraint().Matches({{"a", "b"}}));
}

TEST(ConstraintTest, EmptyProtoCompilesToUnconstrained) {
  const Constraint constraint = MustCompile("");
  EXPECT_TRUE(constraint.unconstrained());
  EXPECT_TRUE(constraint.Matches({{"env", "test"}}));
}

TEST(ConstraintTest, ExactValueMatchesOnlyThatValue) {
  const Constraint constraint = MustCompile(kEnvProd);
  EXPECT_FALSE(constraint.unconstrained());
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}}));
  EXPECT_FALSE(constraint.Matches({{"env", "test"}}));
  EXPECT_FALSE(constraint.Matches({{"env", "Prod"}}));
  EXPECT_FALSE(constraint.Matches({{"env", ""}}));
}

TEST(ConstraintTest, ExactValueNeverMatchesAbsentKey) {
  EXPECT_FALSE(MustCompile(kEnvProd).Matches({}));
  EXPECT_FALSE(MustCompile(kEnvProd).Matches({{"version", "prod"}}));
}

TEST(ConstraintTest, EmptyValueMatchesPresentEmptyValueOnly) {
  const Constraint constraint = MustCompile(R"pb(constraint { key: "env" value: "" })pb");
  EXPECT_TRUE(constraint.Matches({{"env", ""}}));
  EXPECT_FALSE(constraint.Matches({}));
  EXPECT_FALSE(constraint.Matches({{"env", "prod"}}));
}

// TP2: parameters the constraints do not mention do not prevent a match.
TEST(ConstraintTest, UnmentionedParametersDoNotPreventMatch) {
  const Constraint constraint = MustCompile(kEnvProd);
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}, {"version", "v1"}, {"zone", "a"}}));
}

TEST(ConstraintTest, ExistsMatchesAnyPresentValue) {
  const Constraint constraint = MustCompile(R"pb(constraint {
                                                   key: "version"
                                                   exists {}
                                                 })pb");
  EXPECT_TRUE(constraint.Matches({{"version", "v1"}}));
  EXPECT_TRUE(constraint.Matches({{"version", ""}}));
  EXPECT_FALSE(constraint.Matches({}));
  EXPECT_FALSE(constraint.Matches({{"env", "prod"}}));
}

TEST(ConstraintTest, NotExistsMatchesOnlyAbsentKey) {
  const Constraint constraint = MustCompile(R"pb(not_constraints {
                                                   constraint {
                                                     key: "version"
                                                     exists {}
                                                   }
                                                 })pb");
  EXPECT_TRUE(constraint.Matches({}));
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}}));
  EXPECT_FALSE(constraint.Matches({{"version", ""}}));
  EXPECT_FALSE(constraint.Matches({{"version", "v1"}}));
}

TEST(ConstraintTest, NotValueMatchesOtherValuesAndAbsentKey) {
  const Constraint constraint = MustCompile(absl::StrCat("not_constraints { ", kEnvProd, " }"));
  EXPECT_FALSE(constraint.Matches({{"env", "prod"}}));
  EXPECT_TRUE(constraint.Matches({{"env", "test"}}));
  EXPECT_TRUE(constraint.Matches({}));
}

TEST(ConstraintTest, AndRequiresEveryOperand) {
  const Constraint constraint = MustCompile(kEnvProdWithoutVersion);
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}}));
  EXPECT_FALSE(constraint.Matches({{"env", "prod"}, {"version", "v1"}}));
  EXPECT_FALSE(constraint.Matches({{"env", "test"}}));
}

TEST(ConstraintTest, OrRequiresAnyOperand) {
  const Constraint constraint = MustCompile(R"pb(
    or_constraints {
      constraints { constraint { key: "env" value: "prod" } }
      constraints { constraint { key: "version" value: "v1" } }
    })pb");
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}}));
  EXPECT_TRUE(constraint.Matches({{"version", "v1"}}));
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}, {"version", "v1"}}));
  EXPECT_FALSE(constraint.Matches({{"env", "test"}, {"version", "v2"}}));
  EXPECT_FALSE(constraint.Matches({}));
}

TEST(ConstraintTest, SingleOperandListsBehaveLikeTheOperand) {
  EXPECT_TRUE(MustCompile(absl::StrCat("or_constraints { constraints { ", kEnvProd, " } }"))
                  .Matches({{"env", "prod"}}));
  EXPECT_FALSE(MustCompile(absl::StrCat("and_constraints { constraints { ", kEnvProd, " } }"))
                   .Matches({{"env", "test"}}));
}

TEST(ConstraintTest, DoubleNegationIsIdentity) {
  const Constraint constraint = MustCompile(Nested(2, kEnvProd));
  EXPECT_TRUE(constraint.Matches({{"env", "prod"}}));
  EXPECT_FALSE(constraint.Matches({}));
}

// The TP2 example: four variants over env and version, each client matches
// exactly the variant for its parameters.
TEST(ConstraintTest, FourVariantExampleSelectsOneVariantPerClient) {
  const Constraint neither = MustCompile(R"pb(
    and_constraints {
      constraints { not_constraints { constraint { key: "env" value: "prod" } } }
      constraints { not_constraints { constraint { key: "version" value: "v1" } } }
    })pb");
  const Constraint prod_only = MustCompile(R"pb(
    and_constraints {
      constraints { constraint { key: "env" value: "prod" } }
      constraints { not_constraints { constraint { key: "version" value: "v1" } } }
    })pb");
  const Constraint v1_only = MustCompile(R"pb(
    and_constraints {
      constraints { not_constraints { constraint { key: "env" value: "prod" } } }
      constraints { constraint { key: "version" value: "v1" } }
    })pb");
  const Constraint both = MustCompile(R"pb(
    and_constraints {
      constraints { constraint { key: "env" value: "prod" } }
      constraints { constraint { key: "version" value: "v1" } }
    })pb");
  for (const char* env : {"prod", "canary", "test"}) {
    for (const char* version : {"v1", "v2", "v3"}) {
      const ParameterSet params = {{"env", env}, {"version", version}};
      const bool prod = std::string(env) == "prod";
      const bool v1 = std::string(version) == "v1";
      EXPECT_EQ(neither.Matches(params), !prod && !v1) << env << " " << version;
      EXPECT_EQ(prod_only.Matches(params), prod && !v1) << env << " " << version;
      EXPECT_EQ(v1_only.Matches(params), !prod && v1) << env << " " << version;
      EXPECT_EQ(both.Matches(params), prod && v1) << env << " " << version;
    }
  }
}

TEST(ConstraintTest, KeysListsEveryMentionedKeyOnce) {
  const Constraint constraint = MustCompile(R"pb(
    or_constraints {
      constraints { constraint { key: "zone" value: "a" } }
      constraints {
        and_constraints {
          constraints { constraint { key: "env" value: "prod" } }
          constraints {
            not_constraints {
              constraint {
                key: "zone"
                exists {}
              }
            }
          }
        }
      }
    })pb");
  EXPECT_THAT(constraint.keys(), ElementsAre("env", "zone"));
  EXPECT_THAT(constraint.key_list(), ElementsAre("env", "zone"));
}

TEST(ConstraintTest, ProtoIsKeptAsGiven) {
  const DynamicParameterConstraints proto = Proto(R"pb(
    and_constraints {
      constraints { constraint { key: "z" value: "2" } }
      constraints { constraint { key: "a" value: "1" } }
    })pb");
  absl::StatusOr<Constraint> constraint = Constraint::Compile(proto);
  ASSERT_THAT(constraint, IsOk());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(constraint->proto(), proto));
}

TEST(ConstraintTest, CopiesShareTheCompiledForm) {
  const Constraint original = MustCompile(kEnvProd);
  const Constraint copy = original;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&copy.proto(), &original.proto());
  EXPECT_TRUE(copy.Matches({{"env", "prod"}}));
}

TEST(ConstraintTest, ToStringIsShortAndReadable) {
  EXPECT_EQ(MustCompile(kEnvProdWithoutVersion).ToString(), "env=prod AND NOT exists(version)");
  EXPECT_EQ(MustCompile(R"pb(
              and_constraints {
                constraints {
                  or_constraints {
                    constraints { constraint { key: "env" value: "prod" } }
                    constraints { constraint { key: "env" value: "test" } }
                  }
                }
                constraints {
                  not_constraints {
                    or_constraints {
                      constraints { constraint { key: "v" value: "1" } }
                      constraints { constraint { key: "v" value: "2" } }
                    }
                  }
                }
              })pb")
                .ToString(),
            "(env=prod OR env=test) AND NOT (v=1 OR v=2)");
}

TEST(ConstraintTest, ToStringQuotesWordsThatAreNotPlain) {
  EXPECT_EQ(MustCompile(R"pb(constraint { key: "my key" value: "a\"b" })pb").ToString(),
            R"("my key"="a\"b")");
  EXPECT_EQ(MustCompile(R"pb(constraint { key: "env" value: "" })pb").ToString(), R"(env="")");
}

TEST(ParameterSetToStringTest, ListsPairsInKeyOrder) {
  EXPECT_EQ(ParameterSetToString({}), "{}");
  EXPECT_EQ(ParameterSetToString({{"version", "v1"}, {"env", "prod"}}), "{env=prod, version=v1}");
  EXPECT_EQ(ParameterSetToString({{"env", ""}}), R"({env=""})");
}

// Compile rejections.

TEST(ConstraintCompileTest, RejectsEmptyKeyNamingThePath) {
  EXPECT_THAT(CompileError(R"pb(
                and_constraints {
                  constraints { constraint { key: "env" value: "prod" } }
                  constraints { constraint { key: "" value: "v1" } }
                })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "and_constraints.constraints[1].constraint.key: must not be empty"));
  EXPECT_THAT(CompileError(R"pb(constraint { exists {} })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument, "constraint.key: must not be empty"));
}

TEST(ConstraintCompileTest, RejectsSingleConstraintWithNeitherValueNorExists) {
  EXPECT_THAT(CompileError(R"pb(not_constraints { constraint { key: "env" } })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "not_constraints.constraint: must set value or exists"));
}

TEST(ConstraintCompileTest, RejectsEmptyOrList) {
  EXPECT_THAT(CompileError("or_constraints {}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "or_constraints.constraints: must not be empty"));
}

TEST(ConstraintCompileTest, RejectsEmptyAndList) {
  EXPECT_THAT(CompileError(R"pb(not_constraints { and_constraints {} })pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "not_constraints.and_constraints.constraints: must not be empty"));
}

TEST(ConstraintCompileTest, RejectsEmptyMessageInsideList) {
  EXPECT_THAT(CompileError(
                  absl::StrCat("or_constraints { constraints { ", kEnvProd, " } constraints {} }")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("or_constraints.constraints[1]: must set one of constraint, "
                                 "or_constraints, and_constraints, not_constraints")));
}

TEST(ConstraintCompileTest, RejectsEmptyMessageUnderNot) {
  EXPECT_THAT(
      CompileError("not_constraints {}"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not_constraints: must set one of")));
}

TEST(ConstraintCompileTest, RejectsKeyLongerThanMaxStringLength) {
  ConstraintLimits limits;
  limits.max_string_length = 4;
  EXPECT_THAT(CompileError(R"pb(constraint { key: "abcd" value: "x" })pb", limits), IsOk());
  EXPECT_THAT(CompileError(R"pb(constraint { key: "abcde" value: "x" })pb", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "constraint.key: length 5 exceeds 4 (limit max_string_length)"));
}

TEST(ConstraintCompileTest, RejectsValueLongerThanMaxStringLength) {
  ConstraintLimits limits;
  limits.max_string_length = 4;
  EXPECT_THAT(
      CompileError(R"pb(constraint { key: "k" value: "abcde" })pb", limits),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("constraint.value: length 5 exceeds 4 (limit max_string_length)")));
}

TEST(ConstraintCompileTest, RejectsKeysAndValuesThatAreNotUtf8OrHoldControlCharacters) {
  auto compile = [](const std::string& key, const std::string& value) {
    DynamicParameterConstraints proto;
    auto* one = proto.mutable_and_constraints()->add_constraints()->mutable_constraint();
    one->set_key("env");
    one->set_value("prod");
    auto* two = proto.mutable_and_constraints()->add_constraints()->mutable_constraint();
    two->set_key(key);
    two->set_value(value);
    return Constraint::Compile(proto).status();
  };
  EXPECT_THAT(compile("zone", "z\xc3\xa9"), IsOk());  // "zé"
  EXPECT_THAT(compile("zone", "a\xff"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "and_constraints.constraints[1].constraint.value: is not valid UTF-8 (at "
                       "byte 1)"));
  EXPECT_THAT(compile("zo\xc0\x80ne", "a"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("constraint.key: is not valid UTF-8 (at byte 2)")));
  for (const std::string& control :
       std::vector<std::string>{"\n", std::string(1, '\0'), "\x7f", "\xc2\x85"}) {
    EXPECT_THAT(compile("zone", "a" + control),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("constraint.value: contains control characters (at byte 1)")));
  }
}

TEST(ConstraintCompileTest, AcceptsDepthAtLimitAndRejectsDeeper) {
  ConstraintLimits limits;
  limits.max_depth = 4;
  EXPECT_THAT(CompileError(Nested(3, kEnvProd), limits), IsOk());
  EXPECT_THAT(CompileError(Nested(4, kEnvProd), limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "not_constraints.not_constraints.not_constraints.not_constraints: "
                       "expression is nested more than 4 levels deep (limit max_depth)"));
}

TEST(ConstraintCompileTest, DefaultDepthLimitIsSixteen) {
  EXPECT_THAT(CompileError(Nested(15, kEnvProd)), IsOk());
  EXPECT_THAT(CompileError(Nested(16, kEnvProd)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_depth")));
}

TEST(ConstraintCompileTest, AcceptsNodesAtLimitAndRejectsMore) {
  ConstraintLimits limits;
  limits.max_nodes = 5;
  EXPECT_THAT(CompileError(AndOfLeaves(4), limits), IsOk());
  EXPECT_THAT(CompileError(AndOfLeaves(5), limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "and_constraints.constraints[4]: expression has more than 5 nodes "
                       "(limit max_nodes)"));
}

TEST(ConstraintCompileTest, DefaultNodeLimitIs256) {
  EXPECT_THAT(CompileError(AndOfLeaves(255)), IsOk());
  EXPECT_THAT(CompileError(AndOfLeaves(256)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_nodes")));
}

}  // namespace
}  // namespace facet::xds
