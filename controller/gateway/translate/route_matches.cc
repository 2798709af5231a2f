#include "controller/gateway/translate/route_matches.h"

#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/gateway/translate/xds_yaml.h"
#include "re2/re2.h"

namespace facet::controller::gateway {
namespace {

using internal::String;

// Matches any one path segment: a service or a method.
constexpr char kAnySegment[] = "[^/]+";

std::string Wrapped(absl::string_view regex) { return absl::StrCat("(?:", regex, ")"); }

YAML::Node Regex(absl::string_view regex) {
  YAML::Node matcher;
  matcher["regex"] = String(regex);
  return matcher;
}

// Records a problem when `regex` (built from what is written at `field`) is
// not RE2.
void CheckRe2(const std::string& regex, const std::string& field, TranslatedMatch* out) {
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(regex, options);
  if (!re.ok()) {
    out->problems.push_back({field, absl::StrCat("the translated regular expression \"", regex,
                                                 "\" is not RE2: ", re.error())});
  }
}

void TranslateMethod(const MethodMatch& method, const std::string& field, TranslatedMatch* out) {
  out->precedence.service_length = method.service.size();
  out->precedence.method_length = method.method.size();
  if (method.service.empty() && method.method.empty()) {
    out->match["prefix"] = String("");
    return;
  }
  if (method.type == MatchType::kExact) {
    // An Exact service may start with one "." (a fully qualified name); the
    // path never does.
    absl::string_view service = method.service;
    absl::ConsumePrefix(&service, ".");
    if (method.method.empty()) {
      out->match["prefix"] = String(absl::StrCat("/", service, "/"));
    } else if (service.empty()) {
      out->match["safe_regex"] =
          Regex(absl::StrCat("/", kAnySegment, "/", RE2::QuoteMeta(method.method)));
    } else {
      out->match["path"] = String(absl::StrCat("/", service, "/", method.method));
    }
    return;
  }
  const std::string service = method.service.empty() ? kAnySegment : Wrapped(method.service);
  const std::string name = method.method.empty() ? kAnySegment : Wrapped(method.method);
  if (!method.service.empty()) CheckRe2(service, field + ".method.service", out);
  if (!method.method.empty()) CheckRe2(name, field + ".method.method", out);
  out->match["safe_regex"] = Regex(absl::StrCat("/", service, "/", name));
}

}  // namespace

bool Precedes(const Precedence& a, const Precedence& b) {
  return std::tie(b.service_length, b.method_length, b.header_count, a.created, a.route,
                  a.rule, a.match) < std::tie(a.service_length, a.method_length, a.header_count,
                                              b.created, b.route, b.rule, b.match);
}

TranslatedMatch TranslateMatch(const RouteMatch& match) {
  TranslatedMatch out;
  if (match.method.has_value()) {
    TranslateMethod(*match.method, match.field, &out);
  } else {
    out.match["prefix"] = String("");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < match.headers.size(); ++i) {
    const HeaderMatch& header = match.headers[i];
    const std::string field = absl::StrCat(match.field, ".headers[", i, "]");
    const std::string name = absl::AsciiStrToLower(header.name);
    if (!seen.insert(name).second) continue;  // Only the first of equal names counts.
    if (absl::EndsWith(name, "-bin")) {
      out.problems.push_back(
          {field + ".name", absl::StrCat("\"", header.name,
                                         "\" is a binary header, which gRPC clients never match "
                                         "on (gRFC A28); match a text header instead")});
      continue;
    }
    if (name == "content-type") {
      out.notes.push_back(
          {field + ".name",
           "gRPC clients match content-type as \"application/grpc\" whatever the call sends "
           "(gRFC A28)"});
    }
    YAML::Node matcher;
    matcher["name"] = String(name);
    if (header.type == MatchType::kExact) {
      matcher["exact_match"] = String(header.value);
    } else {
      const std::string regex = Wrapped(header.value);
      CheckRe2(regex, field + ".value", &out);
      matcher["safe_regex_match"] = Regex(regex);
    }
    out.match["headers"].push_back(matcher);
  }
  out.precedence.header_count = seen.size();
  out.matches_all = !match.method.has_value() && seen.empty();
  return out;
}

TranslatedMatch MatchEverything() {
  TranslatedMatch out;
  out.match["prefix"] = String("");
  out.matches_all = true;
  return out;
}

}  // namespace facet::controller::gateway
