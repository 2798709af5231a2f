// GRPCRoute matches as xDS RouteMatches (design §2.2), and the precedence
// order of the xDS routes on one parent.
#include "controller/gateway/translate/route_matches.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/gateway/translate/translate_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller::gateway {
namespace {

using ::facet::controller::gateway::testing::Json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

RouteMatch Method(MatchType type, std::string service, std::string method) {
  RouteMatch match;
  match.method = MethodMatch{type, std::move(service), std::move(method)};
  match.field = "spec.rules[0].matches[0]";
  return match;
}

RouteMatch Headers(std::vector<HeaderMatch> headers) {
  RouteMatch match;
  match.headers = std::move(headers);
  match.field = "spec.rules[0].matches[0]";
  return match;
}

nlohmann::json MatchJson(const RouteMatch& match) { return Json(TranslateMatch(match).match); }

constexpr MatchType kExact = MatchType::kExact;
constexpr MatchType kRegex = MatchType::kRegularExpression;

TEST(RouteMatchesTest, ExactServiceAndMethodBecomesPath) {
  EXPECT_EQ(MatchJson(Method(kExact, "facet.test.Echo", "Echo")),
            nlohmann::json::parse(R"({"path": "/facet.test.Echo/Echo"})"));
  // One leading "." (a fully qualified name) is not part of the path.
  EXPECT_EQ(MatchJson(Method(kExact, ".facet.test.Echo", "Echo")),
            nlohmann::json::parse(R"({"path": "/facet.test.Echo/Echo"})"));
}

TEST(RouteMatchesTest, ExactServiceOnlyBecomesPrefix) {
  EXPECT_EQ(MatchJson(Method(kExact, "facet.test.Echo", "")),
            nlohmann::json::parse(R"({"prefix": "/facet.test.Echo/"})"));
}

TEST(RouteMatchesTest, MethodOnlyBecomesQuotedRegex) {
  EXPECT_EQ(MatchJson(Method(kExact, "", "Echo")),
            nlohmann::json::parse(R"({"safe_regex": {"regex": "/[^/]+/Echo"}})"));
}

TEST(RouteMatchesTest, UserRegexIsWrapped) {
  EXPECT_EQ(
      MatchJson(Method(kRegex, "facet\\.test\\.Re[a-z]+", "Get|List")),
      nlohmann::json::parse(
          R"json({"safe_regex": {"regex": "/(?:facet\\.test\\.Re[a-z]+)/(?:Get|List)"}})json"));
  EXPECT_EQ(MatchJson(Method(kRegex, "a|b", "")),
            nlohmann::json::parse(R"json({"safe_regex": {"regex": "/(?:a|b)/[^/]+"}})json"));
  EXPECT_EQ(MatchJson(Method(kRegex, "", "Get|List")),
            nlohmann::json::parse(R"json({"safe_regex": {"regex": "/[^/]+/(?:Get|List)"}})json"));
  EXPECT_EQ(MatchJson(Headers({{kRegex, "x-variant", "red|pink"}})),
            nlohmann::json::parse(R"json({"prefix": "", "headers": [
              {"name": "x-variant", "safe_regex_match": {"regex": "(?:red|pink)"}}]})json"));
}

TEST(RouteMatchesTest, RegexThatIsNotRe2OnceWrappedIsUnsupported) {
  // "\Q" quotes to the end of the text, so the wrapper's ")" is quoted too.
  const TranslatedMatch match = TranslateMatch(Method(kRegex, "", "Get\\Q"));
  ASSERT_EQ(match.problems.size(), 1u);
  EXPECT_EQ(match.problems[0].field, "spec.rules[0].matches[0].method.method");
  EXPECT_THAT(match.problems[0].message, HasSubstr("is not RE2: missing )"));
}

TEST(RouteMatchesTest, NoMethodMatchesEveryPath) {
  RouteMatch match;
  const TranslatedMatch everything = TranslateMatch(match);
  EXPECT_EQ(Json(everything.match), nlohmann::json::parse(R"json({"prefix": ""})json"));
  EXPECT_TRUE(everything.matches_all);
  EXPECT_FALSE(TranslateMatch(Headers({{kExact, "x", "1"}})).matches_all);
  EXPECT_FALSE(TranslateMatch(Method(kExact, "a.B", "")).matches_all);
  EXPECT_EQ(Json(MatchEverything().match), nlohmann::json::parse(R"json({"prefix": ""})json"));
  EXPECT_TRUE(MatchEverything().matches_all);
}

TEST(RouteMatchesTest, EmitsExactMatchNotStringMatch) {
  const nlohmann::json match =
      MatchJson(Headers({{kExact, "x-variant", "blue"}, {kRegex, "x-tier", "gold|silver"}}));
  EXPECT_EQ(match, nlohmann::json::parse(R"json({"prefix": "", "headers": [
    {"name": "x-variant", "exact_match": "blue"},
    {"name": "x-tier", "safe_regex_match": {"regex": "(?:gold|silver)"}}]})json"));
  EXPECT_EQ(match.dump().find("string_match"), std::string::npos);
  // A value that looks like a number stays a string.
  EXPECT_TRUE(MatchJson(Headers({{kExact, "x-n", "42"}}))["headers"][0]["exact_match"].is_string());
}

TEST(RouteMatchesTest, HeaderNamesLowercasedFirstWins) {
  const TranslatedMatch match = TranslateMatch(Headers(
      {{kExact, "X-Variant", "blue"}, {kExact, "x-variant", "green"}, {kExact, "X-B", "1"}}));
  EXPECT_EQ(Json(match.match), nlohmann::json::parse(R"({"prefix": "", "headers": [
    {"name": "x-variant", "exact_match": "blue"}, {"name": "x-b", "exact_match": "1"}]})"));
  EXPECT_EQ(match.precedence.header_count, 2u);
  EXPECT_THAT(match.problems, IsEmpty());
}

TEST(RouteMatchesTest, BinHeaderIsUnsupported) {
  const TranslatedMatch match = TranslateMatch(Headers({{kExact, "X-Trace-Bin", "AAA="}}));
  ASSERT_EQ(match.problems.size(), 1u);
  EXPECT_EQ(match.problems[0].field, "spec.rules[0].matches[0].headers[0].name");
  EXPECT_THAT(match.problems[0].message, HasSubstr("binary header"));
}

TEST(RouteMatchesTest, ContentTypeIsServedWithANote) {
  const TranslatedMatch match =
      TranslateMatch(Headers({{kExact, "Content-Type", "application/grpc+proto"}}));
  EXPECT_THAT(match.problems, IsEmpty());
  ASSERT_EQ(match.notes.size(), 1u);
  EXPECT_THAT(match.notes[0].message, HasSubstr("application/grpc"));
}

// Sorts `keys` by Precedes and returns their `route/rule/match` labels.
std::vector<std::string> Sorted(std::vector<Precedence> keys) {
  std::stable_sort(keys.begin(), keys.end(), Precedes);
  std::vector<std::string> out;
  for (const Precedence& key : keys) {
    out.push_back(absl::StrCat(key.route, "/", key.rule, "/", key.match));
  }
  return out;
}

// `created`: RFC 3339, or "" for a route without a creation timestamp.
Precedence Key(size_t service, size_t method, size_t headers, const std::string& created,
               std::string route, size_t rule = 0, size_t match = 0) {
  absl::Time time = absl::InfiniteFuture();
  std::string error;
  if (!created.empty()) {
    EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, created, &time, &error)) << error;
  }
  return {service, method, headers, time, std::move(route), rule, match};
}

TEST(RouteMatchesTest, LongerServiceWins) {
  EXPECT_THAT(Sorted({Key(5, 9, 3, "", "a"), Key(6, 0, 0, "", "b")}),
              ElementsAre("b/0/0", "a/0/0"));
}

TEST(RouteMatchesTest, LongerMethodWinsAmongEqualServices) {
  EXPECT_THAT(Sorted({Key(5, 3, 3, "", "a"), Key(5, 4, 0, "", "b")}),
              ElementsAre("b/0/0", "a/0/0"));
}

TEST(RouteMatchesTest, MoreHeadersWin) {
  EXPECT_THAT(Sorted({Key(5, 4, 1, "", "a"), Key(5, 4, 2, "", "b")}),
              ElementsAre("b/0/0", "a/0/0"));
}

TEST(RouteMatchesTest, OlderRouteWinsTie) {
  EXPECT_THAT(Sorted({Key(5, 4, 1, "2026-01-02T00:00:00Z", "a"),
                      Key(5, 4, 1, "2026-01-01T00:00:00Z", "b")}),
              ElementsAre("b/0/0", "a/0/0"));
}

// Timestamps compare as times, not as text: +02:00 one hour past midnight
// is before midnight UTC.
TEST(RouteMatchesTest, TimestampsCompareAsTimesWhateverTheirOffset) {
  EXPECT_THAT(Sorted({Key(5, 4, 1, "2026-01-01T00:00:00Z", "a"),
                      Key(5, 4, 1, "2026-01-01T01:00:00+02:00", "b")}),
              ElementsAre("b/0/0", "a/0/0"));
}

TEST(RouteMatchesTest, RouteWithoutTimestampSortsAfterThoseWithOne) {
  EXPECT_THAT(Sorted({Key(5, 4, 1, "", "a"), Key(5, 4, 1, "2026-01-01T00:00:00Z", "b")}),
              ElementsAre("b/0/0", "a/0/0"));
}

TEST(RouteMatchesTest, NamespaceNameBreaksTimestampTie) {
  EXPECT_THAT(Sorted({Key(5, 4, 1, "2026-01-01T00:00:00Z", "demo/b"),
                      Key(5, 4, 1, "2026-01-01T00:00:00Z", "demo/a")}),
              ElementsAre("demo/a/0/0", "demo/b/0/0"));
}

TEST(RouteMatchesTest, FirstRuleWinsWithinRoute) {
  EXPECT_THAT(Sorted({Key(5, 4, 1, "", "a", 1, 0), Key(5, 4, 1, "", "a", 0, 1),
                      Key(5, 4, 1, "", "a", 0, 0)}),
              ElementsAre("a/0/0", "a/0/1", "a/1/0"));
}

TEST(RouteMatchesTest, MatchTypeIsNoCriterion) {
  // A regular expression counts its characters as written, like an exact
  // name: the longer text wins whatever the types.
  const TranslatedMatch exact = TranslateMatch(Method(kExact, "facet.test.Echo", ""));
  const TranslatedMatch regex = TranslateMatch(Method(kRegex, "facet.test.Echo.*", ""));
  EXPECT_EQ(exact.precedence.service_length, 15u);
  EXPECT_EQ(regex.precedence.service_length, 17u);
  Precedence a = exact.precedence;
  a.route = "exact";
  Precedence b = regex.precedence;
  b.route = "regex";
  EXPECT_THAT(Sorted({a, b}), ElementsAre("regex/0/0", "exact/0/0"));
}

}  // namespace
}  // namespace facet::controller::gateway
