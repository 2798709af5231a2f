#include "xds_server/json/yaml_json.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "re2/re2.h"
#include "xds_server/json/yaml_detail.h"

namespace facet::json {
namespace {

using DetailNode = YAML::detail::node;
using internal::YamlDetailAccess;

bool IsPlainTag(const std::string& tag) { return tag == "?" || tag.empty(); }

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

// ClassifyScalar for a defined scalar with this tag and text.
ScalarKind ClassifyText(const std::string& tag, const std::string& text) {
  if (!IsPlainTag(tag)) return ScalarKind::kString;
  if (MatchesAny(text, {"null", "Null", "NULL", "~", ""})) return ScalarKind::kNull;
  if (MatchesAny(text, {"true", "True", "TRUE", "false", "False", "FALSE"})) {
    return ScalarKind::kBool;
  }
  // Every integer and float of the patterns starts with one of these.
  if (absl::string_view("+-.0123456789").find(text[0]) == absl::string_view::npos) {
    return ScalarKind::kString;
  }
  if (RE2::FullMatch(text, IntegerPattern())) return ScalarKind::kInteger;
  if (RE2::FullMatch(text, FloatPattern())) return ScalarKind::kFloat;
  return ScalarKind::kString;
}

absl::Status TooLong(absl::string_view path, size_t max_bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, ": longer than ", max_bytes, " bytes as JSON, the limit"));
}

// Writes the JSON text of a document's nodes, read in place; the path of a
// node is made only for an error.
class JsonWriter {
 public:
  JsonWriter(const YAML::Node& root, absl::string_view root_path, size_t max_bytes,
             std::string* out)
      : memory_(YamlDetailAccess::MemoryOf(root)),
        root_path_(root_path),
        max_bytes_(max_bytes),
        out_(out) {}

  // Appends `node` (null: a Node without one, which is null).
  absl::Status Append(const DetailNode* node, int depth) {
    if (depth > 100) {
      return absl::InvalidArgumentError(absl::StrCat(Path(), ": nested more than 100 levels deep"));
    }
    if (out_->size() > max_bytes_) return TooLong(Path(), max_bytes_);
    switch (node == nullptr ? YAML::NodeType::Null : node->type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out_->append("null");
        return absl::OkStatus();
      case YAML::NodeType::Sequence: {
        out_->push_back('[');
        const size_t size = node->size();
        size_t i = 0;
        for (auto it = node->begin(); it != node->end() && i < size; ++it, ++i) {
          if (i > 0) out_->push_back(',');
          steps_.push_back({absl::string_view(), i});
          absl::Status s = Append((*it).pNode, depth + 1);
          steps_.pop_back();
          if (!s.ok()) return s;
        }
        out_->push_back(']');
        return absl::OkStatus();
      }
      case YAML::NodeType::Map: {
        out_->push_back('{');
        bool first = true;
        for (auto it = node->begin(); it != node->end(); ++it) {
          const DetailNode& key = *(*it).first;
          if (key.type() != YAML::NodeType::Scalar) {
            return absl::InvalidArgumentError(absl::StrCat(
                Path(), ": map keys must be strings, found ",
                DescribeNode(YamlDetailAccess::Wrap(const_cast<DetailNode&>(key), memory_))));
          }
          if (!first) out_->push_back(',');
          first = false;
          AppendJsonString(key.scalar(), out_);
          out_->push_back(':');
          steps_.push_back({key.scalar(), 0});
          absl::Status s = Append((*it).second, depth + 1);
          steps_.pop_back();
          if (!s.ok()) return s;
        }
        out_->push_back('}');
        return absl::OkStatus();
      }
      case YAML::NodeType::Scalar:
        break;
    }
    AppendScalar(node->tag(), node->scalar());
    return absl::OkStatus();
  }

 private:
  // A map key, or a list index when `key` is null.
  struct Step {
    absl::string_view key;
    size_t index = 0;
  };

  std::string Path() const {
    std::string path(root_path_);
    for (const Step& step : steps_) {
      if (step.key.data() == nullptr) {
        absl::StrAppend(&path, "[", step.index, "]");
      } else {
        absl::StrAppend(&path, ".", step.key);
      }
    }
    return path;
  }

  void AppendScalar(const std::string& tag, const std::string& text) {
    std::string* out = out_;
    switch (ClassifyText(tag, text)) {
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
  }

  const YAML::detail::shared_memory_holder& memory_;
  const absl::string_view root_path_;
  const size_t max_bytes_;
  std::string* const out_;
  std::vector<Step> steps_;
};

void Walk(const DetailNode* node, YamlVisitor& visitor) {
  switch (node == nullptr ? YAML::NodeType::Null : node->type()) {
    case YAML::NodeType::Undefined:
      visitor.Undefined();
      return;
    case YAML::NodeType::Null:
      visitor.Null();
      return;
    case YAML::NodeType::Scalar:
      visitor.Scalar(node->tag(), node->scalar());
      return;
    case YAML::NodeType::Sequence:
      visitor.List(node->size());
      for (auto it = node->begin(); it != node->end(); ++it) Walk((*it).pNode, visitor);
      return;
    case YAML::NodeType::Map:
      visitor.Map(node->size());
      for (auto it = node->begin(); it != node->end(); ++it) {
        Walk((*it).first, visitor);
        Walk((*it).second, visitor);
      }
      return;
  }
}

}  // namespace

ScalarKind ClassifyScalar(const YAML::Node& node) {
  if (node.IsNull() || !node.IsDefined()) return ScalarKind::kNull;
  return ClassifyText(node.Tag(), node.Scalar());
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
    // Read in place: iterating the Node would make three Nodes per entry.
    const DetailNode& node = *YamlDetailAccess::NodeOf(map);
    for (auto it = node.begin(); it != node.end(); ++it) {
      const DetailNode& entry_key = *(*it).first;
      if (entry_key.type() == YAML::NodeType::Scalar && entry_key.scalar() == key) {
        return YamlDetailAccess::Wrap(const_cast<DetailNode&>(*(*it).second),
                                      YamlDetailAccess::MemoryOf(map));
      }
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

absl::StatusOr<std::string> YamlToJson(const YAML::Node& node, absl::string_view path,
                                       size_t max_bytes) {
  node.Type();  // Throws for an invalid Node (a missing key's), as reading it does.
  std::string out;
  JsonWriter writer(node, path, max_bytes, &out);
  if (absl::Status s = writer.Append(YamlDetailAccess::NodeOf(node), 0); !s.ok()) return s;
  if (out.size() > max_bytes) return TooLong(path, max_bytes);
  return out;
}

void WalkYaml(const YAML::Node& node, YamlVisitor& visitor) {
  node.Type();  // Throws for an invalid Node (a missing key's), as reading it does.
  Walk(YamlDetailAccess::NodeOf(node), visitor);
}

}  // namespace facet::json
