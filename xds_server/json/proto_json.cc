#include "xds_server/json/proto_json.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"
#include "xds_server/common/did_you_mean.h"
#include "xds_server/names/names.h"
#include "xds_server/json/yaml_json.h"

namespace facet::json {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr absl::string_view kTypeUrlPrefix = "type.googleapis.com/";

absl::Status Error(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::Status Expected(absl::string_view path, absl::string_view expected, const YAML::Node& got) {
  return Error(path, absl::StrCat("expected ", expected, ", found ", DescribeNode(got)));
}

bool IsNullNode(const YAML::Node& node) {
  return !node.IsDefined() || node.IsNull() ||
         (node.IsScalar() && ClassifyScalar(node) == ScalarKind::kNull);
}

class Checker {
 public:
  // Checks `node` against `descriptor`. `in_any`: `node` is the body of a
  // google.protobuf.Any, whose "@type" key was checked already.
  absl::Status CheckMessage(const YAML::Node& node, const Descriptor& descriptor,
                            const std::string& path, int depth, bool in_any = false) {
    if (depth > kMaxDepth) return Error(path, "nested too deeply");
    const std::string& full_name = descriptor.full_name();
    if (full_name == "google.protobuf.Any") return CheckAny(node, path, depth);
    if (full_name == "google.protobuf.Duration" || full_name == "google.protobuf.Timestamp" ||
        full_name == "google.protobuf.FieldMask") {
      if (!node.IsScalar() || ClassifyScalar(node) != ScalarKind::kString) {
        return Expected(path, absl::StrCat("a string (", descriptor.name(), ")"), node);
      }
      return absl::OkStatus();
    }
    if (full_name == "google.protobuf.Value") return absl::OkStatus();
    if (full_name == "google.protobuf.Struct") {
      if (!node.IsMap()) return Expected(path, "a map (Struct)", node);
      return absl::OkStatus();
    }
    if (full_name == "google.protobuf.ListValue") {
      if (!node.IsSequence()) return Expected(path, "a list (ListValue)", node);
      return absl::OkStatus();
    }
    if (IsWrapper(descriptor)) {
      return CheckScalar(node, *descriptor.FindFieldByName("value"), path);
    }
    if (!node.IsMap()) return Expected(path, absl::StrCat("a map (", full_name, ")"), node);

    absl::flat_hash_map<const google::protobuf::OneofDescriptor*, std::string> oneofs_seen;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) {
        return Error(path, absl::StrCat("map keys must be strings, found ", DescribeNode(entry.first)));
      }
      const std::string& key = entry.first.Scalar();
      if (in_any && key == "@type") continue;
      std::string field_path = absl::StrCat(path, ".", key);
      const FieldDescriptor* field = FindField(descriptor, key);
      if (field == nullptr) {
        if (key == "@type") {
          return Error(field_path, absl::StrCat("@type is only allowed in google.protobuf.Any, not in ",
                                                full_name));
        }
        return Error(field_path, absl::StrCat("unknown field \"", key, "\" in ", full_name,
                                              DidYouMean(key, FieldNames(descriptor))));
      }
      if (IsNullNode(entry.second) && field->message_type() != nullptr &&
          field->message_type()->full_name() == "google.protobuf.Value") {
        continue;
      }
      if (IsNullNode(entry.second)) continue;  // null means "default" in proto3 JSON.
      if (const auto* oneof = field->real_containing_oneof(); oneof != nullptr) {
        auto [it, inserted] = oneofs_seen.emplace(oneof, key);
        if (!inserted) {
          return Error(field_path,
                       absl::StrCat("\"", it->second, "\" and \"", key,
                                    "\" are both set, but they are alternatives (oneof ",
                                    oneof->name(), " in ", full_name, ")"));
        }
      }
      if (absl::Status s = CheckField(entry.second, *field, field_path, depth); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  static constexpr int kMaxDepth = 64;

  static bool IsWrapper(const Descriptor& descriptor) {
    return descriptor.file()->name() == "google/protobuf/wrappers.proto";
  }

  // Returns every field's proto and JSON name, for suggestions.
  static std::vector<std::string> FieldNames(const Descriptor& descriptor) {
    std::vector<std::string> names;
    for (int i = 0; i < descriptor.field_count(); ++i) {
      names.push_back(descriptor.field(i)->name());
      names.push_back(descriptor.field(i)->json_name());
    }
    return names;
  }

  static const FieldDescriptor* FindField(const Descriptor& descriptor, const std::string& key) {
    if (const FieldDescriptor* field = descriptor.FindFieldByName(key)) return field;
    for (int i = 0; i < descriptor.field_count(); ++i) {
      if (descriptor.field(i)->json_name() == key) return descriptor.field(i);
    }
    return nullptr;
  }

  static absl::Status TooMany(absl::string_view path, size_t count, absl::string_view what) {
    return Error(path, absl::StrCat("has ", count, " ", what, "; the limit per field is ",
                                    kMaxRepeatedFieldItems, " ", what));
  }

  absl::Status CheckField(const YAML::Node& node, const FieldDescriptor& field,
                          const std::string& path, int depth) {
    if (field.is_map()) {
      if (!node.IsMap()) return Expected(path, "a map", node);
      if (node.size() > kMaxRepeatedFieldItems) return TooMany(path, node.size(), "entries");
      const FieldDescriptor& value_field = *field.message_type()->FindFieldByName("value");
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          return Error(path, absl::StrCat("map keys must be strings, found ", DescribeNode(entry.first)));
        }
        const std::string& key = entry.first.Scalar();
        // As for string values: protobuf's JSON parser refuses such a key too.
        if (const size_t at = xds::InvalidUtf8Offset(key); at < key.size()) {
          return Error(path, absl::StrCat("has a map key that is not valid UTF-8 (at byte ", at,
                                          ")"));
        }
        std::string entry_path = absl::StrCat(path, ".", key);
        if (absl::Status s = CheckSingular(entry.second, value_field, entry_path, depth); !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    }
    if (field.is_repeated()) {
      if (!node.IsSequence()) return Expected(path, "a list", node);
      if (node.size() > kMaxRepeatedFieldItems) return TooMany(path, node.size(), "items");
      for (size_t i = 0; i < node.size(); ++i) {
        std::string item_path = absl::StrCat(path, "[", i, "]");
        if (IsNullNode(node[i])) return Error(item_path, "list items must not be null");
        if (absl::Status s = CheckSingular(node[i], field, item_path, depth); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
    return CheckSingular(node, field, path, depth);
  }

  absl::Status CheckSingular(const YAML::Node& node, const FieldDescriptor& field,
                             const std::string& path, int depth) {
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      return CheckMessage(node, *field.message_type(), path, depth + 1);
    }
    return CheckScalar(node, field, path);
  }

  absl::Status CheckScalar(const YAML::Node& node, const FieldDescriptor& field,
                           const std::string& path) {
    if (!node.IsScalar()) {
      return Expected(path, absl::StrCat("a scalar (", field.type_name(), ")"), node);
    }
    const ScalarKind kind = ClassifyScalar(node);
    const std::string& text = node.Scalar();
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_BOOL:
        if (kind != ScalarKind::kBool) return Expected(path, "true or false", node);
        return absl::OkStatus();
      case FieldDescriptor::CPPTYPE_STRING:
        if (kind != ScalarKind::kString) {
          return Error(path, absl::StrCat("expected a string, found ", DescribeNode(node),
                                          "; quote it to make it a string"));
        }
        // protobuf's JSON parser refuses it too, but quoting the bytes.
        if (const size_t at = xds::InvalidUtf8Offset(text);
            field.type() == FieldDescriptor::TYPE_STRING && at < text.size()) {
          return Error(path, absl::StrCat("is not valid UTF-8 (at byte ", at, ")"));
        }
        if (field.type() == FieldDescriptor::TYPE_BYTES) {
          std::string decoded;
          if (!absl::Base64Unescape(text, &decoded) && !absl::WebSafeBase64Unescape(text, &decoded)) {
            return Error(path, "expected base64-encoded bytes");
          }
        }
        return absl::OkStatus();
      case FieldDescriptor::CPPTYPE_ENUM:
        return CheckEnum(node, kind, *field.enum_type(), path);
      case FieldDescriptor::CPPTYPE_FLOAT:
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        if (kind == ScalarKind::kInteger || kind == ScalarKind::kFloat) return absl::OkStatus();
        double ignored;
        if (kind == ScalarKind::kString &&
            (text == "NaN" || text == "Infinity" || text == "-Infinity" ||
             absl::SimpleAtod(text, &ignored))) {
          return absl::OkStatus();
        }
        return Expected(path, "a number", node);
      }
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
        return CheckInteger(node, kind, field, path);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;
    }
    return absl::OkStatus();
  }

  absl::Status CheckInteger(const YAML::Node& node, ScalarKind kind, const FieldDescriptor& field,
                            const std::string& path) {
    if (kind != ScalarKind::kInteger && kind != ScalarKind::kString && kind != ScalarKind::kFloat) {
      return Expected(path, "an integer", node);
    }
    const std::string& text = node.Scalar();
    const bool is_signed = field.cpp_type() == FieldDescriptor::CPPTYPE_INT32 ||
                           field.cpp_type() == FieldDescriptor::CPPTYPE_INT64;
    const bool is_32 = field.cpp_type() == FieldDescriptor::CPPTYPE_INT32 ||
                       field.cpp_type() == FieldDescriptor::CPPTYPE_UINT32;
    if (absl::StartsWith(text, "0x") || absl::StartsWith(text, "0o")) return absl::OkStatus();
    bool ok;
    if (is_signed) {
      int64_t value;
      ok = absl::SimpleAtoi(text, &value) &&
           (!is_32 || (value >= std::numeric_limits<int32_t>::min() &&
                       value <= std::numeric_limits<int32_t>::max()));
    } else {
      uint64_t value;
      ok = absl::SimpleAtoi(text, &value) &&
           (!is_32 || value <= std::numeric_limits<uint32_t>::max());
    }
    if (!ok) {
      return Error(path, absl::StrCat("expected ", is_signed ? "" : "a non-negative ",
                                      is_signed ? "an " : "", is_32 ? "32" : "64",
                                      "-bit integer, found ", DescribeNode(node)));
    }
    return absl::OkStatus();
  }

  absl::Status CheckEnum(const YAML::Node& node, ScalarKind kind, const EnumDescriptor& type,
                         const std::string& path) {
    const std::string& text = node.Scalar();
    if (kind == ScalarKind::kString && type.FindValueByName(text) != nullptr) {
      return absl::OkStatus();
    }
    int number;
    if (kind == ScalarKind::kInteger && absl::SimpleAtoi(text, &number) &&
        type.FindValueByNumber(number) != nullptr) {
      return absl::OkStatus();
    }
    std::vector<std::string> names;
    for (int i = 0; i < type.value_count(); ++i) names.push_back(type.value(i)->name());
    return Error(path, absl::StrCat("invalid value \"", text, "\" for enum ",
                                    type.full_name(), "; expected one of ",
                                    absl::StrJoin(names, ", ")));
  }

  absl::Status CheckAny(const YAML::Node& node, const std::string& path, int depth) {
    if (!node.IsMap()) return Expected(path, "a map with \"@type\" (google.protobuf.Any)", node);
    YAML::Node type_node = Child(node, "@type");
    if (!type_node.IsDefined() || !type_node.IsScalar() ||
        ClassifyScalar(type_node) != ScalarKind::kString) {
      return Error(path, "google.protobuf.Any needs a string \"@type\" field");
    }
    const std::string& type_url = type_node.Scalar();
    const size_t slash = type_url.rfind('/');
    const std::string type_name = slash == std::string::npos ? "" : type_url.substr(slash + 1);
    const Descriptor* inner =
        type_name.empty() ? nullptr
                          : DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
    if (inner == nullptr) {
      return Error(absl::StrCat(path, ".@type"),
                   absl::StrCat("unknown type \"", type_url,
                                "\"; Facet understands the Envoy listener, route, cluster and "
                                "endpoint types and the filters and cluster extensions gRPC "
                                "clients support (see docs/validation.md)"));
    }
    if (!absl::StartsWith(type_url, kTypeUrlPrefix)) {
      return Error(absl::StrCat(path, ".@type"),
                   absl::StrCat("type URL must start with ", kTypeUrlPrefix));
    }
    const bool special = inner->file()->name() == "google/protobuf/wrappers.proto" ||
                         inner->full_name() == "google.protobuf.Duration" ||
                         inner->full_name() == "google.protobuf.Timestamp" ||
                         inner->full_name() == "google.protobuf.FieldMask" ||
                         inner->full_name() == "google.protobuf.Struct" ||
                         inner->full_name() == "google.protobuf.Value" ||
                         inner->full_name() == "google.protobuf.ListValue" ||
                         inner->full_name() == "google.protobuf.Any";
    if (special) {
      for (const auto& entry : node) {
        const std::string& key = entry.first.Scalar();
        if (key != "@type" && key != "value") {
          return Error(absl::StrCat(path, ".", key),
                       absl::StrCat("unknown field; an Any holding ", inner->full_name(),
                                    " has only \"@type\" and \"value\""));
        }
      }
      return CheckMessage(Child(node, "value"), *inner, absl::StrCat(path, ".value"), depth + 1);
    }
    // Checked in place: copying the other keys into a new node would merge
    // yaml-cpp memory pools, which costs the size of the whole document.
    return CheckMessage(node, *inner, path, depth + 1, /*in_any=*/true);
  }
};

// Writes a document that Checker accepted into a message through protobuf's
// reflection, as protobuf's JSON parser would have written the document's
// JSON form: the same values, and the same refusals, because whatever this
// writer does not decide itself (hexadecimal and octal integers, an
// integer or float it cannot parse, a value out of a float's range) makes it
// give up, and the whole message then goes through protobuf's parser.
// google.protobuf.Duration, Timestamp, FieldMask, Struct, Value and ListValue,
// whose JSON forms are special, are parsed by protobuf's parser from their
// own JSON. protobuf 3.21's parser resolves every type again on each call
// (google.protobuf.Type descriptions, a stream of conversions to the binary
// form): this writer is several times faster.
class Writer {
 public:
  // Returns false when the document needs protobuf's parser.
  bool WriteMessage(const YAML::Node& node, Message* message, bool in_any = false) {
    const Descriptor& descriptor = *message->GetDescriptor();
    const std::string& full_name = descriptor.full_name();
    if (full_name == "google.protobuf.Any") return WriteAny(node, message);
    if (IsJsonSpecial(descriptor)) return WriteFromJson(node, message);
    const Reflection& reflection = *message->GetReflection();
    if (descriptor.file()->name() == "google/protobuf/wrappers.proto") {
      return WriteSingular(node, *descriptor.FindFieldByName("value"), message, reflection);
    }
    for (const auto& entry : node) {
      const std::string& key = entry.first.Scalar();
      if (in_any && key == "@type") continue;
      const FieldDescriptor* field = FindField(descriptor, key);
      if (field == nullptr) return false;
      const YAML::Node& value = entry.second;
      if (IsNullNode(value)) {
        // Null is the default, except that a Value field holds a null value.
        if (field->message_type() == nullptr ||
            field->message_type()->full_name() != "google.protobuf.Value" || field->is_repeated()) {
          continue;
        }
      }
      if (field->is_map()) {
        if (!WriteMap(value, *field, message, reflection)) return false;
      } else if (field->is_repeated()) {
        for (const YAML::Node& item : value) {
          if (!WriteRepeated(item, *field, message, reflection)) return false;
        }
      } else if (!WriteSingular(value, *field, message, reflection)) {
        return false;
      }
    }
    return true;
  }

 private:
  static bool IsJsonSpecial(const Descriptor& descriptor) {
    const std::string& name = descriptor.full_name();
    return name == "google.protobuf.Duration" || name == "google.protobuf.Timestamp" ||
           name == "google.protobuf.FieldMask" || name == "google.protobuf.Struct" ||
           name == "google.protobuf.Value" || name == "google.protobuf.ListValue";
  }

  static const FieldDescriptor* FindField(const Descriptor& descriptor, const std::string& key) {
    if (const FieldDescriptor* field = descriptor.FindFieldByName(key)) return field;
    for (int i = 0; i < descriptor.field_count(); ++i) {
      if (descriptor.field(i)->json_name() == key) return descriptor.field(i);
    }
    return nullptr;
  }

  // protobuf's parser on the node's own JSON.
  static bool WriteFromJson(const YAML::Node& node, Message* message) {
    absl::StatusOr<std::string> json = YamlToJson(node, "", kMaxMessageJsonBytes);
    if (!json.ok()) return false;
    google::protobuf::util::JsonParseOptions options;
    return google::protobuf::util::JsonStringToMessage(*json, message, options).ok();
  }

  bool WriteAny(const YAML::Node& node, Message* any) {
    const std::string& type_url = Child(node, "@type").Scalar();
    const Descriptor* inner_type = DescriptorPool::generated_pool()->FindMessageTypeByName(
        type_url.substr(type_url.rfind('/') + 1));
    if (inner_type == nullptr) return false;
    const Message* prototype =
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(inner_type);
    if (prototype == nullptr) return false;
    std::unique_ptr<Message> inner(prototype->New());
    const bool special = inner_type->file()->name() == "google/protobuf/wrappers.proto" ||
                         IsJsonSpecial(*inner_type) ||
                         inner_type->full_name() == "google.protobuf.Any";
    if (!(special ? WriteMessage(Child(node, "value"), inner.get())
                  : WriteMessage(node, inner.get(), /*in_any=*/true))) {
      return false;
    }
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      inner->SerializeToCodedStream(&coded);
    }
    const Reflection& reflection = *any->GetReflection();
    const Descriptor& descriptor = *any->GetDescriptor();
    reflection.SetString(any, descriptor.FindFieldByNumber(1), type_url);
    reflection.SetString(any, descriptor.FindFieldByNumber(2), std::move(bytes));
    return true;
  }

  bool WriteMap(const YAML::Node& node, const FieldDescriptor& field, Message* message,
                const Reflection& reflection) {
    const Descriptor& entry_type = *field.message_type();
    const FieldDescriptor& key_field = *entry_type.FindFieldByNumber(1);
    const FieldDescriptor& value_field = *entry_type.FindFieldByNumber(2);
    for (const auto& entry : node) {
      Message* out = reflection.AddMessage(message, &field);
      const Reflection& entry_reflection = *out->GetReflection();
      const std::string& key = entry.first.Scalar();
      switch (key_field.cpp_type()) {
        case FieldDescriptor::CPPTYPE_STRING:
          entry_reflection.SetString(out, &key_field, key);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          if (key != "true" && key != "false") return false;
          entry_reflection.SetBool(out, &key_field, key == "true");
          break;
        default:
          if (!SetInteger(key, key_field, out, entry_reflection, /*repeated=*/false)) return false;
      }
      if (IsNullNode(entry.second) && value_field.message_type() == nullptr) continue;
      if (!WriteSingular(entry.second, value_field, out, entry_reflection)) return false;
    }
    return true;
  }

  bool WriteSingular(const YAML::Node& node, const FieldDescriptor& field, Message* message,
                     const Reflection& reflection) {
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      return WriteMessage(node, reflection.MutableMessage(message, &field));
    }
    return WriteScalar(node, field, message, reflection, /*repeated=*/false);
  }

  bool WriteRepeated(const YAML::Node& node, const FieldDescriptor& field, Message* message,
                     const Reflection& reflection) {
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      return WriteMessage(node, reflection.AddMessage(message, &field));
    }
    return WriteScalar(node, field, message, reflection, /*repeated=*/true);
  }

  // Parses `text` as a T and sets (or, for a repeated field, adds) it.
  template <typename T>
  static bool SetParsed(const std::string& text, const FieldDescriptor& field, Message* message,
                        const Reflection& reflection, bool repeated,
                        void (Reflection::*set)(Message*, const FieldDescriptor*, T) const,
                        void (Reflection::*add)(Message*, const FieldDescriptor*, T) const) {
    T value;
    if (!absl::SimpleAtoi(text, &value)) return false;
    (reflection.*(repeated ? add : set))(message, &field, value);
    return true;
  }

  static bool SetInteger(const std::string& text, const FieldDescriptor& field, Message* message,
                         const Reflection& reflection, bool repeated) {
    // Hexadecimal and octal forms: protobuf's parser decides.
    if (absl::StartsWith(text, "0x") || absl::StartsWith(text, "0o")) return false;
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return SetParsed<int32_t>(text, field, message, reflection, repeated,
                                  &Reflection::SetInt32, &Reflection::AddInt32);
      case FieldDescriptor::CPPTYPE_INT64:
        return SetParsed<int64_t>(text, field, message, reflection, repeated,
                                  &Reflection::SetInt64, &Reflection::AddInt64);
      case FieldDescriptor::CPPTYPE_UINT32:
        return SetParsed<uint32_t>(text, field, message, reflection, repeated,
                                   &Reflection::SetUInt32, &Reflection::AddUInt32);
      case FieldDescriptor::CPPTYPE_UINT64:
        return SetParsed<uint64_t>(text, field, message, reflection, repeated,
                                   &Reflection::SetUInt64, &Reflection::AddUInt64);
      default:
        return false;
    }
  }

  static bool WriteScalar(const YAML::Node& node, const FieldDescriptor& field, Message* message,
                          const Reflection& reflection, bool repeated) {
    if (!node.IsScalar()) return false;
    const std::string& text = node.Scalar();
    const ScalarKind kind = ClassifyScalar(node);
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_BOOL: {
        if (kind != ScalarKind::kBool) return false;
        const bool value = absl::AsciiStrToLower(text) == "true";
        repeated ? reflection.AddBool(message, &field, value)
                 : reflection.SetBool(message, &field, value);
        return true;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        if (kind != ScalarKind::kString) return false;
        std::string value = text;
        if (field.type() == FieldDescriptor::TYPE_BYTES) {
          // protobuf's parser takes either alphabet.
          if (!absl::WebSafeBase64Unescape(text, &value) && !absl::Base64Unescape(text, &value)) {
            return false;
          }
        }
        repeated ? reflection.AddString(message, &field, std::move(value))
                 : reflection.SetString(message, &field, std::move(value));
        return true;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const google::protobuf::EnumValueDescriptor* value = nullptr;
        int number = 0;
        if (kind == ScalarKind::kString) {
          value = field.enum_type()->FindValueByName(text);
        } else if (kind == ScalarKind::kInteger && absl::SimpleAtoi(text, &number)) {
          value = field.enum_type()->FindValueByNumber(number);
        }
        if (value == nullptr) return false;
        repeated ? reflection.AddEnumValue(message, &field, value->number())
                 : reflection.SetEnumValue(message, &field, value->number());
        return true;
      }
      case FieldDescriptor::CPPTYPE_FLOAT:
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double value = 0;
        const std::string lower = absl::AsciiStrToLower(text);
        if (kind == ScalarKind::kString && text == "NaN") {
          value = std::numeric_limits<double>::quiet_NaN();
        } else if (kind == ScalarKind::kString && (text == "Infinity" || text == "-Infinity")) {
          value = text[0] == '-' ? -std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::infinity();
        } else if (kind == ScalarKind::kFloat && absl::EndsWith(lower, ".nan")) {
          value = std::numeric_limits<double>::quiet_NaN();
        } else if (kind == ScalarKind::kFloat && absl::EndsWith(lower, ".inf")) {
          value = lower[0] == '-' ? -std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::infinity();
        } else if ((kind == ScalarKind::kInteger || kind == ScalarKind::kFloat) &&
                   !absl::StartsWith(text, "0x") && !absl::StartsWith(text, "0o")) {
          char* end = nullptr;
          value = std::strtod(text.c_str(), &end);
          if (end != text.c_str() + text.size() || !std::isfinite(value)) return false;
        } else {
          return false;  // Numbers in strings, hexadecimal: protobuf's parser decides.
        }
        if (field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
          if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()) {
            return false;
          }
          repeated ? reflection.AddFloat(message, &field, static_cast<float>(value))
                   : reflection.SetFloat(message, &field, static_cast<float>(value));
        } else {
          repeated ? reflection.AddDouble(message, &field, value)
                   : reflection.SetDouble(message, &field, value);
        }
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
        if (kind != ScalarKind::kInteger && kind != ScalarKind::kString) return false;
        return SetInteger(text, field, message, reflection, repeated);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return false;
    }
    return false;
  }
};

}  // namespace

absl::Status ParseMessage(const YAML::Node& node, absl::string_view path,
                          google::protobuf::Message* message) {
  message->Clear();
  if (IsNullNode(node)) return absl::OkStatus();
  Checker checker;
  std::string root(path);
  if (absl::Status s = checker.CheckMessage(node, *message->GetDescriptor(), root, 0); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> json = YamlToJson(node, path, kMaxMessageJsonBytes);
  if (absl::IsResourceExhausted(json.status())) {
    return Error(path, absl::StrCat("longer than ", kMaxMessageJsonBytes,
                                    " bytes as JSON; that is the limit for one message"));
  }
  if (!json.ok()) return json.status();
  Writer writer;
  if (writer.WriteMessage(node, message)) return absl::OkStatus();
  message->Clear();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(*json, message, options);
  if (!status.ok()) {
    // The checker accepts only what proto3 JSON allows, so this is rare (for
    // example, a malformed Duration string). protobuf's messages start with a
    // parenthesised field path when it knows one.
    return Error(path, std::string(status.message()));
  }
  return absl::OkStatus();
}

}  // namespace facet::json
