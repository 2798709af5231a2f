#include "xds_server/explain/route_match_text.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

std::string TextOf(const std::string& json) {
  envoy::config::route::v3::RouteMatch match;
  auto status = google::protobuf::util::JsonStringToMessage(json, &match);
  EXPECT_TRUE(status.ok()) << status.message();
  return RouteMatchText(match);
}

TEST(RouteMatchTextTest, PathThenHeadersAsGrpcReadsThem) {
  EXPECT_EQ(TextOf(R"j({"prefix": ""})j"), R"j(prefix "")j");
  EXPECT_EQ(TextOf(R"j({"path": "/demo.Echo/Echo",
                        "headers": [{"name": "x-env", "exact_match": "prod"}]})j"),
            R"j(path "/demo.Echo/Echo", header x-env == "prod")j");
  EXPECT_EQ(
      TextOf(R"j({"safe_regex": {"regex": "/[^/]+/(?:Echo)"}, "case_sensitive": false,
        "headers": [{"name": "x-v", "safe_regex_match": {"regex": "v2.*"}, "invert_match": true},
                    {"name": "x-p", "present_match": true},
                    {"name": "x-s", "string_match": {"prefix": "a", "ignore_case": true}},
                    {"name": "x-r", "range_match": {"start": 1, "end": 5}}]})j"),
      R"j(path ~ "/[^/]+/(?:Echo)" (ignoring case), header x-v not ~ "v2.*", header x-p present, )j"
      R"j(header x-s starts with "a" (ignoring case), header x-r in [1, 5))j");
}

TEST(RouteMatchTextTest, SaysWhatGrpcDoesWithFractionsAndQueryParameters) {
  EXPECT_EQ(
      TextOf(R"j({"prefix": "/a/", "runtime_fraction": {"default_value": {"numerator": 25}},
                        "query_parameters": [{"name": "q"}]})j"),
      R"j(prefix "/a/", runtime_fraction 25/HUNDRED, query parameters (gRPC ignores the route))j");
}

}  // namespace
}  // namespace facet::xds
