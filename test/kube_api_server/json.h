// A small JSON value for the test Kubernetes API server: the same data model as
// the apiserver's unstructured objects (integers kept as int64, objects with
// sorted keys, as Go's encoding/json writes maps), plus RFC 7386 merge patch,
// RFC 6902 JSON patch and YAML input for apply patches.
#ifndef FACET_TEST_KUBE_API_SERVER_JSON_H_
#define FACET_TEST_KUBE_API_SERVER_JSON_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace facet::testing {

// A JSON value. Value type; thread-compatible.
class Json {
 public:
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::map<std::string, Json>;

  Json() = default;
  Json(std::nullptr_t) {}                                        // NOLINT: implicit by design
  Json(bool value) : value_(value) {}                            // NOLINT
  Json(int value) : value_(static_cast<int64_t>(value)) {}       // NOLINT
  Json(int64_t value) : value_(value) {}                         // NOLINT
  Json(double value) : value_(value) {}                          // NOLINT
  Json(const char* value) : value_(std::string(value)) {}        // NOLINT
  Json(std::string value) : value_(std::move(value)) {}          // NOLINT
  Json(absl::string_view value) : value_(std::string(value)) {}  // NOLINT
  Json(Array value) : value_(std::move(value)) {}                // NOLINT
  Json(Object value) : value_(std::move(value)) {}               // NOLINT

  static Json MakeObject() { return Json(Object{}); }
  static Json MakeArray() { return Json(Array{}); }
  // Returns an array of the strings `values`.
  static Json StringArray(const std::vector<std::string>& values);

  // Parses one JSON document (trailing whitespace allowed). InvalidArgument on
  // malformed input, naming the byte offset.
  static absl::StatusOr<Json> Parse(absl::string_view text);
  // Parses one YAML document (JSON is YAML) with YAML 1.2 core-schema scalars
  // (facet::json::YamlToJson): quoted scalars are strings, plain ones may be
  // null, bool, int or float.
  static absl::StatusOr<Json> ParseYaml(absl::string_view text);

  Type type() const { return static_cast<Type>(value_.index()); }
  bool is_null() const { return type() == Type::kNull; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_number() const { return type() == Type::kInt || type() == Type::kDouble; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }

  // Accessors; calling one for the wrong type is a programming error (crash).
  bool bool_value() const { return std::get<bool>(value_); }
  int64_t int_value() const { return std::get<int64_t>(value_); }
  double double_value() const;
  const std::string& string_value() const { return std::get<std::string>(value_); }
  const Array& array() const { return std::get<Array>(value_); }
  Array& array() { return std::get<Array>(value_); }
  const Object& object() const { return std::get<Object>(value_); }
  Object& object() { return std::get<Object>(value_); }

  // Returns the member `key` of an object, or nullptr (also for non-objects).
  const Json* Find(absl::string_view key) const;
  Json* Find(absl::string_view key);
  // Follows `path` through nested objects; nullptr when any step is missing.
  const Json* FindPath(std::initializer_list<absl::string_view> path) const;
  // Returns the string at `path`, or "" when missing or not a string.
  std::string GetString(std::initializer_list<absl::string_view> path) const;
  // Returns the member `key`, turning a non-object into an empty object first.
  Json& operator[](const std::string& key);
  // Removes member `key` of an object; returns whether it existed.
  bool Erase(absl::string_view key);

  // Serializes compactly (no whitespace), object keys sorted.
  std::string Dump() const;
  void DumpTo(std::string* out) const;

  friend bool operator==(const Json& a, const Json& b);
  friend bool operator!=(const Json& a, const Json& b) { return !(a == b); }

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> value_;
};

// Applies an RFC 7386 JSON merge patch to `target`.
Json MergePatch(const Json& target, const Json& patch);

// Applies an RFC 6902 JSON patch (an array of operations). InvalidArgument for
// a malformed patch document, FailedPrecondition when an operation cannot be
// applied (missing path, failed "test").
absl::StatusOr<Json> ApplyJsonPatch(const Json& target, const Json& patch);

// Appends `value` as a JSON string literal (quoted and escaped) to `out`.
void AppendJsonString(absl::string_view value, std::string* out);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_JSON_H_
