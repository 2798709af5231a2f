#include "test/kube_api_server/json.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "xds_server/json/yaml_json.h"
#include "yaml-cpp/yaml.h"

namespace facet::testing {
namespace {

constexpr int kMaxDepth = 200;

std::string_view View(absl::string_view text) { return {text.data(), text.size()}; }

// The JSON kind in Go's words, as encoding/json names it in an UnmarshalTypeError.
const char* GoKind(const Json& value) {
  if (value.is_object()) return "object";
  if (value.is_array()) return "array";
  if (value.is_string()) return "string";
  if (value.is_boolean()) return "bool";
  return "number";
}

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  bool too_deep = false;
  // Drops what lies too deep (the parser itself is iterative) and reads an
  // integral number as int64, as apimachinery's unstructured decoding does
  // once an object has been stored.
  Json::parser_callback_t read = [&too_deep](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxDepth) {
      too_deep = true;
      return false;
    }
    if (event == Json::parse_event_t::value && parsed.is_number_float()) {
      const double value = parsed.get<double>();
      if (std::trunc(value) == value && value >= -9223372036854775808.0 &&
          value < 9223372036854775808.0) {
        parsed = static_cast<int64_t>(value);
      }
    }
    return true;
  };
  Json value;
  try {
    value = Json::parse(View(text), read);
  } catch (const Json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON at byte ", e.byte, ": ", e.what()));
  }
  if (too_deep) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: nesting deeper than ", kMaxDepth, " levels"));
  }
  return value;
}

absl::StatusOr<Json> ParseYaml(absl::string_view text) {
  try {
    YAML::Node node = YAML::Load(std::string(text));
    absl::StatusOr<std::string> json = facet::json::YamlToJson(node, "");
    if (!json.ok()) return json.status();
    return ParseJson(*json);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML: ", e.what()));
  }
}

std::string Dump(const Json& value) {
  return value.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

const Json* Find(const Json& value, absl::string_view key) {
  if (!value.is_object()) return nullptr;
  auto it = value.find(View(key));
  return it == value.end() ? nullptr : &*it;
}

const Json* FindPath(const Json& value, std::initializer_list<absl::string_view> path) {
  const Json* node = &value;
  for (absl::string_view key : path) {
    node = Find(*node, key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

std::string GetString(const Json& value, std::initializer_list<absl::string_view> path) {
  const Json* node = FindPath(value, path);
  return node != nullptr && node->is_string() ? node->get<std::string>() : "";
}

Json& Member(Json& value, const std::string& key) {
  if (!value.is_object()) value = Json::object();
  return value[key];
}

absl::StatusOr<Json> ApplyJsonPatch(const Json& target, const Json& patch) {
  // evanphx/json-patch's DecodePatch: a JSON array of operation objects.
  if (patch.is_null()) return target;
  if (!patch.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat("json: cannot unmarshal ", GoKind(patch),
                                                   " into Go value of type jsonpatch.Patch"));
  }
  for (const Json& operation : patch) {
    if (!operation.is_object() && !operation.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat("json: cannot unmarshal ", GoKind(operation),
                                                     " into Go value of type jsonpatch.Operation"));
    }
  }
  try {
    return target.patch(patch);
  } catch (const Json::exception& e) {
    return absl::FailedPreconditionError(e.what());
  }
}

}  // namespace facet::testing
