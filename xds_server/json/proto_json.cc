#include "xds_server/json/proto_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
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
        std::string entry_path = absl::StrCat(path, ".", entry.first.Scalar());
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
