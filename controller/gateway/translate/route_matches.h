// How one GRPCRoute match becomes an xDS RouteMatch, and the order in which
// the xDS routes of the GRPCRoutes on one parent are tried (gRPC takes the
// first that matches, gRFC A28).
#ifndef FACET_CONTROLLER_GATEWAY_TRANSLATE_ROUTE_MATCHES_H_
#define FACET_CONTROLLER_GATEWAY_TRANSLATE_ROUTE_MATCHES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/gateway/model/gateway_object.h"
#include "controller/gateway/model/gateway_status.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// What decides where an xDS route sorts among the routes of one parent
// (GRPCRouteRule.matches, mesh mode: hostnames play no part). Match types
// are no criterion (gateway-api #2216); lengths count the text as written,
// regular expressions too.
struct Precedence {
  size_t service_length = 0;  // More first.
  size_t method_length = 0;   // More first.
  size_t header_count = 0;    // Distinct header names; more first.
  // metadata.creationTimestamp: older first. A route without one (a
  // manifest) sorts after every route that has one, and among themselves
  // `route` decides.
  absl::Time created = absl::InfiniteFuture();
  std::string route;  // "namespace/name"; alphabetical.
  size_t rule = 0;    // Within the route: the rule first written first,
  size_t match = 0;   // then its match first written first.
};

// Returns whether the route with precedence `a` is tried before `b`'s.
bool Precedes(const Precedence& a, const Precedence& b);

// One GRPCRoute match as an xDS RouteMatch.
struct TranslatedMatch {
  // The RouteMatch (proto3 JSON as YAML): path, prefix or safe_regex for
  // the method; headers with exact_match or safe_regex_match (never
  // string_match, which gRPC 1.51 does not read); user regular expressions
  // wrapped in (?:...) as grpc-js-xds anchors them as ^regex$.
  YAML::Node match;
  bool matches_all = false;  // No method and no headers: prefix "".
  // Only the lengths and the header count are set.
  Precedence precedence;
  // What makes the match unservable (Accepted=False UnsupportedValue): a
  // header the clients never match on (-bin), a regular expression that
  // is not RE2 once wrapped.
  std::vector<ConditionCause> problems;
  // What is served, but maybe not as written (content-type).
  std::vector<ConditionCause> notes;
};

// Translates `match` (written at match.field). Header names are lower-cased;
// of names equal without case only the first counts (GRPCHeaderMatch). Pure;
// thread-safe.
TranslatedMatch TranslateMatch(const RouteMatch& match);

// Returns the match of a rule without matches: every call.
TranslatedMatch MatchEverything();

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_TRANSLATE_ROUTE_MATCHES_H_
