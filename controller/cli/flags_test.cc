#include "controller/cli/flags.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::controller {
namespace {

using ::facet::testing::IsOk;
using ::facet::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Flags Defined() {
  Flags flags;
  flags.Define("address", "0.0.0.0:1", "where");
  flags.Define("verbose", "false", "more", /*is_bool=*/true);
  return flags;
}

TEST(FlagsTest, ParsesBothValueFormsBooleansAndPositionals) {
  Flags flags = Defined();
  ASSERT_THAT(flags.Parse({"a", "--address", "x:2", "--verbose", "b"}), IsOk());
  EXPECT_EQ(flags.Get("address"), "x:2");
  EXPECT_TRUE(flags.GetBool("verbose"));
  EXPECT_THAT(flags.positional(), ElementsAre("a", "b"));
  Flags eq = Defined();
  ASSERT_THAT(eq.Parse({"--address=y:3", "--verbose=false"}), IsOk());
  EXPECT_EQ(eq.Get("address"), "y:3");
  EXPECT_FALSE(eq.GetBool("verbose"));
  EXPECT_EQ(Defined().Get("address"), "0.0.0.0:1");
}

TEST(FlagsTest, RejectsUnknownMissingAndBadBooleanValues) {
  EXPECT_THAT(Defined().Parse({"--nope"}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown flag --nope")));
  EXPECT_THAT(Defined().Parse({"--address"}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a value")));
  EXPECT_THAT(Defined().Parse({"--verbose=yes"}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("true or false")));
}

TEST(FlagsTest, HelpListsFlagsWithDefaults) {
  EXPECT_THAT(Defined().Help(), HasSubstr("--address=VALUE"));
  EXPECT_THAT(Defined().Help(), HasSubstr("(default: 0.0.0.0:1)"));
}

}  // namespace
}  // namespace facet::controller
