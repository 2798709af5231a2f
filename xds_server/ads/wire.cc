#include "xds_server/ads/wire.h"

#include <cstdint>

#include "absl/strings/string_view.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpc/slice.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"

namespace facet::xds {

namespace {

using ::google::protobuf::io::CodedOutputStream;

// Field numbers of envoy.service.discovery.v3.DiscoveryResponse, and of
// DeltaDiscoveryResponse where it differs (system_version_info is 1 too).
constexpr uint32_t kVersionInfo = 1;
constexpr uint32_t kResources = 2;
constexpr uint32_t kTypeUrl = 4;
constexpr uint32_t kNonce = 5;
constexpr uint32_t kRemovedResources = 6;
constexpr uint32_t kRemovedResourceNames = 8;

uint32_t LengthDelimitedTag(uint32_t field) { return (field << 3) | 2; }

// Bytes of a length-delimited field of `size` bytes (omitted when empty,
// as proto3 does, unless `always`).
size_t FieldSize(size_t size, bool always) {
  if (size == 0 && !always) return 0;
  return 1 + CodedOutputStream::VarintSize32(static_cast<uint32_t>(size)) + size;
}

uint8_t* WriteField(uint32_t field, absl::string_view bytes, bool always, uint8_t* out) {
  if (bytes.empty() && !always) return out;
  out = CodedOutputStream::WriteTagToArray(LengthDelimitedTag(field), out);
  out = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(bytes.size()), out);
  return CodedOutputStream::WriteRawToArray(bytes.data(), static_cast<int>(bytes.size()), out);
}

grpc::ByteBuffer Adopt(grpc_slice slice) {
  grpc::Slice owned(slice, grpc::Slice::STEAL_REF);
  return grpc::ByteBuffer(&owned, 1);
}

}  // namespace

grpc::ByteBuffer EncodeSotwResponse(const SotwResponse& response) {
  // Fields in number order, as protobuf serializes them.
  size_t size = FieldSize(response.version_info.size(), false);
  for (const SotwResponse::Resource& resource : response.resources) {
    size += FieldSize(resource.EncodedAny().size(), true);
  }
  size += FieldSize(response.type_url.size(), false) + FieldSize(response.nonce.size(), false);
  grpc_slice slice = grpc_slice_malloc(size);
  uint8_t* out = GRPC_SLICE_START_PTR(slice);
  out = WriteField(kVersionInfo, response.version_info, false, out);
  for (const SotwResponse::Resource& resource : response.resources) {
    out = WriteField(kResources, resource.EncodedAny(), true, out);
  }
  out = WriteField(kTypeUrl, response.type_url, false, out);
  WriteField(kNonce, response.nonce, false, out);
  return Adopt(slice);
}

grpc::ByteBuffer EncodeDeltaResponse(const DeltaResponse& response) {
  // Fields in number order, as protobuf serializes them.
  size_t size = FieldSize(response.system_version_info.size(), false);
  for (const DeltaResponse::Resource& resource : response.resources) {
    size += FieldSize(resource.Encoded().size(), true);
  }
  size += FieldSize(response.type_url.size(), false) + FieldSize(response.nonce.size(), false);
  for (const std::string& name : response.removed_resources) size += FieldSize(name.size(), true);
  for (const auto& name : response.removed_resource_names) {
    size += FieldSize(name.ByteSizeLong(), true);  // Caches each size for the write below.
  }
  grpc_slice slice = grpc_slice_malloc(size);
  uint8_t* out = GRPC_SLICE_START_PTR(slice);
  out = WriteField(kVersionInfo, response.system_version_info, false, out);
  for (const DeltaResponse::Resource& resource : response.resources) {
    out = WriteField(kResources, resource.Encoded(), true, out);
  }
  out = WriteField(kTypeUrl, response.type_url, false, out);
  out = WriteField(kNonce, response.nonce, false, out);
  for (const std::string& name : response.removed_resources) {
    out = WriteField(kRemovedResources, name, true, out);
  }
  for (const auto& name : response.removed_resource_names) {
    out = CodedOutputStream::WriteTagToArray(LengthDelimitedTag(kRemovedResourceNames), out);
    out = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(name.GetCachedSize()), out);
    out = name.SerializeWithCachedSizesToArray(out);
  }
  return Adopt(slice);
}

grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  grpc_slice slice = grpc_slice_malloc(size);
  message.SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(slice));
  return Adopt(slice);
}

bool DecodeMessage(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* message) {
  message->Clear();
  bool parsed = false;
  grpc::Slice slice;
  if (buffer->TrySingleSlice(&slice).ok()) {
    // A request that came in one piece (nearly all do, an ACK always): parsed
    // from the flat bytes, without the stream a reader puts around them.
    parsed = message->ParseFromArray(slice.begin(), static_cast<int>(slice.size()));
  } else {
    grpc::ProtoBufferReader reader(buffer);
    parsed = reader.status().ok() && message->ParseFromZeroCopyStream(&reader);
  }
  buffer->Clear();
  return parsed;
}

}  // namespace facet::xds
