// A route's match in a line of text, for explanations.
#ifndef FACET_XDS_SERVER_EXPLAIN_ROUTE_MATCH_TEXT_H_
#define FACET_XDS_SERVER_EXPLAIN_ROUTE_MATCH_TEXT_H_

#include <string>

#include "envoy/config/route/v3/route_components.pb.h"

namespace facet::xds {

// Returns what `match` matches, path first, then headers and the rest, e.g.
// `path "/demo.Echo/Echo", header x-env == "prod"` or `prefix ""`. Quoted
// values are shown as written. Pure; any thread.
std::string RouteMatchText(const envoy::config::route::v3::RouteMatch& match);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_EXPLAIN_ROUTE_MATCH_TEXT_H_
