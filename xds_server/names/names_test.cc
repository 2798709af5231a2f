#include "xds_server/names/names.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr char kListener[] = "envoy.config.listener.v3.Listener";

MATCHER_P(IsOkAndHolds, expected,
          std::string("is OK and holds ") + ::testing::PrintToString(expected)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  *result_listener << "value is " << ::testing::PrintToString(*arg);
  return *arg == expected;
}

// Asserts `name` is rejected with a message that quotes it and contains `reason`.
void ExpectRejected(absl::string_view name, absl::string_view reason) {
  SCOPED_TRACE(name);
  EXPECT_THAT(ParseXdstpName(name),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(std::string(name.substr(0, 100))), HasSubstr(reason))));
  EXPECT_THAT(NormalizeResourceName(name),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(reason)));
}

TEST(IsXdstpNameTest, RecognisesTheSchemeCaseSensitively) {
  EXPECT_TRUE(IsXdstpName("xdstp://a/b.c/d"));
  EXPECT_TRUE(IsXdstpName("xdstp:"));
  EXPECT_FALSE(IsXdstpName("listener_0"));
  EXPECT_FALSE(IsXdstpName("XDSTP://a/b.c/d"));
  EXPECT_FALSE(IsXdstpName("xdstp"));
  EXPECT_FALSE(IsXdstpName(""));
}

TEST(ParseXdstpNameTest, ParsesA47ClientListenerName) {
  constexpr char kName[] =
      "xdstp://xds.authority.com/envoy.config.listener.v3.Listener/grpc/client/"
      "server.example.com?project_id=1234";
  absl::StatusOr<XdstpName> name = ParseXdstpName(kName);
  ASSERT_THAT(name, IsOk());
  EXPECT_EQ(name->authority, "xds.authority.com");
  EXPECT_EQ(name->type, kListener);
  EXPECT_EQ(name->id, "grpc/client/server.example.com");
  EXPECT_THAT(name->context_params, ElementsAre(Pair("project_id", "1234")));
  EXPECT_EQ(name->ToString(), kName);
}

TEST(NormalizeResourceNameTest, KeepsA47ServerListenerNameWithColonUnescaped) {
  constexpr char kName[] =
      "xdstp://xds.authority.com/envoy.config.listener.v3.Listener/grpc/server/"
      "0.0.0.0:8080?project_id=1234";
  EXPECT_THAT(NormalizeResourceName(kName), IsOkAndHolds(kName));
}

TEST(NormalizeResourceNameTest, SortsTp1ContextParamsByKey) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://some.control.plane/"
                                   "envoy.config.route.v3.RouteConfiguration/foo/bar"
                                   "?shard_id=1234&direction=inbound"),
            "xdstp://some.control.plane/envoy.config.route.v3.RouteConfiguration/foo/bar"
            "?direction=inbound&shard_id=1234");
}

TEST(NormalizeResourceNameTest, SortsKeysBytewiseNotAsKeyValueStrings) {
  // "a.b=1" < "a=2" as strings, but key "a" < "a.b"; gRPC C-core sorts keys.
  EXPECT_EQ(*NormalizeResourceName("xdstp://x/a.B/c?a.b=1&a=2"), "xdstp://x/a.B/c?a=2&a.b=1");
}

TEST(ParseXdstpNameTest, DuplicateContextParamLastValueWins) {
  absl::StatusOr<XdstpName> name = ParseXdstpName("xdstp://x/a.B/c?b=1&a=2&b=3&a=4");
  ASSERT_THAT(name, IsOk());
  EXPECT_THAT(name->context_params, ElementsAre(Pair("a", "4"), Pair("b", "3")));
  EXPECT_EQ(name->ToString(), "xdstp://x/a.B/c?a=4&b=3");
}

TEST(ParseXdstpNameTest, ParamWithoutEqualsHasEmptyValueAndIsWrittenWithEquals) {
  absl::StatusOr<XdstpName> name = ParseXdstpName("xdstp://x/a.B/c?flag&k=");
  ASSERT_THAT(name, IsOk());
  EXPECT_THAT(name->context_params, ElementsAre(Pair("flag", ""), Pair("k", "")));
  EXPECT_EQ(name->ToString(), "xdstp://x/a.B/c?flag=&k=");
}

TEST(ParseXdstpNameTest, SplitsParamAtFirstEquals) {
  absl::StatusOr<XdstpName> name = ParseXdstpName("xdstp://x/a.B/c?k=v=w");
  ASSERT_THAT(name, IsOk());
  EXPECT_THAT(name->context_params, ElementsAre(Pair("k", "v=w")));
  EXPECT_EQ(name->ToString(), "xdstp://x/a.B/c?k=v%3Dw");
}

TEST(ParseXdstpNameTest, DecodesPercentEscapesInEveryComponent) {
  absl::StatusOr<XdstpName> name =
      ParseXdstpName("xdstp://auth%2Fority/a.B/my%20id%3F%25%C3%BC?k%26=v%3D%20");
  ASSERT_THAT(name, IsOk());
  EXPECT_EQ(name->authority, "auth/ority");
  EXPECT_EQ(name->id, "my id?%\xC3\xBC");
  EXPECT_THAT(name->context_params, ElementsAre(Pair("k&", "v= ")));
}

TEST(ParseXdstpNameTest, EncodedSlashInPathSeparatesSegmentsLikeGrpc) {
  absl::StatusOr<XdstpName> name = ParseXdstpName("xdstp://x/a.B%2Fc%2Fd");
  ASSERT_THAT(name, IsOk());
  EXPECT_EQ(name->type, "a.B");
  EXPECT_EQ(name->id, "c/d");
  EXPECT_EQ(name->ToString(), "xdstp://x/a.B/c/d");
}

TEST(ParseXdstpNameTest, IdKeepsEmptySegmentsAndLeadingSlash) {
  absl::StatusOr<XdstpName> name = ParseXdstpName("xdstp://x/a.B//c//d/");
  ASSERT_THAT(name, IsOk());
  EXPECT_EQ(name->id, "/c//d/");
  EXPECT_EQ(name->ToString(), "xdstp://x/a.B//c//d/");
}

TEST(NormalizeResourceNameTest, EncodesSpacesPercentUnicodeAndQuestionMarkInId) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://x/a.B/100%25%20sure%3F/\xC3\xBC"),
            "xdstp://x/a.B/100%25%20sure%3F/%C3%BC");
}

TEST(NormalizeResourceNameTest, UppercasesHexAndDecodesUnnecessaryEscapes) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://%61uth/a.B/%7e%2a%3a%40%c3%bc?%6b=%2f%3f"),
            "xdstp://auth/a.B/~*:@%C3%BC?k=/?");
}

TEST(NormalizeResourceNameTest, EscapesBytesThatShouldHaveBeenEscaped) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://x/a.B/foo bar?k=a b"),
            "xdstp://x/a.B/foo%20bar?k=a%20b");
}

TEST(NormalizeResourceNameTest, AuthorityKeepsColonBracketsAndAt) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://u@[::1]:443/a.B/c"), "xdstp://u@[::1]:443/a.B/c");
}

TEST(NormalizeResourceNameTest, QueryEscapesAmpersandEqualsAndBrackets) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://x/a.B/c?k=%26%3D[]"), "xdstp://x/a.B/c?k=%26%3D%5B%5D");
}

// Every byte, checked against the character sets gRPC C-core's URI::ToString
// leaves unescaped (src/core/lib/uri/uri_parser.cc).
TEST(XdstpNameToStringTest, EscapesExactlyTheBytesGrpcEscapes) {
  const std::string unreserved =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
  const std::string authority_chars = unreserved + "!$&'()*+,;=" + ":[]@";
  const std::string path_chars = unreserved + "!$&'()*+,;=" + ":@/";
  const std::string query_chars = unreserved + "!$'()*+," + ";" + ":@/?";
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    const std::string text(1, c);
    const std::string escaped =
        absl::StrCat("%", absl::AsciiStrToUpper(absl::StrCat(absl::Hex(b, absl::kZeroPad2))));
    // The trailing "i" keeps a lone '*' from being a glob.
    XdstpName name{
        .authority = text, .type = "a.B", .id = text + "i", .context_params = {{text, text}}};
    const auto expect = [&](const std::string& allowed) {
      return allowed.find(c) != std::string::npos ? text : escaped;
    };
    EXPECT_EQ(name.ToString(),
              absl::StrCat("xdstp://", expect(authority_chars), "/a.B/", expect(path_chars), "i?",
                           expect(query_chars), "=", expect(query_chars)))
        << "byte " << b;
    absl::StatusOr<XdstpName> reparsed = ParseXdstpName(name.ToString());
    if (b < 0x20 || b >= 0x7F) {
      // Escaped as gRPC does, but a control character or a lone byte that
      // is not UTF-8 is not a name Facet accepts.
      EXPECT_THAT(reparsed, StatusIs(absl::StatusCode::kInvalidArgument)) << "byte " << b;
      continue;
    }
    ASSERT_THAT(reparsed, IsOk()) << "byte " << b;
    EXPECT_EQ(*reparsed, name) << "byte " << b;
  }
}

TEST(XdstpNameToStringTest, RoundTripsThroughParse) {
  const std::vector<XdstpName> names = {
      {.authority = "", .type = kListener, .id = "x", .context_params = {}},
      {.authority = "a b/c?d#e%f", .type = "a.B", .id = "p?q#r%s t/u&v=w", .context_params = {}},
      {.authority = "\xE2\x98\x83",
       .type = "a.B",
       .id = "\xF0\x9F\x98\x80/\xC3\xBC",
       .context_params = {{"\xE2\x82\xAC", "\xE2\x82\xAC"}}},
      {.authority = "x",
       .type = "a.B",
       .id = "c",
       .context_params = {{"a&b", "c=d"}, {"k", ""}, {"z z", "%25 #"}}},
  };
  for (const XdstpName& name : names) {
    SCOPED_TRACE(name.ToString());
    absl::StatusOr<XdstpName> reparsed = ParseXdstpName(name.ToString());
    ASSERT_THAT(reparsed, IsOk());
    EXPECT_EQ(*reparsed, name);
  }
}

TEST(ParseXdstpNameTest, AcceptsEmptyAuthority) {
  absl::StatusOr<XdstpName> name = ParseXdstpName("xdstp:///envoy.config.listener.v3.Listener/foo");
  ASSERT_THAT(name, IsOk());
  EXPECT_EQ(name->authority, "");
  EXPECT_EQ(name->id, "foo");
  EXPECT_EQ(name->ToString(), "xdstp:///envoy.config.listener.v3.Listener/foo");
}

TEST(NormalizeResourceNameTest, AcceptsGrpcCoreSpellingOfEmptyAuthority) {
  // gRPC C-core's URI::ToString omits "//" when the authority is empty.
  EXPECT_EQ(*NormalizeResourceName("xdstp:/envoy.config.listener.v3.Listener/foo?b=1&a=2"),
            "xdstp:///envoy.config.listener.v3.Listener/foo?a=2&b=1");
}

TEST(ParseXdstpNameTest, RejectsNonXdstpName) {
  EXPECT_THAT(ParseXdstpName("listener_0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("listener_0"), HasSubstr("not an xdstp name"))));
}

TEST(ParseXdstpNameTest, RejectsMissingAuthoritySection) {
  ExpectRejected("xdstp:", "no authority section");
  ExpectRejected("xdstp:envoy.config.listener.v3.Listener/foo", "no authority section");
}

TEST(ParseXdstpNameTest, RejectsMissingType) {
  ExpectRejected("xdstp://auth", "no resource type");
  ExpectRejected("xdstp://auth/", "no resource type");
  ExpectRejected("xdstp://auth?k=v", "no resource type");
  ExpectRejected("xdstp://auth//foo", "no resource type");
}

TEST(ParseXdstpNameTest, RejectsMissingId) {
  ExpectRejected("xdstp://auth/envoy.config.listener.v3.Listener", "no resource id");
  ExpectRejected("xdstp://auth/envoy.config.listener.v3.Listener/", "no resource id");
  ExpectRejected("xdstp://auth/envoy.config.listener.v3.Listener?k=v", "no resource id");
}

TEST(ParseXdstpNameTest, RejectsTypeWithoutDot) {
  ExpectRejected("xdstp://auth/Listener/foo", "not a fully-qualified protobuf message name");
}

TEST(ParseXdstpNameTest, RejectsEmptyContextParamKey) {
  ExpectRejected("xdstp://x/a.B/c?=v", "empty key");
  ExpectRejected("xdstp://x/a.B/c?a=1&&b=2", "empty key");
  ExpectRejected("xdstp://x/a.B/c?a=1&", "empty key");
}

TEST(ParseXdstpNameTest, RejectsEmptyQuery) {
  ExpectRejected("xdstp://x/a.B/c?", "no context parameters after it");
}

TEST(ParseXdstpNameTest, RejectsInvalidPercentEscapes) {
  ExpectRejected("xdstp://x/a.B/c%zz", "invalid percent escape \"%zz\" in the path");
  ExpectRejected("xdstp://x/a.B/c%2", "invalid percent escape \"%2\" in the path");
  ExpectRejected("xdstp://x/a.B/c%", "invalid percent escape \"%\" in the path");
  ExpectRejected("xdstp://x%G0/a.B/c", "in the authority");
  ExpectRejected("xdstp://x/a.B/c?k%=v", "in the context parameter key");
  ExpectRejected("xdstp://x/a.B/c?k=100%", "in the context parameter value");
}

TEST(ParseXdstpNameTest, RejectsProcessingDirectives) {
  ExpectRejected("xdstp://x/envoy.config.listener.v3.ListenerCollection/c#entry=foo",
                 "processing directives");
  ExpectRejected("xdstp://x/a.B/c?k=v#alt=xdstp://y/a.B/c", "processing directives");
  ExpectRejected("xdstp://x#/a.B/c", "processing directives");
}

TEST(ParseXdstpNameTest, RejectsGlobCollections) {
  ExpectRejected("xdstp://x/envoy.config.listener.v3.Listener/foo/*",
                 "glob collections are not supported");
  ExpectRejected("xdstp://x/envoy.config.listener.v3.Listener/*",
                 "glob collections are not supported");
  ExpectRejected("xdstp://x/envoy.config.listener.v3.Listener/foo/*?k=v",
                 "glob collections are not supported");
  ExpectRejected("xdstp://x/envoy.config.listener.v3.Listener/foo/%2A",
                 "glob collections are not supported");
}

TEST(ParseXdstpNameTest, AcceptsStarThatIsNotTheLastSegment) {
  EXPECT_EQ(*NormalizeResourceName("xdstp://x/a.B/*/c"), "xdstp://x/a.B/*/c");
  EXPECT_EQ(*NormalizeResourceName("xdstp://x/a.B/c*"), "xdstp://x/a.B/c*");
}

TEST(ParseXdstpNameTest, RejectsOverLengthName) {
  const std::string prefix = "xdstp://x/a.B/";
  const std::string at_limit = prefix + std::string(kMaxResourceNameLength - prefix.size(), 'i');
  EXPECT_THAT(NormalizeResourceName(at_limit), IsOkAndHolds(at_limit));
  EXPECT_THAT(ParseXdstpName(at_limit + "i"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("2049 bytes"), HasSubstr("limit is 2048 bytes"))));
}

TEST(NormalizeResourceNameTest, RejectsNameThatGrowsPastLimitWhenEncoded) {
  const std::string prefix = "xdstp://x/a.B/";
  const std::string name = prefix + std::string(kMaxResourceNameLength - prefix.size(), ' ');
  EXPECT_THAT(NormalizeResourceName(name),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("percent-encodes to")));
}

TEST(NormalizeResourceNameTest, PassesOldStyleNamesThroughUnchanged) {
  for (absl::string_view name : {"listener_0", "outbound|80||foo.default.svc.cluster.local", "*",
                                 "a b?c#d%zz", "XDSTP://auth/a.B/c?b=1&a=2", "xdstp"}) {
    EXPECT_THAT(NormalizeResourceName(name), IsOkAndHolds(std::string(name)));
  }
}

TEST(NormalizeResourceNameTest, RejectsControlCharactersAndInvalidUtf8) {
  using namespace std::string_literals;
  for (const std::string& name : {"a\0b"s, "line\n"s, "del\x7f"s, "nel\xC2\x85"s, "\xFF"s,
                                  "overlong\xC0\xAF"s, "surrogate\xED\xA0\x80"s, "cut\xE2\x82"s,
                                  "big\xF4\x90\x80\x80"s}) {
    SCOPED_TRACE(absl::CHexEscape(name));
    EXPECT_THAT(NormalizeResourceName(name),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AnyOf(HasSubstr("control characters"), HasSubstr("not valid UTF-8"))));
  }
  for (const std::string& name : {"\xC3\xBC"s, "\xE2\x82\xAC"s, "\xF0\x9F\x98\x80"s, "nbsp\xC2\xA0"s}) {
    EXPECT_THAT(NormalizeResourceName(name), IsOkAndHolds(name));
  }
}

TEST(ParseXdstpNameTest, RejectsDecodedControlCharactersAndInvalidUtf8) {
  EXPECT_THAT(ParseXdstpName("xdstp://x/a.B/c%00d"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("resource id"), HasSubstr("control characters"))));
  EXPECT_THAT(ParseXdstpName("xdstp://x/a.B/c%FF"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid UTF-8")));
  EXPECT_THAT(ParseXdstpName("xdstp://x%0A/a.B/c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the authority")));
  EXPECT_THAT(ParseXdstpName("xdstp://x/a.B/c?k=%0D"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("context parameter \"k\""), HasSubstr("control"))));
  EXPECT_THAT(ParseXdstpName("xdstp://x/a.B/c?%C0%AF=v"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("context parameter key"), HasSubstr("UTF-8"))));
  EXPECT_THAT(NormalizeResourceName("xdstp://x/a.B/c\x01"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("control characters")));
}

TEST(NormalizeResourceNameTest, RejectsEmptyName) {
  EXPECT_THAT(NormalizeResourceName(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
}

TEST(NormalizeResourceNameTest, RejectsOverLengthOldStyleName) {
  const std::string at_limit(kMaxResourceNameLength, 'n');
  EXPECT_THAT(NormalizeResourceName(at_limit), IsOkAndHolds(at_limit));
  EXPECT_THAT(NormalizeResourceName(at_limit + "n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("(truncated)"), HasSubstr("is 2049 bytes"))));
}

TEST(NormalizeResourceNameTest, IsIdempotent) {
  for (absl::string_view name : {
           "listener_0",
           "xdstp://xds.authority.com/envoy.config.listener.v3.Listener/grpc/client/"
           "server.example.com?project_id=1234",
           "xdstp://some.control.plane/envoy.config.route.v3.RouteConfiguration/foo/bar"
           "?shard_id=1234&direction=inbound",
           "xdstp:/envoy.config.listener.v3.Listener/foo",
           "xdstp://%61uth%2f/a.B/%7e x%3F\xC3\xBC?b=%26&a=1&b=2&flag",
           "xdstp://u@[::1]:443/a.B/c%2Fd?k=%3D?/",
       }) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::string> once = NormalizeResourceName(name);
    ASSERT_THAT(once, IsOk());
    EXPECT_THAT(NormalizeResourceName(*once), IsOkAndHolds(*once));
  }
}

TEST(BuildXdstpNameTest, BuildsA47ClientListenerName) {
  EXPECT_THAT(BuildXdstpName("xds.authority.com", kListener, "grpc/client/server.example.com",
                             {{"project_id", "1234"}}),
              IsOkAndHolds("xdstp://xds.authority.com/envoy.config.listener.v3.Listener/grpc/"
                           "client/server.example.com?project_id=1234"));
}

TEST(BuildXdstpNameTest, SortsContextParamsAndMatchesNormalize) {
  absl::StatusOr<std::string> built =
      BuildXdstpName("some.control.plane", "envoy.config.route.v3.RouteConfiguration", "foo/bar",
                     {{"shard_id", "1234"}, {"direction", "inbound"}});
  ASSERT_THAT(built, IsOk());
  EXPECT_EQ(*built,
            "xdstp://some.control.plane/envoy.config.route.v3.RouteConfiguration/foo/bar"
            "?direction=inbound&shard_id=1234");
  EXPECT_THAT(NormalizeResourceName(*built), IsOkAndHolds(*built));
}

TEST(BuildXdstpNameTest, EncodesDecodedInput) {
  absl::StatusOr<std::string> built =
      BuildXdstpName("h\xC3\xA9.example:8080", "a.B", "100% sure?/\xC3\xBC", {{"k&", "v=1 2"}});
  ASSERT_THAT(built, IsOk());
  EXPECT_EQ(*built, "xdstp://h%C3%A9.example:8080/a.B/100%25%20sure%3F/%C3%BC?k%26=v%3D1%202");
  absl::StatusOr<XdstpName> parsed = ParseXdstpName(*built);
  ASSERT_THAT(parsed, IsOk());
  EXPECT_EQ(parsed->authority, "h\xC3\xA9.example:8080");
  EXPECT_EQ(parsed->id, "100% sure?/\xC3\xBC");
  EXPECT_THAT(parsed->context_params, ElementsAre(Pair("k&", "v=1 2")));
}

TEST(BuildXdstpNameTest, StripsTypeUrlPrefix) {
  EXPECT_THAT(BuildXdstpName("x", "type.googleapis.com/envoy.config.cluster.v3.Cluster", "c", {}),
              IsOkAndHolds("xdstp://x/envoy.config.cluster.v3.Cluster/c"));
}

TEST(BuildXdstpNameTest, RejectsBadAuthority) {
  EXPECT_THAT(BuildXdstpName("", kListener, "c", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("authority \"\" is empty")));
  for (absl::string_view authority :
       {"xdstp://x", "x/y", "x?y", "x#y", "user@x", "x%2Fy", "x y", "x\n"}) {
    SCOPED_TRACE(authority);
    EXPECT_THAT(BuildXdstpName(authority, kListener, "c", {}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("authority")));
  }
}

TEST(BuildXdstpNameTest, RejectsBadType) {
  for (absl::string_view type : {"", "Listener", "envoy..Listener", ".a", "a.", "a.1b", "a/b.C",
                                 "a.B/c", "type.googleapis.com/", "a.B c"}) {
    SCOPED_TRACE(type);
    EXPECT_THAT(BuildXdstpName("x", type, "c", {}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("not a fully-qualified protobuf message name")));
  }
}

TEST(BuildXdstpNameTest, RejectsBadId) {
  EXPECT_THAT(BuildXdstpName("x", kListener, "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("id \"\" is empty")));
  EXPECT_THAT(BuildXdstpName("x", kListener, "foo/*", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("glob collections are not supported")));
  EXPECT_THAT(BuildXdstpName("x", kListener, "*", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("glob")));
  EXPECT_THAT(BuildXdstpName("x", kListener, "foo\n", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("foo\\n"), HasSubstr("control characters"))));
}

TEST(BuildXdstpNameTest, RejectsBadContextParams) {
  EXPECT_THAT(BuildXdstpName("x", kListener, "c", {{"", "v"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("context parameter key \"\" is empty")));
  EXPECT_THAT(BuildXdstpName("x", kListener, "c", {{"k\t", "v"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("control characters")));
  EXPECT_THAT(BuildXdstpName("x", kListener, "c", {{"k", "v\r\n"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("context parameter \"k\""), HasSubstr("control"))));
}

TEST(BuildXdstpNameTest, RejectsInvalidUtf8) {
  EXPECT_THAT(BuildXdstpName("x", kListener, "c\xFF", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("id"), HasSubstr("not valid UTF-8"))));
  EXPECT_THAT(BuildXdstpName("\xC3", kListener, "c", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("authority"), HasSubstr("not valid UTF-8"))));
  EXPECT_THAT(BuildXdstpName("x", kListener, "c", {{"k", "\xC2\x9B"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("control characters")));
  EXPECT_THAT(BuildXdstpName("x", kListener, "\xC3\xBC", {}), IsOk());
}

TEST(BuildXdstpNameTest, AcceptsEmptyContextParamValue) {
  EXPECT_THAT(BuildXdstpName("x", "a.B", "c", {{"k", ""}}), IsOkAndHolds("xdstp://x/a.B/c?k="));
}

TEST(BuildXdstpNameTest, RejectsOverLengthResult) {
  EXPECT_THAT(BuildXdstpName("x", "a.B", std::string(kMaxResourceNameLength, 'i'), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit is 2048 bytes")));
  // Each space becomes three bytes.
  EXPECT_THAT(BuildXdstpName("x", "a.B", std::string(kMaxResourceNameLength / 3, ' '), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit is 2048 bytes")));
}

}  // namespace
}  // namespace facet::xds
