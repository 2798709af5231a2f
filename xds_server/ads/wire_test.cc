#include "xds_server/ads/wire.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "xds_server/resources/resource_type.h"

namespace facet::xds {
namespace {

using ::envoy::service::discovery::v3::DeltaDiscoveryResponse;
using ::envoy::service::discovery::v3::DiscoveryRequest;
using ::envoy::service::discovery::v3::DiscoveryResponse;
using ::envoy::service::discovery::v3::DynamicParameterConstraints;
using ::envoy::service::discovery::v3::Resource;
using ::envoy::service::discovery::v3::ResourceName;
using ::google::protobuf::util::MessageDifferencer;

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

std::shared_ptr<Variant> ClusterVariant(const std::string& name, int padding) {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(name);
  cluster.set_alt_stat_name(std::string(padding, 'p'));  // Lengths past one varint byte.
  auto variant = std::make_shared<Variant>();
  variant->type = &ClusterType();
  variant->name = name;
  variant->label = "all";
  variant->serialized = cluster.SerializeAsString();
  variant->version = "v-" + name;
  return variant;
}

// The hand encoding is byte for byte what protobuf serializes for the same
// message: plain, wrapped and locator-wrapped resources, one-byte and
// multi-byte lengths, and an empty version_info (omitted, as proto3 does).
TEST(WireTest, SotwResponseEncodesAsProtobufSerializesIt) {
  SotwResponse response;
  response.type_url = ClusterType().type_url();
  response.nonce = "17";
  response.resources.push_back({ClusterVariant("a", 3), false, false});
  response.resources.push_back({ClusterVariant("b", 300), true, false});
  response.resources.push_back({ClusterVariant("c", 20000), true, true});
  for (const std::string version : {"", "0123456789abcdef"}) {
    response.version_info = version;
    const DiscoveryResponse message = response.ToMessage();
    ASSERT_EQ(message.resources_size(), 3);
    EXPECT_EQ(message.resources(0).type_url(), ClusterType().type_url());
    EXPECT_EQ(message.resources(1).type_url(), kResourceWrapperTypeUrl);
    // The wrappers, encoded by hand around the shared Any (their fields in
    // another order than protobuf's, which parsers accept), parse back.
    for (int i : {1, 2}) {
      const SotwResponse::Resource& resource = response.resources[i];
      envoy::service::discovery::v3::Resource wrapper;
      ASSERT_TRUE(wrapper.ParseFromString(message.resources(i).value()));
      EXPECT_EQ(wrapper.resource().value(), resource.variant->serialized);
      EXPECT_EQ(wrapper.version(), resource.variant->version);
      EXPECT_EQ(resource.locator ? wrapper.resource_name().name() : wrapper.name(),
                resource.variant->name);
    }
    EXPECT_EQ(Bytes(EncodeSotwResponse(response)), message.SerializeAsString()) << version;
    DiscoveryResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(Bytes(EncodeSotwResponse(response))));
    EXPECT_EQ(parsed.nonce(), "17");
    EXPECT_EQ(parsed.version_info(), version);
  }
}

// A delta response encoded by hand parses as the message the protocol
// defines: each resource named (by name, or for a locator by resource_name
// with the variant's constraints) and versioned, its Any of the response's
// type; the removals of both kinds after it.
TEST(WireTest, DeltaResponseEncodesAsTheMessageItStandsFor) {
  auto plain = ClusterVariant("a", 3);
  std::shared_ptr<Variant> constrained = ClusterVariant("b", 20000);
  DynamicParameterConstraints env_prod;
  env_prod.mutable_constraint()->set_key("env");
  env_prod.mutable_constraint()->set_value("prod");
  constrained->constraints = *Constraint::Compile(env_prod);
  DeltaResponse response;
  response.type_url = ClusterType().type_url();
  response.nonce = "18";
  response.resources.push_back({plain, false});
  response.resources.push_back({constrained, true});
  response.removed_resources = {"gone", std::string(200, 'g')};
  ResourceName& removed = response.removed_resource_names.emplace_back();
  removed.set_name("c");
  *removed.mutable_dynamic_parameter_constraints() = env_prod;

  DeltaDiscoveryResponse expected;
  expected.set_type_url(std::string(response.type_url));
  expected.set_nonce("18");
  Resource* first = expected.add_resources();
  first->set_name("a");
  first->set_version(plain->version);
  first->mutable_resource()->set_type_url(std::string(response.type_url));
  first->mutable_resource()->set_value(plain->serialized);
  Resource* second = expected.add_resources();
  second->mutable_resource_name()->set_name("b");
  *second->mutable_resource_name()->mutable_dynamic_parameter_constraints() = env_prod;
  second->set_version(constrained->version);
  second->mutable_resource()->set_type_url(std::string(response.type_url));
  second->mutable_resource()->set_value(constrained->serialized);
  expected.add_removed_resources("gone");
  expected.add_removed_resources(std::string(200, 'g'));
  *expected.add_removed_resource_names() = removed;

  for (const std::string version : {"", "0123456789abcdef"}) {
    response.system_version_info = version;
    expected.set_system_version_info(version);
    DeltaDiscoveryResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(Bytes(EncodeDeltaResponse(response)))) << version;
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, expected)) << version << "\n"
                                                              << parsed.DebugString();
    EXPECT_TRUE(MessageDifferencer::Equals(response.ToMessage(), expected)) << version;
  }
}

TEST(WireTest, DecodeMessageRefusesBytesThatAreNotTheMessage) {
  DiscoveryRequest request;
  request.set_type_url("t");
  grpc::ByteBuffer good = EncodeMessage(request);
  DiscoveryRequest decoded;
  decoded.set_version_info("left over");
  ASSERT_TRUE(DecodeMessage(&good, &decoded));
  EXPECT_EQ(decoded.type_url(), "t");
  EXPECT_EQ(decoded.version_info(), "");  // Cleared first.

  // Field 1 (version_info, a proto3 string) holding invalid UTF-8; then a
  // truncated length.
  for (const std::string& bytes :
       {std::string("\x0a\x02\xff\xfe", 4), std::string("\x0a\x05" "ab", 4)}) {
    grpc::Slice slice(bytes.data(), bytes.size());
    grpc::ByteBuffer bad(&slice, 1);
    EXPECT_FALSE(DecodeMessage(&bad, &decoded)) << bytes.size();
  }
}

TEST(WireTest, DecodeMessageReadsARequestInOneSliceOrInMany) {
  DiscoveryRequest request;
  request.set_type_url("type.googleapis.com/envoy.config.route.v3.RouteConfiguration");
  request.set_version_info("0123456789abcdef");
  request.add_resource_names("route-0");
  request.set_response_nonce("7");
  const std::string bytes = request.SerializeAsString();
  // One slice, then the same bytes cut into slices of 1 to 9 bytes (gRPC
  // hands over a message as it arrived, in as many slices).
  for (size_t cut = 0; cut < 10; ++cut) {
    std::vector<grpc::Slice> slices;
    if (cut == 0) {
      slices.emplace_back(bytes.data(), bytes.size());
    } else {
      for (size_t at = 0; at < bytes.size(); at += cut) {
        slices.emplace_back(bytes.data() + at, std::min(cut, bytes.size() - at));
      }
    }
    grpc::ByteBuffer buffer(slices.data(), slices.size());
    DiscoveryRequest decoded;
    ASSERT_TRUE(DecodeMessage(&buffer, &decoded)) << cut;
    EXPECT_TRUE(MessageDifferencer::Equals(decoded, request)) << cut;
    EXPECT_EQ(buffer.Length(), 0u) << cut;  // Cleared either way.
    // Cut short by one byte, in one slice or many: not a request.
    const std::string truncated = bytes.substr(0, bytes.size() - 1);
    std::vector<grpc::Slice> short_slices;
    for (size_t at = 0; at < truncated.size(); at += cut == 0 ? truncated.size() : cut) {
      short_slices.emplace_back(truncated.data() + at,
                                std::min(cut == 0 ? truncated.size() : cut, truncated.size() - at));
    }
    grpc::ByteBuffer bad(short_slices.data(), short_slices.size());
    EXPECT_FALSE(DecodeMessage(&bad, &decoded)) << cut;
  }
}

}  // namespace
}  // namespace facet::xds
