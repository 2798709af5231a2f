// Responses encoded for gRPC's raw (ByteBuffer) stream methods, and requests
// decoded from them.
#ifndef FACET_XDS_SERVER_ADS_WIRE_H_
#define FACET_XDS_SERVER_ADS_WIRE_H_

#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "xds_server/ads/stream_state.h"

namespace facet::xds {

// Encodes `response` as a serialized envoy.service.discovery.v3.
// DiscoveryResponse, in one buffer: the bytes DiscoveryResponse::
// SerializeAsString gives for response.ToMessage(), without building the
// message (each resource's shared bytes are copied once, into the buffer).
grpc::ByteBuffer EncodeSotwResponse(const SotwResponse& response);

// Encodes `response` as a serialized envoy.service.discovery.v3.
// DeltaDiscoveryResponse, in one buffer, without building the message: each
// resource's shared Resource wrapper is copied once, into the buffer. Parsed,
// the bytes are response.ToMessage().
grpc::ByteBuffer EncodeDeltaResponse(const DeltaResponse& response);

// Serializes `message` into one buffer.
grpc::ByteBuffer EncodeMessage(const google::protobuf::MessageLite& message);

// Parses `buffer` into `message` (cleared first), as gRPC parses a typed
// method's request; returns false when the bytes are not such a message.
// Consumes `buffer`.
bool DecodeMessage(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* message);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_WIRE_H_
