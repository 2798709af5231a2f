#include "xds_server/constraints/variant_set.h"

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

MATCHER_P(IsOkAndHolds, matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

Constraint MustCompile(const std::string& text) {
  DynamicParameterConstraints proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  absl::StatusOr<Constraint> constraint = Constraint::Compile(proto);
  EXPECT_THAT(constraint, IsOk()) << text;
  return constraint.ok() ? *constraint : Constraint::Unconstrained();
}

std::string Eq(const std::string& key, const std::string& value) {
  return absl::StrCat("constraint { key: \"", key, "\" value: \"", value, "\" }");
}
std::string Exists(const std::string& key) {
  return absl::StrCat("constraint { key: \"", key, "\" exists {} }");
}
std::string Not(const std::string& operand) {
  return absl::StrCat("not_constraints { ", operand, " }");
}
std::string List(const char* field, const std::vector<std::string>& operands) {
  std::string text = absl::StrCat(field, " { ");
  for (const std::string& operand : operands)
    absl::StrAppend(&text, "constraints { ", operand, " } ");
  return text + "}";
}
std::string And(const std::vector<std::string>& operands) {
  return List("and_constraints", operands);
}
std::string Or(const std::vector<std::string>& operands) {
  return List("or_constraints", operands);
}

std::vector<Constraint> Variants(const std::vector<std::string>& texts) {
  std::vector<Constraint> variants;
  for (const std::string& text : texts) variants.push_back(MustCompile(text));
  return variants;
}

Constraint MustCompileWith(const std::string& text, const ConstraintLimits& limits) {
  DynamicParameterConstraints proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  absl::StatusOr<Constraint> constraint = Constraint::Compile(proto, limits);
  EXPECT_THAT(constraint, IsOk()) << text;
  return constraint.ok() ? *constraint : Constraint::Unconstrained();
}

VariantSetReport MustCheck(const std::vector<Constraint>& variants,
                           const ConstraintLimits& limits = {}) {
  absl::StatusOr<VariantSetReport> report = CheckVariantSet(variants, limits);
  EXPECT_THAT(report, IsOk());
  return report.ok() ? *std::move(report) : VariantSetReport();
}

// Asserts the report's witnesses: each overlap witness matches both variants
// of its pair, and the gap matches no variant.
void ExpectWitnessesHold(const std::vector<Constraint>& variants, const VariantSetReport& report) {
  for (const auto& overlap : report.overlaps) {
    EXPECT_LT(overlap.a, overlap.b);
    EXPECT_TRUE(variants[overlap.a].Matches(overlap.witness))
        << ParameterSetToString(overlap.witness);
    EXPECT_TRUE(variants[overlap.b].Matches(overlap.witness))
        << ParameterSetToString(overlap.witness);
  }
  if (report.gap.has_value()) {
    for (const Constraint& variant : variants) {
      EXPECT_FALSE(variant.Matches(*report.gap)) << ParameterSetToString(*report.gap);
    }
  }
}

std::vector<std::pair<size_t, size_t>> Pairs(const VariantSetReport& report) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const auto& overlap : report.overlaps) pairs.emplace_back(overlap.a, overlap.b);
  return pairs;
}

// TP2 examples.

TEST(CheckVariantSetTest, BasicEnvExampleHasNoOverlapButAGapForOtherEnvs) {
  const auto variants = Variants({Eq("env", "prod"), Eq("env", "test")});
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.key_set_mismatches, IsEmpty());
  EXPECT_THAT(report.overlaps, IsEmpty());
  ASSERT_TRUE(report.gap.has_value());  // e.g. a client without env
  ExpectWitnessesHold(variants, report);
  EXPECT_TRUE(variants[0].Matches({{"env", "prod"}}));
  EXPECT_TRUE(variants[1].Matches({{"env", "test"}}));
}

TEST(CheckVariantSetTest, SingleUnconstrainedVariantServesEveryClient) {
  const VariantSetReport report = MustCheck({Constraint::Unconstrained()});
  EXPECT_TRUE(report.ok());
}

TEST(CheckVariantSetTest, UnconstrainedParametersDoNotCauseOverlapOrGap) {
  // Clients already send `version`; the variants only split on env, including
  // a default for clients with any other env or none.
  const auto variants = Variants({Eq("env", "prod"), Not(Eq("env", "prod"))});
  const VariantSetReport report = MustCheck(variants);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(variants[0].Matches({{"env", "prod"}, {"version", "v1"}}));
  EXPECT_TRUE(variants[1].Matches({{"env", "test"}, {"version", "v2"}}));
}

TEST(CheckVariantSetTest, TransitionToVersionKeyIsValidAndClientsWithoutVersionHitAGap) {
  const std::vector<Constraint> variants = Variants({
      Eq("env", "test"),
      And({Eq("env", "prod"), Eq("version", "v1")}),
      And({Eq("env", "prod"), Eq("version", "v2")}),
  });
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_FALSE(report.overlaps_truncated);
  // The best-practice check flags the env-only variant: it does not list version.
  ASSERT_EQ(report.key_set_mismatches.size(), 2u);
  EXPECT_EQ(report.key_set_mismatches[0].a, 0u);
  EXPECT_EQ(report.key_set_mismatches[0].b, 1u);
  EXPECT_THAT(report.key_set_mismatches[0].keys_a, ElementsAre("env"));
  EXPECT_THAT(report.key_set_mismatches[0].keys_b, ElementsAre("env", "version"));
  // A prod client that does not send version matches nothing.
  EXPECT_THAT(report.gap, Optional(ParameterSet{{"env", "prod"}}));
  ExpectWitnessesHold(variants, report);
  EXPECT_TRUE(variants[1].Matches({{"env", "prod"}, {"version", "v1"}}));
  EXPECT_TRUE(variants[0].Matches({{"env", "test"}, {"version", "v2"}}));
}

TEST(CheckVariantSetTest, ReplacementProdVariantsAloneAreDisjointWithSameKeys) {
  const std::vector<Constraint> variants = Variants({
      And({Eq("env", "prod"), Eq("version", "v1")}),
      And({Eq("env", "prod"), Eq("version", "v2")}),
  });
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.key_set_mismatches, IsEmpty());
  EXPECT_THAT(report.overlaps, IsEmpty());
  ASSERT_TRUE(report.gap.has_value());
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, AddingKeyOnServerFirstWithoutExistsOverlaps) {
  const std::vector<Constraint> variants = Variants({
      Eq("env", "prod"),
      And({Eq("env", "prod"), Eq("version", "v1")}),
  });
  const VariantSetReport report = MustCheck(variants);
  ASSERT_EQ(report.overlaps.size(), 1u);
  EXPECT_EQ(report.overlaps[0].witness, (ParameterSet{{"env", "prod"}, {"version", "v1"}}));
  ASSERT_EQ(report.key_set_mismatches.size(), 1u);
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, AddingKeyOnServerFirstWithExistsDefaultIsValid) {
  const std::vector<Constraint> variants = Variants({
      And({Eq("env", "prod"), Not(Exists("version"))}),
      And({Eq("env", "prod"), Eq("version", "v1")}),
  });
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.key_set_mismatches, IsEmpty());
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_TRUE(variants[0].Matches({{"env", "prod"}}));
  EXPECT_TRUE(variants[1].Matches({{"env", "prod"}, {"version", "v1"}}));
  // Other envs, and prod clients with another version, are still gaps.
  ASSERT_TRUE(report.gap.has_value());
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, RejectsOverlappingOrConstraintsWithWitness) {
  const std::vector<Constraint> variants = Variants({
      Or({Eq("env", "prod"), Eq("env", "test")}),
      Or({Eq("env", "qa"), Eq("env", "test")}),
  });
  const VariantSetReport report = MustCheck(variants);
  ASSERT_EQ(report.overlaps.size(), 1u);
  EXPECT_EQ(report.overlaps[0].a, 0u);
  EXPECT_EQ(report.overlaps[0].b, 1u);
  EXPECT_EQ(report.overlaps[0].witness, (ParameterSet{{"env", "test"}}));
  EXPECT_FALSE(report.ok());
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, FourVariantEnvVersionExampleIsValidWithoutGaps) {
  const std::vector<Constraint> variants = Variants({
      And({Not(Eq("env", "prod")), Not(Eq("version", "v1"))}),
      And({Eq("env", "prod"), Not(Eq("version", "v1"))}),
      And({Not(Eq("env", "prod")), Eq("version", "v1")}),
      And({Eq("env", "prod"), Eq("version", "v1")}),
  });
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.key_set_mismatches, IsEmpty());
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_EQ(report.gap, std::nullopt);
  EXPECT_TRUE(report.ok());
}

// Other checks.

TEST(CheckVariantSetTest, ReportsKeySetMismatchAgainstFirstVariant) {
  const std::vector<Constraint> variants = Variants({
      And({Eq("env", "prod"), Eq("zone", "a")}),
      And({Eq("env", "test"), Eq("zone", "a")}),
      And({Eq("env", "qa"), Eq("version", "v1")}),
  });
  const VariantSetReport report = MustCheck(variants);
  ASSERT_EQ(report.key_set_mismatches.size(), 1u);
  EXPECT_EQ(report.key_set_mismatches[0].a, 0u);
  EXPECT_EQ(report.key_set_mismatches[0].b, 2u);
  EXPECT_THAT(report.key_set_mismatches[0].keys_a, ElementsAre("env", "zone"));
  EXPECT_THAT(report.key_set_mismatches[0].keys_b, ElementsAre("env", "version"));
  EXPECT_THAT(report.overlaps, IsEmpty());
}

TEST(CheckVariantSetTest, UnconstrainedVariantOverlapsAConstrainedOne) {
  const std::vector<Constraint> variants = {Constraint::Unconstrained(),
                                            MustCompile(Eq("env", "prod"))};
  const VariantSetReport report = MustCheck(variants);
  ASSERT_THAT(Pairs(report), ElementsAre(std::make_pair(0u, 1u)));
  EXPECT_EQ(report.overlaps[0].witness, (ParameterSet{{"env", "prod"}}));
  ASSERT_EQ(report.key_set_mismatches.size(), 1u);
  EXPECT_EQ(report.gap, std::nullopt);
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, UnsatisfiableVariantOverlapsNothing) {
  const std::vector<Constraint> variants = {
      Constraint::Unconstrained(), MustCompile(And({Eq("env", "prod"), Not(Exists("env"))}))};
  EXPECT_THAT(MustCheck(variants).overlaps, IsEmpty());
}

TEST(CheckVariantSetTest, ReportsEveryOverlappingPairSorted) {
  const std::vector<Constraint> variants = Variants({
      Exists("env"),
      Eq("env", "prod"),
      Eq("env", "test"),
      Or({Eq("env", "test"), Not(Exists("env"))}),
  });
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(Pairs(report), ElementsAre(std::make_pair(0u, 1u), std::make_pair(0u, 2u),
                                         std::make_pair(0u, 3u), std::make_pair(2u, 3u)));
  EXPECT_FALSE(report.overlaps_truncated);
  EXPECT_EQ(report.gap, std::nullopt);
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, TruncatesOverlapListAtLimit) {
  const std::vector<Constraint> variants(10, Constraint::Unconstrained());  // 45 pairs
  const VariantSetReport report = MustCheck(variants);
  EXPECT_EQ(report.overlaps.size(), 16u);
  EXPECT_TRUE(report.overlaps_truncated);

  ConstraintLimits limits;
  limits.max_reported_overlaps = 45;
  const VariantSetReport complete = MustCheck(variants, limits);
  EXPECT_EQ(complete.overlaps.size(), 45u);
  EXPECT_FALSE(complete.overlaps_truncated);
}

TEST(CheckVariantSetTest, NoVariantsLeaveEveryClientInAGap) {
  const VariantSetReport report = MustCheck({});
  EXPECT_THAT(report.gap, Optional(ParameterSet{}));
}

TEST(CheckVariantSetTest, GapWitnessUsesOtherValueWhenPresenceIsCovered) {
  // Absent and the two listed values are covered; only an unlisted value is not.
  const std::vector<Constraint> variants =
      Variants({Not(Exists("env")), Eq("env", "other"), Eq("env", "prod")});
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.gap, Optional(ParameterSet{{"env", "other-2"}}));
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, RejectsMoreVariantsThanLimit) {
  ConstraintLimits limits;
  limits.max_variants_per_resource = 2;
  const auto variants = Variants({Eq("env", "a"), Eq("env", "b"), Eq("env", "c")});
  EXPECT_THAT(CheckVariantSet(variants, limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3 variants, more than 2 (limit max_variants_per_resource)")));
  EXPECT_THAT(CheckVariantSet(absl::MakeSpan(variants).subspan(0, 2), limits), IsOk());
}

TEST(CheckVariantSetTest, RejectsMoreKeysThanLimit) {
  ConstraintLimits limits;
  limits.max_keys_per_resource = 2;
  EXPECT_THAT(CheckVariantSet(Variants({Eq("a", "1"), Eq("b", "1")}), limits), IsOk());
  EXPECT_THAT(CheckVariantSet(Variants({And({Eq("a", "1"), Eq("b", "1")}), Eq("c", "1")}), limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3 distinct keys, more than 2 (limit max_keys_per_resource)")));
}

// A full grid: 2^bits variants, each an AND of exact matches on `bits` keys.
std::vector<Constraint> Grid(int bits) {
  std::vector<Constraint> variants;
  for (int v = 0; v < (1 << bits); ++v) {
    std::vector<std::string> operands;
    for (int k = 0; k < bits; ++k) {
      operands.push_back(Eq(absl::StrCat("k", k), (v >> k) & 1 ? "b" : "a"));
    }
    variants.push_back(MustCompile(And(operands)));
  }
  return variants;
}

// The same grid written with negations (`k=a` or NOT `k=a`): not a shape the
// near-linear path decides, so it takes the general search.
std::vector<Constraint> NegatedGrid(int bits) {
  std::vector<Constraint> variants;
  for (int v = 0; v < (1 << bits); ++v) {
    std::vector<std::string> operands;
    for (int k = 0; k < bits; ++k) {
      const std::string eq = Eq(absl::StrCat("k", k), "a");
      operands.push_back((v >> k) & 1 ? Not(eq) : eq);
    }
    variants.push_back(MustCompile(And(operands)));
  }
  return variants;
}

TEST(CheckVariantSetTest, FailsWithResourceExhaustedWhenBudgetIsSpent) {
  ConstraintLimits limits;
  limits.max_search_steps = 50;
  EXPECT_THAT(CheckVariantSet(NegatedGrid(6), limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("within 50 search steps (limit max_search_steps)")));
}

TEST(CheckVariantSetTest, SearchesShareTheObjectBudget) {
  // Each search alone fits max_search_steps, but not all of them together.
  ConstraintLimits limits;
  ASSERT_THAT(CheckVariantSet(NegatedGrid(6), limits), IsOk());
  int64_t budget = 60;
  limits.object_search_steps = 60;
  limits.object_budget = &budget;
  EXPECT_THAT(CheckVariantSet(NegatedGrid(6), limits),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("budget of 60 search steps (limit object_search_steps)")));
  EXPECT_LE(budget, 0);
  // A spent budget fails the next search at once.
  std::vector<const Constraint*> none;
  const Constraint any = MustCompile(Exists("k0"));
  EXPECT_THAT(FindParameterSet({&any}, none, limits),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("object_search_steps")));
}

TEST(CheckVariantSetTest, DefaultBudgetCoversFullGridAtLimits) {
  const std::vector<Constraint> variants = Grid(8);  // 256 variants over 8 keys
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_THAT(report.key_set_mismatches, IsEmpty());
  ASSERT_TRUE(report.gap.has_value());
  ExpectWitnessesHold(variants, report);
}

// Two identical variants are only both definitely true once all 24 keys are
// assigned; the search must stop exploring once their pair is known instead
// of enumerating 2^24 assignments.
TEST(CheckVariantSetTest, StopsExploringOnceEveryRemainingPairIsFound) {
  std::vector<std::string> operands;
  for (int k = 0; k < 24; ++k) {
    const std::string key = absl::StrCat("k", k);
    operands.push_back(Or({Eq(key, "x"), Eq(key, "y")}));
  }
  const std::vector<Constraint> variants = Variants({And(operands), And(operands)});
  ConstraintLimits limits;
  limits.max_search_steps = 10000;
  const VariantSetReport report = MustCheck(variants, limits);
  EXPECT_THAT(Pairs(report), ElementsAre(std::make_pair(0u, 1u)));
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, FindsTheOneOverlapInALargeGrid) {
  std::vector<Constraint> variants = Grid(8);
  variants.push_back(
      MustCompile(And({Eq("k3", "b"), Eq("k5", "a"), Eq("k0", "b"), Eq("k1", "a"), Eq("k2", "a"),
                       Eq("k4", "a"), Eq("k6", "b"), Eq("k7", "b")})));
  const VariantSetReport report = MustCheck(variants);
  ASSERT_THAT(Pairs(report), ElementsAre(std::make_pair(size_t{0b11001001}, size_t{256})));
  ExpectWitnessesHold(variants, report);
}

TEST(CheckVariantSetTest, DefaultBudgetCoversNegatedGridAtLimits) {
  const std::vector<Constraint> variants = NegatedGrid(8);
  const VariantSetReport report = MustCheck(variants);
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_EQ(report.gap, std::nullopt);
}

// Partitions of one key into exact values: decided by hashing, so the
// documented limit of 1,024 variants is reachable within a tiny budget.
std::vector<Constraint> EnvPartition(int n) {
  std::vector<Constraint> variants;
  for (int i = 0; i < n; ++i) variants.push_back(MustCompile(Eq("env", absl::StrCat("v", i))));
  return variants;
}

TEST(CheckVariantSetTest, AcceptsLargeExactPartitionsUpToTheVariantLimit) {
  for (int n : {768, 1024}) {
    ConstraintLimits limits;
    int64_t budget = 10 * n;  // Linear work: a few steps per variant.
    limits.object_budget = &budget;
    const std::vector<Constraint> variants = EnvPartition(n);
    const VariantSetReport report = MustCheck(variants, limits);
    EXPECT_THAT(report.overlaps, IsEmpty()) << n;
    EXPECT_THAT(report.key_set_mismatches, IsEmpty()) << n;
    EXPECT_THAT(report.gap, Optional(ParameterSet{})) << n;
    EXPECT_GT(budget, 0) << n;
  }
}

TEST(CheckVariantSetTest, RejectsAnExactPartitionOverTheVariantLimit) {
  EXPECT_THAT(CheckVariantSet(EnvPartition(1025)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1025 variants, more than 1024 (limit max_variants_per_resource)")));
}

TEST(CheckVariantSetTest, FindsTheOverlappingPairInALargeExactPartition) {
  std::vector<Constraint> variants = EnvPartition(1024);
  variants[900] = MustCompile(Eq("env", "v17"));
  ConstraintLimits limits;
  int64_t budget = 20000;
  limits.object_budget = &budget;
  const VariantSetReport report = MustCheck(variants, limits);
  ASSERT_THAT(Pairs(report), ElementsAre(std::make_pair(size_t{17}, size_t{900})));
  EXPECT_EQ(report.overlaps[0].witness, (ParameterSet{{"env", "v17"}}));
  EXPECT_GT(budget, 0);
}

TEST(CheckVariantSetTest, DecidesLargeMultiKeyTuplePartitionsLinearly) {
  std::vector<Constraint> variants;
  for (int i = 0; i < 1024; ++i) {
    variants.push_back(MustCompile(And({Eq("env", absl::StrCat("e", i % 32)),
                                        Eq("version", absl::StrCat("v", i / 32))})));
  }
  variants[1023] = variants[5];
  ConstraintLimits limits;
  int64_t budget = 20000;
  limits.object_budget = &budget;
  const VariantSetReport report = MustCheck(variants, limits);
  ASSERT_THAT(Pairs(report), ElementsAre(std::make_pair(size_t{5}, size_t{1023})));
  EXPECT_EQ(report.overlaps[0].witness, (ParameterSet{{"env", "e5"}, {"version", "v0"}}));
  ExpectWitnessesHold(variants, report);
  EXPECT_GT(budget, 0);
}

TEST(CheckVariantSetTest, DecidesValueListsWithADefaultLinearly) {
  // 340 variants listing three zones each, and a default for every other zone.
  ConstraintLimits limits;
  limits.max_nodes = 2048;
  std::vector<Constraint> variants;
  std::vector<std::string> listed;
  for (int i = 0; i < 340; ++i) {
    std::vector<std::string> values;
    for (int j = 3 * i; j < 3 * i + 3; ++j) values.push_back(Eq("zone", absl::StrCat("z", j)));
    variants.push_back(MustCompileWith(Or(values), limits));
    listed.insert(listed.end(), values.begin(), values.end());
  }
  variants.push_back(MustCompileWith(Not(Or(listed)), limits));
  int64_t budget = 20000;
  limits.object_budget = &budget;
  VariantSetReport report = MustCheck(variants, limits);
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_EQ(report.gap, std::nullopt);
  EXPECT_GT(budget, 0);

  // A default that no longer excludes z1019 overlaps the variant listing it.
  listed.pop_back();
  variants.back() = MustCompileWith(Not(Or(listed)), limits);
  report = MustCheck(variants, limits);
  ASSERT_THAT(Pairs(report), ElementsAre(std::make_pair(size_t{339}, size_t{340})));
  EXPECT_EQ(report.overlaps[0].witness, (ParameterSet{{"zone", "z1019"}}));
  ExpectWitnessesHold(variants, report);
  EXPECT_GT(budget, 0);

  // A default that excludes a value no variant lists leaves a gap there.
  listed.push_back(Eq("zone", "z1019"));
  listed.push_back(Eq("zone", "unlisted"));
  variants.back() = MustCompileWith(Not(Or(listed)), limits);
  report = MustCheck(variants, limits);
  EXPECT_THAT(report.overlaps, IsEmpty());
  EXPECT_THAT(report.gap, Optional(ParameterSet{{"zone", "unlisted"}}));
}

TEST(CheckVariantSetTest, ReportsTheFirstPairsOfManyEqualTuples) {
  const std::vector<Constraint> variants(40, MustCompile(Eq("env", "prod")));
  const VariantSetReport report = MustCheck(variants);
  EXPECT_EQ(report.overlaps.size(), 16u);
  EXPECT_TRUE(report.overlaps_truncated);
  EXPECT_EQ(Pairs(report).front(), std::make_pair(size_t{0}, size_t{1}));
  EXPECT_EQ(Pairs(report).back(), std::make_pair(size_t{0}, size_t{16}));
}

TEST(FindParameterSetTest, CoverageOfLargeExactPartitionsIsLinear) {
  const std::vector<Constraint> targets = EnvPartition(1024);
  std::vector<const Constraint*> all_false;
  for (const Constraint& c : targets) all_false.push_back(&c);
  ConstraintLimits limits;
  int64_t budget = 20000;
  limits.object_budget = &budget;
  const Constraint covered = MustCompile(Eq("env", "v1000"));
  EXPECT_THAT(FindParameterSet({&covered}, all_false, limits),
              IsOkAndHolds(std::nullopt));
  const Constraint uncovered = MustCompile(Eq("env", "v1024"));
  EXPECT_THAT(FindParameterSet({&uncovered}, all_false, limits),
              IsOkAndHolds(Optional(ParameterSet{{"env", "v1024"}})));
  const Constraint more_keys = MustCompile(And({Eq("env", "v3"), Eq("zone", "a")}));
  EXPECT_THAT(FindParameterSet({&more_keys}, all_false, limits), IsOkAndHolds(std::nullopt));
  EXPECT_GT(budget, 0);
}

// FindParameterSet.

TEST(FindParameterSetTest, EmptyQueryIsSatisfiedByEmptyParameterSet) {
  EXPECT_THAT(FindParameterSet({}, {}), IsOkAndHolds(Optional(ParameterSet{})));
}

TEST(FindParameterSetTest, ContradictionHasNoParameterSet) {
  const Constraint contradiction = MustCompile(And({Eq("env", "prod"), Not(Exists("env"))}));
  EXPECT_THAT(FindParameterSet({&contradiction}, {}), IsOkAndHolds(std::nullopt));
}

TEST(FindParameterSetTest, ConstraintAndItsNegationCannotBothHold) {
  const Constraint a = MustCompile(Or({Eq("env", "prod"), Exists("version")}));
  EXPECT_THAT(FindParameterSet({&a}, {&a}), IsOkAndHolds(std::nullopt));
}

TEST(FindParameterSetTest, AllFalseFindsParameterSetMatchingNothing) {
  const Constraint prod = MustCompile(Eq("env", "prod"));
  const Constraint any_env = MustCompile(Exists("env"));
  EXPECT_THAT(FindParameterSet({}, {&prod}), IsOkAndHolds(Optional(ParameterSet{})));
  EXPECT_THAT(FindParameterSet({}, {&any_env, &prod}), IsOkAndHolds(Optional(ParameterSet{})));
}

// Coverage query: the old variant must be covered by the new variants.
TEST(FindParameterSetTest, CoverageQueryFindsClientsLeftWithoutAVariant) {
  const Constraint old_variant = MustCompile(Or({Eq("env", "prod"), Eq("env", "test")}));
  const Constraint prod = MustCompile(Eq("env", "prod"));
  const Constraint test = MustCompile(Eq("env", "test"));
  absl::StatusOr<std::optional<ParameterSet>> uncovered = FindParameterSet({&old_variant}, {&prod});
  ASSERT_THAT(uncovered, IsOk());
  EXPECT_THAT(*uncovered, Optional(ParameterSet{{"env", "test"}}));
  EXPECT_THAT(FindParameterSet({&old_variant}, {&prod, &test}), IsOkAndHolds(std::nullopt));
}

TEST(FindParameterSetTest, RendersOtherValueDistinctFromMentionedValues) {
  const Constraint present = MustCompile(Exists("env"));
  const Constraint other = MustCompile(Eq("env", "other"));
  const Constraint other2 = MustCompile(Eq("env", "other-2"));
  EXPECT_THAT(FindParameterSet({&present}, {&other, &other2}),
              IsOkAndHolds(Optional(ParameterSet{{"env", "other-3"}})));
}

TEST(FindParameterSetTest, WitnessOmitsKeysThatDoNotMatter) {
  const Constraint prod = MustCompile(Or({Eq("env", "prod"), Eq("zone", "a")}));
  absl::StatusOr<std::optional<ParameterSet>> found = FindParameterSet({&prod}, {});
  ASSERT_THAT(found, IsOk());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(found->value().size(), 1u);
  EXPECT_TRUE(prod.Matches(**found));
}

TEST(FindParameterSetTest, FailsWithResourceExhaustedWhenBudgetIsSpent) {
  ConstraintLimits limits;
  limits.max_search_steps = 5;
  std::vector<Constraint> grid = Grid(4);
  std::vector<const Constraint*> all_false;
  for (const Constraint& c : grid) all_false.push_back(&c);
  const Constraint any = MustCompile(And({Exists("k0"), Exists("k1"), Exists("k2")}));
  EXPECT_THAT(FindParameterSet({&any}, all_false, limits),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_search_steps")));
}

// Randomized cross-check against brute force over small domains.

class RandomConstraints {
 public:
  explicit RandomConstraints(uint32_t seed) : rng_(seed) {}

  std::string Expression(int depth) {
    const int choice = Uniform(depth <= 0 ? 2 : 6);
    switch (choice) {
      case 0:
      case 1:
        return Uniform(4) == 0 ? Exists(Key()) : Eq(Key(), Value());
      case 2:
        return Not(Expression(depth - 1));
      case 3:
      case 4: {
        std::vector<std::string> operands;
        const int n = 1 + Uniform(3);
        for (int i = 0; i < n; ++i) operands.push_back(Expression(depth - 1));
        return choice == 3 ? And(operands) : Or(operands);
      }
      default:
        return Eq(Key(), Value());
    }
  }

  int Uniform(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::string Key() { return std::string(1, static_cast<char>('a' + Uniform(3))); }
  std::string Value() { return std::string(1, static_cast<char>('x' + Uniform(3))); }

  std::mt19937 rng_;
};

// Every parameter set over keys a, b, c with values x, y, z, an unmentioned
// value w, or absent.
std::vector<ParameterSet> AllParameterSets() {
  const std::vector<std::string> domain = {"", "x", "y", "z", "w"};
  std::vector<ParameterSet> all;
  for (const std::string& a : domain) {
    for (const std::string& b : domain) {
      for (const std::string& c : domain) {
        ParameterSet params;
        if (!a.empty()) params["a"] = a;
        if (!b.empty()) params["b"] = b;
        if (!c.empty()) params["c"] = c;
        all.push_back(params);
      }
    }
  }
  return all;
}

// Whether some parameter set in `all` matches every constraint of `all_true`
// and none of `all_false`; checks that FindParameterSet agrees (and that its
// witness holds). `round` labels failures.
bool ExpectFindAgreesWithBruteForce(const std::vector<const Constraint*>& all_true,
                                    const std::vector<const Constraint*>& all_false,
                                    const std::vector<ParameterSet>& all, int round) {
  auto satisfies = [&](const ParameterSet& params) {
    for (const Constraint* c : all_true) {
      if (!c->Matches(params)) return false;
    }
    for (const Constraint* c : all_false) {
      if (c->Matches(params)) return false;
    }
    return true;
  };
  bool expected = false;
  for (const ParameterSet& params : all) expected = expected || satisfies(params);
  absl::StatusOr<std::optional<ParameterSet>> found = FindParameterSet(all_true, all_false);
  EXPECT_THAT(found, IsOk());
  if (!found.ok()) return expected;
  EXPECT_EQ(found->has_value(), expected) << "round " << round;
  if (found->has_value()) {
    EXPECT_TRUE(satisfies(**found)) << "round " << round << ": " << ParameterSetToString(**found);
  }
  return expected;
}

// The overlapping pairs of `variants` and whether a gap exists, by brute
// force over `all`.
struct BruteForceReport {
  std::set<std::pair<size_t, size_t>> pairs;
  bool gap = false;
};
BruteForceReport BruteForceCheck(const std::vector<Constraint>& variants,
                                 const std::vector<ParameterSet>& all) {
  BruteForceReport out;
  for (const ParameterSet& params : all) {
    std::vector<size_t> matching;
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].Matches(params)) matching.push_back(i);
    }
    out.gap = out.gap || matching.empty();
    for (size_t i = 0; i < matching.size(); ++i) {
      for (size_t j = i + 1; j < matching.size(); ++j) out.pairs.emplace(matching[i], matching[j]);
    }
  }
  return out;
}

TEST(FindParameterSetTest, AgreesWithBruteForceOnRandomQueries) {
  RandomConstraints random(/*seed=*/20240611);
  const std::vector<ParameterSet> all = AllParameterSets();
  int satisfiable = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<Constraint> constraints;
    const int n_true = random.Uniform(3);
    const int n_false = random.Uniform(3);
    for (int i = 0; i < n_true + n_false; ++i) {
      constraints.push_back(MustCompile(random.Expression(3)));
    }
    std::vector<const Constraint*> all_true, all_false;
    for (int i = 0; i < n_true; ++i) all_true.push_back(&constraints[i]);
    for (int i = n_true; i < n_true + n_false; ++i) all_false.push_back(&constraints[i]);
    satisfiable += ExpectFindAgreesWithBruteForce(all_true, all_false, all, round);
  }
  // Both outcomes were exercised.
  EXPECT_GT(satisfiable, 200);
  EXPECT_LT(satisfiable, 1800);
}

TEST(CheckVariantSetTest, AgreesWithBruteForceOnRandomVariantSets) {
  RandomConstraints random(/*seed=*/7);
  const std::vector<ParameterSet> all = AllParameterSets();
  int with_overlaps = 0, with_gaps = 0;
  for (int round = 0; round < 1000; ++round) {
    const int n = 1 + random.Uniform(5);
    std::vector<Constraint> variants;
    for (int i = 0; i < n; ++i) variants.push_back(MustCompile(random.Expression(2)));

    const BruteForceReport expected = BruteForceCheck(variants, all);
    const std::set<std::pair<size_t, size_t>>& expected_pairs = expected.pairs;
    const bool expected_gap = expected.gap;

    const VariantSetReport report = MustCheck(variants);
    ASSERT_FALSE(report.overlaps_truncated);
    const std::vector<std::pair<size_t, size_t>> pairs = Pairs(report);
    const std::set<std::pair<size_t, size_t>> found_pairs(pairs.begin(), pairs.end());
    EXPECT_EQ(found_pairs, expected_pairs) << "round " << round;
    EXPECT_EQ(pairs.size(), expected_pairs.size()) << "duplicates in round " << round;
    EXPECT_EQ(report.gap.has_value(), expected_gap) << "round " << round;
    ExpectWitnessesHold(variants, report);
    with_overlaps += !expected_pairs.empty();
    with_gaps += expected_gap;
  }
  EXPECT_GT(with_overlaps, 100);
  EXPECT_GT(with_gaps, 100);
  EXPECT_LT(with_gaps, 1000);
}

// Random variant sets of the shapes the near-linear path decides: exact
// tuples over keys a and b, or value lists on key a with at most one negated.
class RandomSimple {
 public:
  explicit RandomSimple(uint32_t seed) : rng_(seed) {}

  std::vector<Constraint> VariantSet() {
    std::vector<Constraint> variants;
    const int n = 1 + Uniform(6);
    const bool tuples = Uniform(2) == 0;
    const bool two_keys = Uniform(2) == 0;
    bool negated = false;
    for (int i = 0; i < n; ++i) {
      if (tuples) {
        variants.push_back(MustCompile(two_keys ? And({Eq("a", Value()), Eq("b", Value())})
                                                : Eq("a", Value())));
        continue;
      }
      std::vector<std::string> values;
      const int m = 1 + Uniform(3);
      for (int j = 0; j < m; ++j) values.push_back(Eq("a", Value()));
      std::string text = m == 1 ? values[0] : Or(values);
      if (!negated && Uniform(3) == 0) {
        negated = true;
        text = Not(text);
      }
      variants.push_back(MustCompile(text));
    }
    return variants;
  }

  int Uniform(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::string Value() { return std::string(1, static_cast<char>('x' + Uniform(3))); }

  std::mt19937 rng_;
};

// Random sets of the shapes the near-linear path decides, against brute force.
TEST(CheckVariantSetTest, SimpleShapesAgreeWithBruteForce) {
  RandomSimple random(/*seed=*/11);
  const std::vector<ParameterSet> all = AllParameterSets();
  for (int round = 0; round < 2000; ++round) {
    const std::vector<Constraint> variants = random.VariantSet();
    const BruteForceReport expected = BruteForceCheck(variants, all);
    const std::set<std::pair<size_t, size_t>>& expected_pairs = expected.pairs;
    const bool expected_gap = expected.gap;
    ConstraintLimits limits;
    limits.max_reported_overlaps = 100;
    const VariantSetReport report = MustCheck(variants, limits);
    const std::vector<std::pair<size_t, size_t>> pairs = Pairs(report);
    const std::set<std::pair<size_t, size_t>> found_pairs(pairs.begin(), pairs.end());
    EXPECT_EQ(found_pairs, expected_pairs) << "round " << round;
    EXPECT_EQ(pairs.size(), expected_pairs.size()) << "round " << round;
    EXPECT_TRUE(std::is_sorted(pairs.begin(), pairs.end())) << "round " << round;
    EXPECT_EQ(report.gap.has_value(), expected_gap) << "round " << round;
    ExpectWitnessesHold(variants, report);

    // And coverage queries over the same constraints.
    std::vector<const Constraint*> all_true, all_false;
    for (size_t i = 0; i < variants.size(); ++i) {
      (random.Uniform(3) == 0 ? all_true : all_false).push_back(&variants[i]);
    }
    ExpectFindAgreesWithBruteForce(all_true, all_false, all, round);
  }
}

}  // namespace
}  // namespace facet::xds
