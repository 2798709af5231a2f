#include "xds_server/common/struct_json.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::json {
namespace {

TEST(MessageToJsonTest, PrintsStructKeysSortedAtEveryLevel) {
  google::protobuf::Struct root;
  auto& fields = *root.mutable_fields();
  std::string expected = "{";
  for (int i = 0; i < 20; ++i) {
    // Inserted in reverse: printed in order whatever the map's hash order.
    fields[absl::StrCat("k", 19 - i < 10 ? "0" : "", 19 - i)] = NumberValue(19 - i);
  }
  auto& nested = *fields["z"].mutable_struct_value()->mutable_fields();
  nested["b"] = StringValue("2");
  nested["a"] = BoolValue(true);
  for (int i = 0; i < 20; ++i) {
    absl::StrAppend(&expected, "\"k", i < 10 ? "0" : "", i, "\":", i, ",");
  }
  absl::StrAppend(&expected, "\"z\":{\"a\":true,\"b\":\"2\"}}");
  EXPECT_EQ(MessageToJson(root, /*pretty=*/false), expected);
  EXPECT_THAT(MessageToJson(root, /*pretty=*/true), ::testing::HasSubstr("\"k00\": 0,\n"));
}

}  // namespace
}  // namespace facet::json
