#include "xds_server/explain/route_match_text.h"

#include "absl/strings/str_cat.h"
#include "envoy/type/v3/percent.pb.h"

namespace facet::xds {
namespace {

using ::envoy::config::route::v3::HeaderMatcher;
using ::envoy::config::route::v3::RouteMatch;
using ::envoy::type::matcher::v3::StringMatcher;

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

std::string DescribeString(const StringMatcher& matcher) {
  std::string out;
  switch (matcher.match_pattern_case()) {
    case StringMatcher::kExact:
      out = absl::StrCat("== ", Quoted(matcher.exact()));
      break;
    case StringMatcher::kPrefix:
      out = absl::StrCat("starts with ", Quoted(matcher.prefix()));
      break;
    case StringMatcher::kSuffix:
      out = absl::StrCat("ends with ", Quoted(matcher.suffix()));
      break;
    case StringMatcher::kContains:
      out = absl::StrCat("contains ", Quoted(matcher.contains()));
      break;
    case StringMatcher::kSafeRegex:
      out = absl::StrCat("~ ", Quoted(matcher.safe_regex().regex()));
      break;
    default:
      out = "(unsupported matcher)";
  }
  if (matcher.ignore_case()) absl::StrAppend(&out, " (ignoring case)");
  return out;
}

// The deprecated HeaderMatcher fields (exact_match, ...) are what gRPC 1.51
// clients read (string_match came later, gRFC A63), so they are shown, in
// string_match's words.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
std::string DescribeHeader(const HeaderMatcher& header) {
  StringMatcher matcher;
  std::string op;
  switch (header.header_match_specifier_case()) {
    case HeaderMatcher::kExactMatch:
      matcher.set_exact(header.exact_match());
      break;
    case HeaderMatcher::kSafeRegexMatch:
      *matcher.mutable_safe_regex() = header.safe_regex_match();
      break;
    case HeaderMatcher::kPrefixMatch:
      matcher.set_prefix(header.prefix_match());
      break;
    case HeaderMatcher::kSuffixMatch:
      matcher.set_suffix(header.suffix_match());
      break;
    case HeaderMatcher::kContainsMatch:
      matcher.set_contains(header.contains_match());
      break;
    case HeaderMatcher::kStringMatch:
      matcher = header.string_match();
      break;
    case HeaderMatcher::kRangeMatch:
      op =
          absl::StrCat("in [", header.range_match().start(), ", ", header.range_match().end(), ")");
      break;
    default:  // present_match, or nothing (gRPC: present).
      op = header.has_present_match() && !header.present_match() ? "absent" : "present";
  }
  if (op.empty()) op = DescribeString(matcher);
  return absl::StrCat("header ", header.name(), " ", header.invert_match() ? "not " : "", op);
}
#pragma GCC diagnostic pop

}  // namespace

std::string RouteMatchText(const RouteMatch& match) {
  std::string out;
  switch (match.path_specifier_case()) {
    case RouteMatch::kPrefix:
      out = absl::StrCat("prefix ", Quoted(match.prefix()));
      break;
    case RouteMatch::kPath:
      out = absl::StrCat("path ", Quoted(match.path()));
      break;
    case RouteMatch::kSafeRegex:
      out = absl::StrCat("path ~ ", Quoted(match.safe_regex().regex()));
      break;
    default:
      out = "path (unsupported matcher)";
  }
  if (match.has_case_sensitive() && !match.case_sensitive().value()) {
    absl::StrAppend(&out, " (ignoring case)");
  }
  for (const HeaderMatcher& header : match.headers()) {
    absl::StrAppend(&out, ", ", DescribeHeader(header));
  }
  if (match.has_runtime_fraction()) {
    const auto& fraction = match.runtime_fraction().default_value();
    absl::StrAppend(
        &out, ", runtime_fraction ", fraction.numerator(), "/",
        envoy::type::v3::FractionalPercent::DenominatorType_Name(fraction.denominator()));
  }
  if (match.query_parameters_size() > 0) {
    absl::StrAppend(&out, ", query parameters (gRPC ignores the route)");
  }
  return out;
}

}  // namespace facet::xds
