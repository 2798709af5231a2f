#include "controller/gateway/model/api_fields.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/objects/fields.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller::gateway {
namespace {

// Patterns as the CRDs write them (RE2 reads them as they are).
#define FACET_DNS_SUBDOMAIN R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)"

const StringRule* NewRule(size_t min_length, size_t max_length, const char* pattern) {
  return new StringRule{min_length, max_length, pattern[0] == '\0' ? nullptr : new RE2(pattern),
                        pattern};
}

size_t CodePoints(absl::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace

const StringRule& GroupRule() {
  static const StringRule* const kRule = NewRule(0, 253, "^$|^" FACET_DNS_SUBDOMAIN "$");
  return *kRule;
}

const StringRule& KindRule() {
  static const StringRule* const kRule = NewRule(1, 63, "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$");
  return *kRule;
}

const StringRule& ObjectNameRule() {
  static const StringRule* const kRule = NewRule(1, 253, "");
  return *kRule;
}

const StringRule& NamespaceRule() {
  static const StringRule* const kRule = NewRule(1, 63, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return *kRule;
}

const StringRule& SectionNameRule() {
  static const StringRule* const kRule = NewRule(1, 253, "^" FACET_DNS_SUBDOMAIN "$");
  return *kRule;
}

const StringRule& HostnameRule() {
  static const StringRule* const kRule = NewRule(1, 253, R"(^(\*\.)?)" FACET_DNS_SUBDOMAIN "$");
  return *kRule;
}

const StringRule& HeaderNameRule() {
  static const StringRule* const kRule = NewRule(1, 256, R"(^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$)");
  return *kRule;
}

const StringRule& HeaderValueRule() {
  static const StringRule* const kRule = NewRule(1, 4096, "");
  return *kRule;
}

#undef FACET_DNS_SUBDOMAIN

void SpecReader::Error(std::string field, std::string message, absl::string_view reason) {
  findings_.push_back(
      {xds::Severity::kError, std::string(reason), std::move(field), std::move(message)});
}

std::string Quoted(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

std::string Item(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

bool SpecReader::ExpectMap(const YAML::Node& node, const std::string& field) {
  if (node.IsMap()) return true;
  Error(field, absl::StrCat("expected a map, found ", json::DescribeNode(node)));
  return false;
}

void SpecReader::CheckKnown(const YAML::Node& map, const std::string& path,
                            absl::Span<const absl::string_view> known) {
  CheckKnownFields(map, path, known, &findings_);
}

YAML::Node SpecReader::Map(const YAML::Node& parent, const std::string& path, absl::string_view key,
                           bool required) {
  const YAML::Node node = json::Child(parent, key);
  const std::string field = absl::StrCat(path, ".", key);
  if (!node.IsDefined() || node.IsNull()) {
    if (required) Error(field, "is required");
    return YAML::Node(YAML::NodeType::Undefined);
  }
  if (!node.IsMap()) {
    Error(field, absl::StrCat("expected a map, found ", json::DescribeNode(node)));
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return node;
}

std::vector<YAML::Node> SpecReader::List(const YAML::Node& parent, const std::string& path,
                                         absl::string_view key, size_t min_items,
                                         size_t max_items) {
  const YAML::Node node = json::Child(parent, key);
  const std::string field = absl::StrCat(path, ".", key);
  std::vector<YAML::Node> items;
  if (!node.IsDefined() || node.IsNull()) {
    if (min_items > 0) Error(field, absl::StrCat("is required: at least ", min_items, " entry"));
    return items;
  }
  if (!node.IsSequence()) {
    Error(field, absl::StrCat("expected a list, found ", json::DescribeNode(node)));
    return items;
  }
  if (node.size() < min_items) {
    Error(field,
          absl::StrCat("has ", node.size(), " entries; at least ", min_items, " are required"));
  } else if (node.size() > max_items) {
    Error(field, absl::StrCat("has ", node.size(), " entries; at most ", max_items,
                              " are allowed (the CRD's bound); the rest are not read"));
  }
  for (const YAML::Node& item : node) {
    if (items.size() == max_items) break;
    items.push_back(item);
  }
  return items;
}

std::optional<std::string> SpecReader::String(const YAML::Node& parent, const std::string& path,
                                              absl::string_view key, const StringRule& rule,
                                              bool required) {
  return StringAt(json::Child(parent, key), absl::StrCat(path, ".", key), rule, required);
}

std::optional<std::string> SpecReader::StringAt(const YAML::Node& node, const std::string& field,
                                                const StringRule& rule, bool required) {
  if (!node.IsDefined() || node.IsNull()) {
    if (required) Error(field, "is required");
    return std::nullopt;
  }
  if (!IsString(node)) {
    Error(field, absl::StrCat("expected a string, found ", json::DescribeNode(node),
                              node.IsScalar() ? "; quote it to make it a string" : ""));
    return std::nullopt;
  }
  const std::string& text = node.Scalar();
  const size_t length = CodePoints(text);
  if (length < rule.min_length) {
    Error(field, rule.min_length == 1 ? std::string("is empty")
                                      : absl::StrCat("is ", length, " characters long; at least ",
                                                     rule.min_length, " are required"));
    return std::nullopt;
  }
  if (rule.max_length > 0 && length > rule.max_length) {
    Error(field, absl::StrCat("is ", length, " characters long; at most ", rule.max_length,
                              " are allowed"));
    return std::nullopt;
  }
  if (rule.pattern != nullptr && !RE2::FullMatch(text, *rule.pattern)) {
    Error(field, absl::StrCat(Quoted(text), " does not match ", rule.pattern_text));
    return std::nullopt;
  }
  return text;
}

std::optional<int64_t> SpecReader::Integer(const YAML::Node& parent, const std::string& path,
                                           absl::string_view key, int64_t min, int64_t max,
                                           bool required) {
  const YAML::Node node = json::Child(parent, key);
  const std::string field = absl::StrCat(path, ".", key);
  if (!node.IsDefined() || node.IsNull()) {
    if (required) Error(field, "is required");
    return std::nullopt;
  }
  int64_t value = 0;
  if (!node.IsScalar() || json::ClassifyScalar(node) != json::ScalarKind::kInteger ||
      !absl::SimpleAtoi(node.Scalar(), &value)) {
    Error(field, absl::StrCat("expected an integer, found ", json::DescribeNode(node)));
    return std::nullopt;
  }
  if (value < min || value > max) {
    Error(field, absl::StrCat(value, " is not between ", min, " and ", max));
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> SpecReader::Enum(const YAML::Node& parent, const std::string& path,
                                            absl::string_view key,
                                            absl::Span<const absl::string_view> values,
                                            absl::string_view reason, bool required) {
  static const StringRule kAny;
  std::optional<std::string> value = String(parent, path, key, kAny, required);
  if (!value.has_value()) return std::nullopt;
  for (absl::string_view allowed : values) {
    if (*value == allowed) return value;
  }
  Error(absl::StrCat(path, ".", key),
        absl::StrCat(Quoted(*value), " is not supported; expected one of ",
                     absl::StrJoin(values, ", ")),
        reason);
  return std::nullopt;
}

ObjectReference ReadReference(SpecReader& reader, const YAML::Node& node, const std::string& path,
                              const ReferenceShape& shape) {
  ObjectReference ref;
  ref.field = path;
  ref.group = reader.String(node, path, "group", GroupRule(), !shape.default_group.has_value())
                  .value_or(shape.default_group.value_or(""));
  ref.kind = reader.String(node, path, "kind", KindRule(), !shape.default_kind.has_value())
                 .value_or(shape.default_kind.value_or(""));
  ref.name = reader.String(node, path, "name", ObjectNameRule(), /*required=*/true).value_or("");
  if (shape.has_namespace) {
    ref.namespace_ = reader.String(node, path, "namespace", NamespaceRule()).value_or("");
  }
  if (shape.has_section_name) {
    ref.section_name = reader.String(node, path, "sectionName", SectionNameRule());
  }
  if (shape.has_port) {
    if (std::optional<int64_t> port = reader.Integer(node, path, "port", 1, 65535)) {
      ref.port = static_cast<int>(*port);
    }
  }
  return ref;
}

}  // namespace facet::controller::gateway
