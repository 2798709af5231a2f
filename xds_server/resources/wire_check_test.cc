#include "xds_server/resources/wire_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::xds {
namespace {

using ::envoy::config::endpoint::v3::ClusterLoadAssignment;
using ::envoy::config::listener::v3::Listener;
using ::envoy::config::route::v3::RouteConfiguration;
using ::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

// The bytes protobuf writes for `message` (it logs, but writes, a string that
// is not valid UTF-8).
template <typename Message>
std::string Bytes(const Message& message) {
  return message.SerializeAsString();
}

TEST(CheckEncodedResourceTest, AcceptsValidUtf8AndControlCharactersInFreeText) {
  RouteConfiguration route;
  route.set_name("r");
  auto* host = route.add_virtual_hosts();
  host->set_name("v\xc3\xa9");
  host->add_domains("greeter");
  host->add_request_headers_to_remove("x-a\tb");
  EXPECT_EQ(CheckEncodedResource(RouteConfigurationType(), Bytes(route)), std::nullopt);
}

TEST(CheckEncodedResourceTest, NamesTheFirstStringFieldThatIsNotUtf8) {
  RouteConfiguration route;
  route.set_name("r");
  route.add_virtual_hosts()->set_name("good");
  auto* host = route.add_virtual_hosts();
  host->set_name("v");
  host->add_domains("a");
  host->add_domains("b\xff");
  std::optional<EncodedProblem> problem =
      CheckEncodedResource(RouteConfigurationType(), Bytes(route));
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->ToString(), "virtual_hosts[1].domains[1]: is not valid UTF-8 (at byte 1)");
  RouteConfiguration parsed;
  EXPECT_FALSE(parsed.ParseFromString(Bytes(route)));  // What every client does with it.
}

TEST(CheckEncodedResourceTest, LooksInsideAnyValues) {
  HttpConnectionManager manager;
  manager.set_stat_prefix("s");
  manager.mutable_rds()->set_route_config_name("r\xc0\xaf");
  Listener listener;
  listener.set_name("l");
  listener.mutable_api_listener()->mutable_api_listener()->PackFrom(manager);
  std::optional<EncodedProblem> problem = CheckEncodedResource(ListenerType(), Bytes(listener));
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->field,
            "api_listener.api_listener[envoy.extensions.filters.network.http_connection_manager."
            "v3.HttpConnectionManager].rds.route_config_name");
  EXPECT_EQ(problem->reason, "is not valid UTF-8 (at byte 1)");
}

TEST(CheckEncodedResourceTest, RejectsAResourceJustPastTheSizeBound) {
  ClusterLoadAssignment endpoints;
  endpoints.set_cluster_name("c");
  endpoints.add_endpoints()->mutable_locality()->set_region(std::string(kMaxResourceBytes, 'x'));
  const std::string bytes = Bytes(endpoints);
  ASSERT_GT(bytes.size(), kMaxResourceBytes);
  std::optional<EncodedProblem> problem = CheckEncodedResource(ClusterLoadAssignmentType(), bytes);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->field, "");
  EXPECT_EQ(problem->reason, absl::StrCat("is ", bytes.size(), " bytes encoded; the limit is ",
                                          kMaxResourceBytes, " bytes per resource"));
  endpoints.mutable_endpoints(0)->mutable_locality()->set_region(
      std::string(kMaxResourceBytes - 64, 'x'));
  EXPECT_EQ(CheckEncodedResource(ClusterLoadAssignmentType(), Bytes(endpoints)), std::nullopt);
}

TEST(CheckEncodedResourceTest, RejectsMoreRepeatedItemsThanTheJsonBound) {
  RouteConfiguration route;
  route.set_name("r");
  auto* host = route.add_virtual_hosts();
  for (size_t i = 0; i <= json::kMaxRepeatedFieldItems; ++i) host->add_domains("d");
  std::optional<EncodedProblem> problem =
      CheckEncodedResource(RouteConfigurationType(), Bytes(route));
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->field, "virtual_hosts[0].domains");
  EXPECT_THAT(problem->reason, ::testing::HasSubstr("the limit per field is 10000"));
}

}  // namespace
}  // namespace facet::xds
