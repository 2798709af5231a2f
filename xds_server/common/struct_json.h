// Small builders for google.protobuf.Struct documents and the one way Facet
// prints messages as JSON (proto field names), shared by the admin
// endpoints, `facet explain` and the commands' start-up output.
#ifndef FACET_XDS_SERVER_COMMON_STRUCT_JSON_H_
#define FACET_XDS_SERVER_COMMON_STRUCT_JSON_H_

#include <string>
#include <utility>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace facet::json {

inline google::protobuf::Value StringValue(std::string text) {
  google::protobuf::Value value;
  value.set_string_value(std::move(text));
  return value;
}

inline google::protobuf::Value NumberValue(double number) {
  google::protobuf::Value value;
  value.set_number_value(number);
  return value;
}

inline google::protobuf::Value BoolValue(bool b) {
  google::protobuf::Value value;
  value.set_bool_value(b);
  return value;
}

// Prints `message` as JSON with its proto field names, indented when
// `pretty`. Struct and the messages Facet prints always convert. Keys come
// in a stable order: fields by number, map keys (a Struct's included) sorted,
// as the message is serialized deterministically before it is printed
// (protobuf's own MessageToJsonString prints maps in hash order, which
// changes from one process to the next).
inline std::string MessageToJson(const google::protobuf::Message& message, bool pretty) {
  // Owned by the process; thread-safe once made.
  static google::protobuf::util::TypeResolver* const resolver =
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          "type.googleapis.com", google::protobuf::DescriptorPool::generated_pool());
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    (void)message.SerializeToCodedStream(&coded);
  }
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::BinaryToJsonString(
      resolver, "type.googleapis.com/" + message.GetDescriptor()->full_name(), binary, &out,
      options);
  return out;
}

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_COMMON_STRUCT_JSON_H_
