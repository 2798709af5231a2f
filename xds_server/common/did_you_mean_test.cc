#include "xds_server/common/did_you_mean.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace facet {
namespace {

const std::vector<std::string> kRdsFields = {"config_source", "configSource", "route_config_name",
                                             "routeConfigName"};

TEST(NearestNameTest, SuggestsTheNameInTheInputsStyle) {
  EXPECT_EQ(NearestName("routeConfigNme", kRdsFields), "routeConfigName");
  EXPECT_EQ(NearestName("route_config_nme", kRdsFields), "route_config_name");
  EXPECT_EQ(NearestName("routeconfigname", kRdsFields), "route_config_name");
  EXPECT_EQ(NearestName("RouteConfig_Name", kRdsFields), "routeConfigName");
}

TEST(NearestNameTest, CountsASwapOfNeighboursAsOneEdit) {
  EXPECT_EQ(NearestName("lb_endpionts", {"lb_endpoints", "locality"}), "lb_endpoints");
  EXPECT_EQ(NearestName("rotue", {"route", "routes"}), "route");
}

TEST(NearestNameTest, SuggestsNothingForDistantNames) {
  EXPECT_EQ(NearestName("bogus", kRdsFields), "");
  EXPECT_EQ(NearestName("", kRdsFields), "");
  EXPECT_EQ(NearestName("x", {"y"}), "y");  // One edit is always near enough.
  EXPECT_EQ(NearestName("xy", {"ab"}), "");
  EXPECT_EQ(NearestName(std::string(1000, 'a'), {std::string(1000, 'a')}), "");
}

TEST(NearestNameTest, ScalesTheThresholdWithLength) {
  // Two edits in a 12-letter name are near; in a 5-letter one they are not.
  EXPECT_EQ(NearestName("lb_endpoinxx", {"lb_endpoints"}), "lb_endpoints");
  EXPECT_EQ(NearestName("rouxx", {"route"}), "");
  EXPECT_EQ(NearestName("rout", {"route", "listener", "cluster", "endpoint"}), "route");
}

TEST(DidYouMeanTest, FormatsASuffix) {
  EXPECT_EQ(DidYouMean("routeConfigNme", kRdsFields), "; did you mean \"routeConfigName\"?");
  EXPECT_EQ(DidYouMean("bogus", kRdsFields), "");
}

}  // namespace
}  // namespace facet
