#include "xds_server/json/proto_json.h"

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "xds_server/json/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::json {
namespace {

using ::envoy::config::route::v3::RouteConfiguration;
using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;

class ProtoJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Link the types used inside Any so the generated pool knows them
    // (descriptor() is defined out of line, so the call cannot be elided).
    ASSERT_NE(envoy::extensions::filters::network::http_connection_manager::v3::
                  HttpConnectionManager::descriptor(),
              nullptr);
    ASSERT_NE(envoy::extensions::filters::http::router::v3::Router::descriptor(), nullptr);
  }
};

absl::Status ParseRoute(const std::string& yaml, RouteConfiguration* route) {
  return ParseMessage(YAML::Load(yaml), "resource", route);
}

TEST_F(ProtoJsonTest, ParsesProtoAndCamelCaseNames) {
  RouteConfiguration route;
  ASSERT_THAT(ParseRoute(R"(
name: r
virtualHosts:
- name: vh
  domains: [greeter]
  routes:
  - match: {prefix: ""}
    route: {cluster: c, timeout: 5s}
)", &route), IsOk());
  EXPECT_EQ(route.virtual_hosts(0).routes(0).route().cluster(), "c");
  EXPECT_EQ(route.virtual_hosts(0).routes(0).route().timeout().seconds(), 5);
}

TEST_F(ProtoJsonTest, RejectsUnknownFieldWithPath) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, routes: [{route: {cluster: c, bogus: 1}}]}]",
                         &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.virtual_hosts[0].routes[0].route.bogus: unknown field")));
}

TEST_F(ProtoJsonTest, RejectsAMapKeyThatIsNotUtf8WithPath) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, typed_per_filter_config: {\"a\xff\": {}}}]",
                         &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.virtual_hosts[0].typed_per_filter_config: has a map "
                                 "key that is not valid UTF-8 (at byte 1)")));
}

TEST_F(ProtoJsonTest, RejectsScalarWhereListExpected) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, domains: greeter}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.virtual_hosts[0].domains: expected a list")));
}

TEST_F(ProtoJsonTest, RejectsNonBooleanForBoolWrapper) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("validate_clusters: yes", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.validate_clusters: expected true or false")));
}

TEST_F(ProtoJsonTest, RejectsNumberForStringAndSaysToQuote) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("name: 5", &route),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("quote it")));
}

TEST_F(ProtoJsonTest, RejectsUnknownEnumValueListingChoices) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, require_tls: SOMETIMES}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("virtual_hosts[0].require_tls: invalid value \"SOMETIMES\" for enum")));
}

TEST_F(ProtoJsonTest, AcceptsEnumByNumberAndName) {
  envoy::config::cluster::v3::Cluster cluster;
  EXPECT_THAT(ParseMessage(YAML::Load("{type: EDS, lb_policy: 0}"), "r", &cluster), IsOk());
  EXPECT_EQ(cluster.type(), envoy::config::cluster::v3::Cluster::EDS);
}

TEST_F(ProtoJsonTest, RejectsOutOfRangeInteger) {
  envoy::config::cluster::v3::Cluster cluster;
  EXPECT_THAT(ParseMessage(YAML::Load("per_connection_buffer_limit_bytes: -1"), "r", &cluster),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-negative")));
}

TEST_F(ProtoJsonTest, RejectsTwoMembersOfOneOneof) {
  RouteConfiguration route;
  EXPECT_THAT(
      ParseRoute("virtual_hosts: [{name: vh, routes: [{match: {prefix: a, path: /b}}]}]", &route),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("are both set")));
}

TEST_F(ProtoJsonTest, ChecksInsideAnyWithFullPath) {
  envoy::config::listener::v3::Listener listener;
  absl::Status status = ParseMessage(YAML::Load(R"(
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    http_filters:
    - name: router
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
        bogus: 2
)"), "resource", &listener);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("resource.api_listener.api_listener.http_filters[0]."
                                         "typed_config.bogus: unknown field")));
}

TEST_F(ProtoJsonTest, RejectsUnknownAnyType) {
  envoy::config::listener::v3::Listener listener;
  EXPECT_THAT(ParseMessage(YAML::Load(R"(api_listener: {api_listener: {"@type": type.googleapis.com/no.Such}})"),
                           "resource", &listener),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.api_listener.api_listener.@type: unknown type")));
}

TEST_F(ProtoJsonTest, RejectsTypeFieldOutsideAny) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{\"@type\": x}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only allowed in google.protobuf.Any")));
}

TEST_F(ProtoJsonTest, ReportsMalformedDurationFromProtobuf) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: v, routes: [{match: {prefix: a}, route: {cluster: c, timeout: soon}}]}]",
                         &route),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("resource:")));
}

TEST_F(ProtoJsonTest, NullMeansDefault) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("name: null\nvirtual_hosts: ~", &route), IsOk());
  EXPECT_EQ(route.virtual_hosts_size(), 0);
}

TEST_F(ProtoJsonTest, BoundsItemsPerRepeatedField) {
  std::string yaml = "virtual_hosts:\n- name: v\n  domains: [";
  for (size_t i = 0; i < kMaxRepeatedFieldItems; ++i) absl::StrAppend(&yaml, i > 0 ? "," : "", "d", i);
  yaml += "]\n";
  RouteConfiguration route;
  ASSERT_THAT(ParseRoute(yaml, &route), IsOk());
  EXPECT_EQ(route.virtual_hosts(0).domains_size(), 10000);
  yaml.insert(yaml.size() - 2, ",one-more");
  EXPECT_THAT(ParseRoute(yaml, &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.virtual_hosts[0].domains: has 10001 items; the limit "
                                 "per field is 10000 items")));
}

TEST_F(ProtoJsonTest, BoundsEntriesPerMapField) {
  std::string yaml = "virtual_hosts:\n- name: v\n  domains: [x]\n  typed_per_filter_config: {";
  for (size_t i = 0; i <= kMaxRepeatedFieldItems; ++i) {
    absl::StrAppend(&yaml, i > 0 ? "," : "", "f", i,
                    ": {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}");
  }
  yaml += "}\n";
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute(yaml, &route),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 10001 entries")));
}

TEST_F(ProtoJsonTest, BoundsTheJsonSizeOfAMessage) {
  RouteConfiguration route;
  const std::string fits(kMaxMessageJsonBytes - 64, 'n');
  ASSERT_THAT(ParseRoute(absl::StrCat("name: ", fits, "\n"), &route), IsOk());
  EXPECT_EQ(route.name().size(), fits.size());
  // Aliases repeat the name without making the YAML larger.
  const std::string yaml = absl::StrCat("name: &n ", std::string(300'000, 'n'),
                                        "\nvirtual_hosts: [{name: *n}, {name: *n}, {name: *n}]\n");
  EXPECT_THAT(ParseRoute(yaml, &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource: longer than 1048576 bytes as JSON; that is the limit "
                                 "for one message")));
}

TEST_F(ProtoJsonTest, UnknownFieldSuggestsTheNearestNameInTheSameStyle) {
  RouteConfiguration route;
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, domians: [a]}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("virtual_hosts[0].domians: unknown field \"domians\" in "
                                 "envoy.config.route.v3.VirtualHost; did you mean \"domains\"?")));
  EXPECT_THAT(ParseRoute("virtualHosts: [{name: vh, requireTLS: ALL}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean \"requireTls\"?")));
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, require_tsl: ALL}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did you mean \"require_tls\"?")));
  EXPECT_THAT(ParseRoute("virtual_hosts: [{name: vh, completely_unrelated: 1}]", &route),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::Not(HasSubstr("did you mean"))));
}

}  // namespace
}  // namespace facet::json

namespace facet::json {
namespace {

// What protobuf's JSON parser makes of the document's JSON form.
template <typename M>
M ByProtobufJson(const std::string& yaml) {
  M message;
  absl::StatusOr<std::string> json = YamlToJson(YAML::Load(yaml), "");
  EXPECT_TRUE(json.ok());
  google::protobuf::util::JsonParseOptions options;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &message, options).ok()) << *json;
  return message;
}

template <typename M>
void ExpectSameAsProtobufJson(const std::string& yaml) {
  M message;
  ASSERT_THAT(ParseMessage(YAML::Load(yaml), "resource", &message), IsOk()) << yaml;
  const M expected = ByProtobufJson<M>(yaml);
  // Any fields are compared unpacked: their bytes are in field order here,
  // in the written order when protobuf's parser writes them.
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(message, expected))
      << yaml << "\ngot:\n" << message.DebugString() << "\nexpected:\n" << expected.DebugString();
}

TEST_F(ProtoJsonTest, WritesWhatProtobufsJsonParserWrites) {
  ExpectSameAsProtobufJson<envoy::config::listener::v3::Listener>(R"(
name: l
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    stat_prefix: s
    codec_type: 2
    rds: {route_config_name: r, config_source: {ads: {}, resource_api_version: V3}}
    common_http_protocol_options: {idle_timeout: 1.5s, max_headers_count: 100}
    stream_idle_timeout: 0s
    http_filters:
    - name: router
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}
)");
  ExpectSameAsProtobufJson<RouteConfiguration>(R"(
name: r
validate_clusters: false
virtual_hosts:
- name: v
  domains: ["*", "a.example"]
  request_headers_to_add: [{header: {key: x, value: "y"}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}]
  routes:
  - match: {prefix: "", headers: [{name: h, string_match: {exact: v}}], runtime_fraction: {default_value: {numerator: 5, denominator: MILLION}}}
    route:
      weighted_clusters: {clusters: [{name: a, weight: 90}, {name: b, weight: 10}]}
      timeout: 2s
      max_stream_duration: {grpc_timeout_header_max: 0.25s}
      retry_policy: {retry_on: unavailable, num_retries: 3, retry_back_off: {base_interval: 0.1s}}
  typed_per_filter_config: {}
  metadata: {filter_metadata: {facet: {team: a, size: 3, ok: true, list: [1, "x", null], nested: {k: 1.5}}}}
)");
  ExpectSameAsProtobufJson<envoy::config::cluster::v3::Cluster>(R"(
name: c
type: EDS
connect_timeout: 0.25s
lb_policy: ROUND_ROBIN
eds_cluster_config: {eds_config: {ads: {}}, service_name: "80"}
per_connection_buffer_limit_bytes: 32768
common_lb_config: {healthy_panic_threshold: {value: 12.5}}
circuit_breakers: {thresholds: [{priority: HIGH, max_connections: 4294967295, max_requests: "10"}]}
load_assignment:
  cluster_name: c
  endpoints:
  - locality: {region: r, zone: z}
    load_balancing_weight: 1
    lb_endpoints:
    - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
      health_status: DRAINING
      metadata: {filter_metadata: {envoy.lb: {canary: true}}}
typed_extension_protocol_options: {}
)");
}

TEST_F(ProtoJsonTest, AnAnysValueIsItsMessageInFieldOrderWhateverTheWrittenOrder) {
  // Written last field first: protobuf's JSON parser kept that order in the
  // Any's bytes; the reflection writer serializes the message itself.
  const std::string yaml = R"(
name: l
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    http_filters: [{name: router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
    rds: {route_config_name: r, config_source: {ads: {}}}
    stat_prefix: s
)";
  envoy::config::listener::v3::Listener listener;
  ASSERT_THAT(ParseMessage(YAML::Load(yaml), "resource", &listener), IsOk());
  const google::protobuf::Any& any = listener.api_listener().api_listener();
  envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager hcm;
  ASSERT_TRUE(any.UnpackTo(&hcm));
  EXPECT_EQ(hcm.stat_prefix(), "s");
  std::string in_field_order;
  {
    google::protobuf::io::StringOutputStream stream(&in_field_order);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    hcm.SerializeToCodedStream(&coded);
  }
  EXPECT_EQ(any.value(), in_field_order);
  using envoy::config::listener::v3::Listener;
  EXPECT_NE(ByProtobufJson<Listener>(yaml).api_listener().api_listener().value(), in_field_order);
}

TEST_F(ProtoJsonTest, FallsBackToProtobufsParserForWhatItDoesNotDecide) {
  // A hexadecimal integer and a number in a string: protobuf's parser
  // decides, and the result is the same.
  ExpectSameAsProtobufJson<envoy::config::cluster::v3::Cluster>(
      "name: c\nper_connection_buffer_limit_bytes: 0x8000\n"
      "common_lb_config: {healthy_panic_threshold: {value: \"12.5\"}}\n");
}

}  // namespace
}  // namespace facet::json
