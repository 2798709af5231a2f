#include "xds_server/ads/parameter_mapping.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

using ::facet::testing::StatusIs;
using ::testing::HasSubstr;

envoy::config::core::v3::Node NodeWithMetadata() {
  envoy::config::core::v3::Node node;
  auto& fields = *node.mutable_metadata()->mutable_fields();
  fields["env"].set_string_value("prod");
  fields["environment"].set_string_value("staging");
  fields["replicas"].set_number_value(3);
  fields["nested"].mutable_struct_value();
  return node;
}

TEST(ParameterMappingTest, DefaultTakesEveryTopLevelStringField) {
  EXPECT_EQ(ParameterMapping().ParametersFor(NodeWithMetadata()),
            (ParameterSet{{"env", "prod"}, {"environment", "staging"}}));
}

TEST(ParameterMappingTest, ListNarrowsAndRenames) {
  auto mapping = ParameterMapping::Parse("env=environment, missing");
  ASSERT_TRUE(mapping.ok());
  EXPECT_EQ(mapping->ParametersFor(NodeWithMetadata()), (ParameterSet{{"env", "staging"}}));
  EXPECT_EQ(mapping->ToString(), "env=environment,missing");
  EXPECT_EQ(ParameterMapping::Parse("")->ToString(), "");
}

TEST(ParameterMappingTest, RejectsMalformedSpecs) {
  EXPECT_THAT(ParameterMapping::Parse("env=,x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"env=\"")));
  EXPECT_THAT(ParameterMapping::Parse("a,,b"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParameterMapping::Parse("a,a=b"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));
}

}  // namespace
}  // namespace facet::xds
