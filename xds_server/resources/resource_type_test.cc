#include "xds_server/resources/resource_type.h"

#include "envoy/service/discovery/v3/discovery.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kListenerYaml[] = R"(
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    rds: {route_config_name: greeter-route, config_source: {ads: {}}}
    http_filters:
    - name: router
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
)";

std::unique_ptr<google::protobuf::Message> Decode(const ResourceType& type, const std::string& yaml,
                                                  const std::string& name) {
  auto message = DecodeResource(type, YAML::Load(yaml), "resource", name);
  EXPECT_THAT(message, IsOk());
  return message.ok() ? *std::move(message) : nullptr;
}

std::vector<std::string> LintMessages(const ResourceType& type, const std::string& yaml) {
  auto message = Decode(type, yaml, "x");
  std::vector<LintFinding> findings;
  if (message) type.Lint(*message, &findings);
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.field + ": " + f.message);
  return out;
}

TEST(ResourceTypeTest, FindsTypesByNameAliasAndUrl) {
  EXPECT_EQ(FindResourceType("listener"), &ListenerType());
  EXPECT_EQ(FindResourceType("envoy.config.route.v3.RouteConfiguration"), &RouteConfigurationType());
  EXPECT_EQ(FindResourceType("type.googleapis.com/envoy.config.cluster.v3.Cluster"), &ClusterType());
  EXPECT_EQ(FindResourceType("endpoint"), &ClusterLoadAssignmentType());
  EXPECT_EQ(FindResourceType("type.googleapis.com/listener"), nullptr);
  EXPECT_EQ(FindResourceType("secret"), nullptr);
  EXPECT_EQ(ClusterLoadAssignmentType().name_field(), "cluster_name");
}

TEST(ResourceTypeTest, PushOrderPutsReferencedTypesFirst) {
  auto types = AllResourceTypes();
  ASSERT_EQ(types.size(), 4u);
  for (size_t i = 1; i < types.size(); ++i) {
    EXPECT_LT(types[i - 1]->push_rank(), types[i]->push_rank());
  }
  EXPECT_EQ(types.front(), &ClusterLoadAssignmentType());
  EXPECT_EQ(types.back(), &ListenerType());
}

TEST(ResourceTypeTest, ListenersAndClustersAreFullStateInSotw) {
  EXPECT_TRUE(ListenerType().full_state());
  EXPECT_TRUE(ClusterType().full_state());
  EXPECT_FALSE(RouteConfigurationType().full_state());
  EXPECT_FALSE(ClusterLoadAssignmentType().full_state());
}

TEST(ResourceTypeTest, TheResourceWrapperTypeUrlNamesTheWrapperMessage) {
  EXPECT_EQ(
      kResourceWrapperTypeUrl,
      "type.googleapis.com/" + envoy::service::discovery::v3::Resource::descriptor()->full_name());
}

TEST(DecodeResourceTest, FillsInTheServedName) {
  auto message = Decode(ListenerType(), kListenerYaml, "greeter");
  ASSERT_NE(message, nullptr);
  EXPECT_EQ(ListenerType().GetName(*message), "greeter");
}

TEST(DecodeResourceTest, AcceptsMatchingTypeAndName) {
  auto message = Decode(ClusterLoadAssignmentType(),
                        "{'@type': type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment,"
                        " cluster_name: greeter-prod}",
                        "greeter-prod");
  ASSERT_NE(message, nullptr);
}

TEST(DecodeResourceTest, RejectsTypeMismatch) {
  EXPECT_THAT(DecodeResource(ClusterType(),
                             YAML::Load("{'@type': type.googleapis.com/envoy.config.listener.v3.Listener}"),
                             "spec.variants[0].resource", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.variants[0].resource.@type: is \"type.googleapis.com/"
                                 "envoy.config.listener.v3.Listener\" but spec.type is")));
}

TEST(DecodeResourceTest, RejectsNameThatDoesNotMatch) {
  EXPECT_THAT(DecodeResource(ClusterType(), YAML::Load("{name: other}"), "resource", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("resource.name: \"other\" does not match the served name \"c\"")));
}

TEST(DecodeResourceTest, AcceptsXdstpNameDifferingOnlyInParameterOrder) {
  const std::string served =
      "xdstp://a.example/envoy.config.cluster.v3.Cluster/c?a=1&b=2";
  EXPECT_THAT(DecodeResource(ClusterType(),
                             YAML::Load("{name: 'xdstp://a.example/envoy.config.cluster.v3.Cluster/c?b=2&a=1'}"),
                             "resource", served),
              IsOk());
}

TEST(DecodeResourceTest, RejectsNonMapDocument) {
  EXPECT_THAT(DecodeResource(ClusterType(), YAML::Load("[1]"), "resource", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("resource: expected a map")));
  EXPECT_THAT(DecodeResource(ClusterType(), YAML::Node(), "resource", "c"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("resource: is required")));
}

TEST(ReferencesTest, ListenerReferencesItsRouteConfiguration) {
  auto message = Decode(ListenerType(), kListenerYaml, "greeter");
  auto refs = ListenerType().References(*message, "greeter");
  ASSERT_THAT(refs, IsOk());
  EXPECT_THAT(*refs, ElementsAre(AllOf(Field(&ResourceReference::target, &RouteConfigurationType()),
                                       Field(&ResourceReference::name, "greeter-route"))));
}

TEST(ReferencesTest, ListenerWithInlineRouteReferencesClusters) {
  auto message = Decode(ListenerType(), R"(
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    route_config:
      virtual_hosts: [{name: v, domains: ["*"], routes: [{match: {prefix: ""}, route: {cluster: c1}}]}]
)", "l");
  auto refs = ListenerType().References(*message, "l");
  ASSERT_THAT(refs, IsOk());
  EXPECT_THAT(*refs, ElementsAre(AllOf(Field(&ResourceReference::target, &ClusterType()),
                                       Field(&ResourceReference::name, "c1"))));
}

TEST(ReferencesTest, RouteReferencesClustersAndWeightedClusters) {
  auto message = Decode(RouteConfigurationType(), R"(
virtual_hosts:
- name: v
  domains: [greeter]
  routes:
  - match: {prefix: /a}
    route: {cluster: c1}
  - match: {prefix: ""}
    route: {weighted_clusters: {clusters: [{name: c2, weight: 90}, {name: c3, weight: 10}]}}
)", "r");
  auto refs = RouteConfigurationType().References(*message, "r");
  ASSERT_THAT(refs, IsOk());
  EXPECT_THAT(*refs, ElementsAre(Field(&ResourceReference::name, "c1"),
                                 Field(&ResourceReference::name, "c2"),
                                 Field(&ResourceReference::name, "c3")));
  EXPECT_EQ((*refs)[1].field, "virtual_hosts[0].routes[1].route.weighted_clusters.clusters[0].name");
}

TEST(ReferencesTest, EdsClusterReferencesServiceNameOrItsOwnName) {
  auto with_service = Decode(ClusterType(),
                             "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}, service_name: e}}", "c");
  EXPECT_THAT(*ClusterType().References(*with_service, "c"),
              ElementsAre(AllOf(Field(&ResourceReference::target, &ClusterLoadAssignmentType()),
                                Field(&ResourceReference::name, "e"))));
  auto without = Decode(ClusterType(), "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}", "c");
  EXPECT_THAT(*ClusterType().References(*without, "c"),
              ElementsAre(Field(&ResourceReference::name, "c")));
}

TEST(ReferencesTest, XdstpEdsClusterWithoutServiceNameIsAnError) {
  const std::string name = "xdstp://a.example/envoy.config.cluster.v3.Cluster/c";
  auto message = Decode(ClusterType(), "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}", name);
  EXPECT_THAT(ClusterType().References(*message, name),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("service_name: must be set")));
}

TEST(ReferencesTest, AggregateClusterReferencesItsClusters) {
  auto message = Decode(ClusterType(), R"(
cluster_type:
  name: aggregate
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig
    clusters: [a, b]
)", "agg");
  EXPECT_THAT(*ClusterType().References(*message, "agg"),
              ElementsAre(Field(&ResourceReference::name, "a"), Field(&ResourceReference::name, "b")));
}

TEST(LintTest, CleanResourcesHaveNoFindings) {
  EXPECT_THAT(LintMessages(ListenerType(), kListenerYaml), IsEmpty());
  EXPECT_THAT(LintMessages(ClusterType(), "{type: EDS, eds_cluster_config: {eds_config: {ads: {}}}}"),
              IsEmpty());
  EXPECT_THAT(LintMessages(ClusterLoadAssignmentType(), R"(
endpoints:
- locality: {}
  load_balancing_weight: 1
  lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 50051}}}}]
)"), IsEmpty());
}

TEST(LintTest, WarnsAboutLocalityWithoutWeight) {
  EXPECT_THAT(LintMessages(ClusterLoadAssignmentType(), R"(
endpoints:
- locality: {}
  lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 1}}}}]
)"), ElementsAre(HasSubstr("endpoints[0].load_balancing_weight: locality has no load_balancing_weight")));
}

TEST(LintTest, WarnsAboutNonContiguousPriorities) {
  EXPECT_THAT(LintMessages(ClusterLoadAssignmentType(), "endpoints: [{locality: {}, load_balancing_weight: 1, priority: 1}]"),
              ElementsAre(HasSubstr("priorities are not contiguous")));
}

TEST(LintTest, WarnsAboutUpperCaseDomainAndUnsupportedAction) {
  EXPECT_THAT(LintMessages(RouteConfigurationType(), R"(
virtual_hosts:
- name: v
  domains: [Greeter]
  routes: [{match: {prefix: ""}, redirect: {host_redirect: x}}]
)"), ElementsAre(HasSubstr("not lower-case"), HasSubstr("neither route nor non_forwarding_action")));
}

TEST(LintTest, WarnsWhenRouterFilterIsNotLast) {
  EXPECT_THAT(LintMessages(ListenerType(), R"(
api_listener:
  api_listener:
    "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
    rds: {route_config_name: r, config_source: {ads: {}}}
    http_filters:
    - name: router
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
    - name: fault
      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault}
)"), ElementsAre(HasSubstr("router filter must be last"), HasSubstr("last filter is not the router")));
}

TEST(LintTest, WarnsAboutUnsupportedClusterTypeAndPolicy) {
  EXPECT_THAT(LintMessages(ClusterType(), "{type: STATIC, lb_policy: RANDOM}"),
              ElementsAre(HasSubstr("type STATIC is not supported"), HasSubstr("lb_policy RANDOM")));
}

}  // namespace
}  // namespace facet::xds
