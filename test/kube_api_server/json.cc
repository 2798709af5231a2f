#include "test/kube_api_server/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "xds_server/json/yaml_json.h"
#include "yaml-cpp/yaml.h"

namespace facet::testing {
namespace {

constexpr int kMaxDepth = 200;

// GCC 12 reports a false -Wmaybe-uninitialized when a std::variant-holding
// Json moves into absl::StatusOr in the parser below.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Json> ParseDocument() {
    auto value = ParseValue(0);
    if (!value.ok()) return value;
    SkipWhitespace();
    if (pos_ != text_.size()) return Error("unexpected data after the JSON value");
    return value;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", pos_, ": ", what));
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(absl::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }

  absl::StatusOr<Json> ParseValue(int depth) {
    if (depth > kMaxDepth) return Error("nesting too deep");
    SkipWhitespace();
    if (pos_ >= text_.size()) return Error("unexpected end of input");
    char c = text_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') {
      std::string s;
      if (absl::Status status = ParseString(&s); !status.ok()) return status;
      return Json(std::move(s));
    }
    if (Consume("true")) return Json(true);
    if (Consume("false")) return Json(false);
    if (Consume("null")) return Json();
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    return Error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  absl::StatusOr<Json> ParseObject(int depth) {
    ++pos_;  // '{'
    Json::Object object;
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Json(std::move(object));
    }
    while (true) {
      SkipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a string key");
      std::string key;
      if (absl::Status status = ParseString(&key); !status.ok()) return status;
      SkipWhitespace();
      if (!Consume(":")) return Error("expected ':'");
      auto value = ParseValue(depth + 1);
      if (!value.ok()) return value.status();
      object[std::move(key)] = *std::move(value);
      SkipWhitespace();
      if (Consume(",")) continue;
      if (Consume("}")) return Json(std::move(object));
      return Error("expected ',' or '}'");
    }
  }

  absl::StatusOr<Json> ParseArray(int depth) {
    ++pos_;  // '['
    Json::Array array;
    SkipWhitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Json(std::move(array));
    }
    while (true) {
      auto value = ParseValue(depth + 1);
      if (!value.ok()) return value.status();
      array.push_back(*std::move(value));
      SkipWhitespace();
      if (Consume(",")) continue;
      if (Consume("]")) return Json(std::move(array));
      return Error("expected ',' or ']'");
    }
  }

  static void AppendUtf8(uint32_t code_point, std::string* out) {
    if (code_point < 0x80) {
      out->push_back(static_cast<char>(code_point));
    } else if (code_point < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
      out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else if (code_point < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    }
  }

  bool ParseHex4(uint32_t* value) {
    if (pos_ + 4 > text_.size()) return false;
    *value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      *value <<= 4;
      if (c >= '0' && c <= '9') {
        *value |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        *value |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        *value |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  absl::Status ParseString(std::string* out) {
    ++pos_;  // '"'
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      char escape = text_[pos_++];
      switch (escape) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t code_point;
          if (!ParseHex4(&code_point)) return Error("bad \\u escape");
          if (code_point >= 0xD800 && code_point < 0xDC00 && Consume("\\u")) {
            uint32_t low;
            if (!ParseHex4(&low) || low < 0xDC00 || low > 0xDFFF) {
              return Error("bad surrogate pair");
            }
            code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(code_point, out);
          break;
        }
        default:
          return Error("bad escape");
      }
    }
    return Error("unterminated string");
  }

  absl::StatusOr<Json> ParseNumber() {
    size_t start = pos_;
    bool is_float = false;
    if (text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c >= '0' && c <= '9') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        is_float = true;
        ++pos_;
      } else {
        break;
      }
    }
    std::string number(text_.substr(start, pos_ - start));
    if (!is_float) {
      int64_t value;
      if (absl::SimpleAtoi(number, &value)) return Json(value);
    }
    double value;
    if (!absl::SimpleAtod(number, &value)) return Error("bad number");
    return Json(value);
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

std::string FormatDouble(double value) {
  if (std::isnan(value) || std::isinf(value)) return "null";
  if (value == std::floor(value) && std::fabs(value) < 1e21) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.0f", value);
    return buffer;
  }
  char buffer[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

// Splits an RFC 6901 JSON pointer into unescaped tokens.
absl::StatusOr<std::vector<std::string>> SplitPointer(const std::string& pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON pointer \"", pointer, "\" must start with '/'"));
  }
  for (absl::string_view raw : absl::StrSplit(absl::string_view(pointer).substr(1), '/')) {
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(raw[i]);
      }
    }
    tokens.push_back(std::move(token));
  }
  return tokens;
}

absl::StatusOr<size_t> ArrayIndex(const std::string& token, size_t size, bool allow_end) {
  if (allow_end && token == "-") return size;
  size_t index;
  if (token.empty() || (token.size() > 1 && token[0] == '0') || !absl::SimpleAtoi(token, &index)) {
    return absl::FailedPreconditionError(absl::StrCat("bad array index \"", token, "\""));
  }
  if (index > size || (!allow_end && index == size)) {
    return absl::FailedPreconditionError(absl::StrCat("array index ", index, " out of range"));
  }
  return index;
}

// Returns the parent container of the location `tokens` points to.
absl::StatusOr<Json*> Parent(Json* root, const std::vector<std::string>& tokens,
                             const std::string& pointer) {
  Json* node = root;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (node->is_object()) {
      node = node->Find(tokens[i]);
    } else if (node->is_array()) {
      auto index = ArrayIndex(tokens[i], node->array().size(), /*allow_end=*/false);
      if (!index.ok()) return index.status();
      node = &node->array()[*index];
    } else {
      node = nullptr;
    }
    if (node == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("path \"", pointer, "\" does not exist"));
    }
  }
  return node;
}

absl::StatusOr<Json> GetAt(const Json& root, const std::string& pointer) {
  auto tokens = SplitPointer(pointer);
  if (!tokens.ok()) return tokens.status();
  const Json* node = &root;
  for (const std::string& token : *tokens) {
    if (node->is_object()) {
      node = node->Find(token);
    } else if (node->is_array()) {
      auto index = ArrayIndex(token, node->array().size(), /*allow_end=*/false);
      if (!index.ok()) return index.status();
      node = &node->array()[*index];
    } else {
      node = nullptr;
    }
    if (node == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("path \"", pointer, "\" does not exist"));
    }
  }
  return *node;
}

absl::Status AddAt(Json* root, const std::string& pointer, Json value) {
  auto tokens = SplitPointer(pointer);
  if (!tokens.ok()) return tokens.status();
  if (tokens->empty()) {
    *root = std::move(value);
    return absl::OkStatus();
  }
  auto parent = Parent(root, *tokens, pointer);
  if (!parent.ok()) return parent.status();
  const std::string& last = tokens->back();
  if ((*parent)->is_object()) {
    (*parent)->object()[last] = std::move(value);
    return absl::OkStatus();
  }
  if ((*parent)->is_array()) {
    Json::Array& array = (*parent)->array();
    auto index = ArrayIndex(last, array.size(), /*allow_end=*/true);
    if (!index.ok()) return index.status();
    array.insert(array.begin() + static_cast<std::ptrdiff_t>(*index), std::move(value));
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat("path \"", pointer, "\" does not exist"));
}

absl::Status RemoveAt(Json* root, const std::string& pointer) {
  auto tokens = SplitPointer(pointer);
  if (!tokens.ok()) return tokens.status();
  if (tokens->empty()) return absl::FailedPreconditionError("cannot remove the whole document");
  auto parent = Parent(root, *tokens, pointer);
  if (!parent.ok()) return parent.status();
  const std::string& last = tokens->back();
  if ((*parent)->is_object()) {
    if (!(*parent)->Erase(last)) {
      return absl::FailedPreconditionError(absl::StrCat("path \"", pointer, "\" does not exist"));
    }
    return absl::OkStatus();
  }
  if ((*parent)->is_array()) {
    Json::Array& array = (*parent)->array();
    auto index = ArrayIndex(last, array.size(), /*allow_end=*/false);
    if (!index.ok()) return index.status();
    array.erase(array.begin() + static_cast<std::ptrdiff_t>(*index));
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat("path \"", pointer, "\" does not exist"));
}

}  // namespace

absl::StatusOr<Json> Json::Parse(absl::string_view text) { return Parser(text).ParseDocument(); }

absl::StatusOr<Json> Json::ParseYaml(absl::string_view text) {
  try {
    YAML::Node node = YAML::Load(std::string(text));
    auto json = facet::json::YamlToJson(node, "");
    if (!json.ok()) return json.status();
    return Parse(*json);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML: ", e.what()));
  }
}

Json Json::StringArray(const std::vector<std::string>& values) {
  Array array;
  for (const std::string& value : values) array.push_back(Json(value));
  return Json(std::move(array));
}

double Json::double_value() const {
  if (is_int()) return static_cast<double>(int_value());
  return std::get<double>(value_);
}

const Json* Json::Find(absl::string_view key) const {
  if (!is_object()) return nullptr;
  auto it = object().find(std::string(key));
  return it == object().end() ? nullptr : &it->second;
}

Json* Json::Find(absl::string_view key) {
  if (!is_object()) return nullptr;
  auto it = object().find(std::string(key));
  return it == object().end() ? nullptr : &it->second;
}

const Json* Json::FindPath(std::initializer_list<absl::string_view> path) const {
  const Json* node = this;
  for (absl::string_view key : path) {
    node = node->Find(key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

std::string Json::GetString(std::initializer_list<absl::string_view> path) const {
  const Json* node = FindPath(path);
  return node != nullptr && node->is_string() ? node->string_value() : "";
}

Json& Json::operator[](const std::string& key) {
  if (!is_object()) value_ = Object{};
  return object()[key];
}

bool Json::Erase(absl::string_view key) {
  if (!is_object()) return false;
  return object().erase(std::string(key)) > 0;
}

void AppendJsonString(absl::string_view value, std::string* out) {
  out->push_back('"');
  for (char c : value) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out->append(buffer);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void Json::DumpTo(std::string* out) const {
  switch (type()) {
    case Type::kNull:
      out->append("null");
      break;
    case Type::kBool:
      out->append(bool_value() ? "true" : "false");
      break;
    case Type::kInt:
      absl::StrAppend(out, int_value());
      break;
    case Type::kDouble:
      out->append(FormatDouble(std::get<double>(value_)));
      break;
    case Type::kString:
      AppendJsonString(string_value(), out);
      break;
    case Type::kArray: {
      out->push_back('[');
      bool first = true;
      for (const Json& item : array()) {
        if (!first) out->push_back(',');
        first = false;
        item.DumpTo(out);
      }
      out->push_back(']');
      break;
    }
    case Type::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, item] : object()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJsonString(key, out);
        out->push_back(':');
        item.DumpTo(out);
      }
      out->push_back('}');
      break;
    }
  }
}

std::string Json::Dump() const {
  std::string out;
  DumpTo(&out);
  return out;
}

bool operator==(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number() && a.type() != b.type()) {
    return a.double_value() == b.double_value();
  }
  return a.value_ == b.value_;
}

Json MergePatch(const Json& target, const Json& patch) {
  if (!patch.is_object()) return patch;
  Json result = target.is_object() ? target : Json::MakeObject();
  for (const auto& [key, value] : patch.object()) {
    if (value.is_null()) {
      result.Erase(key);
    } else {
      const Json* current = result.Find(key);
      result[key] = MergePatch(current != nullptr ? *current : Json(), value);
    }
  }
  return result;
}

absl::StatusOr<Json> ApplyJsonPatch(const Json& target, const Json& patch) {
  if (!patch.is_array()) {
    return absl::InvalidArgumentError("a JSON patch must be an array of operations");
  }
  Json doc = target;
  for (const Json& operation : patch.array()) {
    const Json* op = operation.Find("op");
    const Json* path = operation.Find("path");
    if (op == nullptr || !op->is_string() || path == nullptr || !path->is_string()) {
      return absl::InvalidArgumentError(
          "every JSON patch operation needs string \"op\" and \"path\"");
    }
    const std::string& name = op->string_value();
    const std::string& pointer = path->string_value();
    const Json* value = operation.Find("value");
    const Json* from = operation.Find("from");
    absl::Status status;
    if (name == "add" || name == "replace" || name == "test") {
      if (value == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("operation \"", name, "\" needs \"value\""));
      }
      if (name == "add") {
        status = AddAt(&doc, pointer, *value);
      } else if (name == "replace") {
        status = GetAt(doc, pointer).status();
        if (status.ok()) status = RemoveAt(&doc, pointer);
        if (status.ok()) status = AddAt(&doc, pointer, *value);
        if (pointer.empty()) {
          doc = *value;
          status = absl::OkStatus();
        }
      } else {
        auto current = GetAt(doc, pointer);
        if (!current.ok()) {
          status = current.status();
        } else if (*current != *value) {
          status = absl::FailedPreconditionError(
              absl::StrCat("testing value ", pointer, " failed: values differ"));
        }
      }
    } else if (name == "remove") {
      status = RemoveAt(&doc, pointer);
    } else if (name == "move" || name == "copy") {
      if (from == nullptr || !from->is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("operation \"", name, "\" needs \"from\""));
      }
      auto source = GetAt(doc, from->string_value());
      if (!source.ok()) {
        status = source.status();
      } else {
        if (name == "move") status = RemoveAt(&doc, from->string_value());
        if (status.ok()) status = AddAt(&doc, pointer, *std::move(source));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown JSON patch operation \"", name, "\""));
    }
    if (!status.ok()) return status;
  }
  return doc;
}

}  // namespace facet::testing
