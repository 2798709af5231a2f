#include "xds_server/json/yaml_json.h"

#include <cmath>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "re2/re2.h"

namespace facet::json {
namespace {

bool IsPlain(const YAML::Node& node) { return node.Tag() == "?" || node.Tag().empty(); }

bool MatchesAny(absl::string_view text, std::initializer_list<absl::string_view> words) {
  for (absl::string_view word : words) {
    if (text == word) return true;
  }
  return false;
}

const RE2& IntegerPattern() {
  static const RE2* const kPattern = new RE2(R"([-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)");
  return *kPattern;
}

const RE2& FloatPattern() {
  static const RE2* const kPattern =
      new RE2(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
  return *kPattern;
}

void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (unsigned char c : text) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

absl::Status TooLong(absl::string_view path, size_t max_bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, ": longer than ", max_bytes, " bytes as JSON, the limit"));
}

absl::Status AppendJson(const YAML::Node& node, absl::string_view path, int depth,
                        size_t max_bytes, std::string* out) {
  if (depth > 100) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": nested more than 100 levels deep"));
  }
  if (out->size() > max_bytes) return TooLong(path, max_bytes);
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out->append("null");
      return absl::OkStatus();
    case YAML::NodeType::Sequence: {
      out->push_back('[');
      for (size_t i = 0; i < node.size(); ++i) {
        if (i > 0) out->push_back(',');
        if (absl::Status s = AppendJson(node[i], absl::StrCat(path, "[", i, "]"), depth + 1, max_bytes, out);
            !s.ok()) {
          return s;
        }
      }
      out->push_back(']');
      return absl::OkStatus();
    }
    case YAML::NodeType::Map: {
      out->push_back('{');
      bool first = true;
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": map keys must be strings, found ", DescribeNode(entry.first)));
        }
        const std::string& key = entry.first.Scalar();
        if (!first) out->push_back(',');
        first = false;
        AppendJsonString(key, out);
        out->push_back(':');
        if (absl::Status s = AppendJson(entry.second, absl::StrCat(path, ".", key), depth + 1, max_bytes, out);
            !s.ok()) {
          return s;
        }
      }
      out->push_back('}');
      return absl::OkStatus();
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& text = node.Scalar();
  switch (ClassifyScalar(node)) {
    case ScalarKind::kNull:
      out->append("null");
      break;
    case ScalarKind::kBool:
      out->append(absl::AsciiStrToLower(text));
      break;
    case ScalarKind::kInteger: {
      if (absl::StartsWith(text, "0x") || absl::StartsWith(text, "0o")) {
        uint64_t value = std::strtoull(text.c_str() + 2, nullptr, text[1] == 'x' ? 16 : 8);
        absl::StrAppend(out, value);
      } else {
        absl::string_view digits = text;
        if (absl::ConsumePrefix(&digits, "+")) {
        }
        // Strip leading zeros, which JSON does not allow.
        bool negative = absl::ConsumePrefix(&digits, "-");
        while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
        absl::StrAppend(out, negative ? "-" : "", digits);
      }
      break;
    }
    case ScalarKind::kFloat: {
      std::string lower = absl::AsciiStrToLower(text);
      if (absl::EndsWith(lower, ".nan")) {
        out->append("\"NaN\"");
      } else if (absl::EndsWith(lower, ".inf")) {
        out->append(lower[0] == '-' ? "\"-Infinity\"" : "\"Infinity\"");
      } else {
        double value = std::strtod(text.c_str(), nullptr);
        absl::StrAppendFormat(out, "%.17g", value);
      }
      break;
    }
    case ScalarKind::kString:
      AppendJsonString(text, out);
      break;
  }
  return absl::OkStatus();
}

}  // namespace

ScalarKind ClassifyScalar(const YAML::Node& node) {
  if (node.IsNull() || !node.IsDefined()) return ScalarKind::kNull;
  if (!IsPlain(node)) return ScalarKind::kString;
  const std::string& text = node.Scalar();
  if (MatchesAny(text, {"null", "Null", "NULL", "~", ""})) return ScalarKind::kNull;
  if (MatchesAny(text, {"true", "True", "TRUE", "false", "False", "FALSE"})) {
    return ScalarKind::kBool;
  }
  if (RE2::FullMatch(text, IntegerPattern())) return ScalarKind::kInteger;
  if (RE2::FullMatch(text, FloatPattern())) return ScalarKind::kFloat;
  return ScalarKind::kString;
}

absl::string_view ScalarKindName(ScalarKind kind) {
  switch (kind) {
    case ScalarKind::kNull: return "null";
    case ScalarKind::kBool: return "a boolean";
    case ScalarKind::kInteger: return "an integer";
    case ScalarKind::kFloat: return "a number";
    case ScalarKind::kString: return "a string";
  }
  return "a value";
}

std::string DescribeNode(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: {
      ScalarKind kind = ClassifyScalar(node);
      if (kind == ScalarKind::kString) return absl::StrCat("the string \"", node.Scalar(), "\"");
      return absl::StrCat(ScalarKindName(kind), " (", node.Scalar(), ")");
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "null";
  }
  return "a value";
}

YAML::Node Child(const YAML::Node& map, absl::string_view key) {
  if (map.IsDefined() && map.IsMap()) {
    for (const auto& entry : map) {
      if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

absl::StatusOr<std::string> YamlToJson(const YAML::Node& node, absl::string_view path,
                                       size_t max_bytes) {
  std::string out;
  if (absl::Status s = AppendJson(node, path, 0, max_bytes, &out); !s.ok()) return s;
  if (out.size() > max_bytes) return TooLong(path, max_bytes);
  return out;
}

}  // namespace facet::json
