// JSON values for the test Kubernetes API server: nlohmann::json, whose
// objects keep their keys sorted as Go's encoding/json writes maps, with the
// parsing, lookup and JSON patch steps the server needs returning
// absl::Status instead of throwing.
#ifndef FACET_TEST_KUBE_API_SERVER_JSON_H_
#define FACET_TEST_KUBE_API_SERVER_JSON_H_

#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace facet::testing {

using Json = nlohmann::json;

// Parses one JSON document (surrounding whitespace allowed) as the
// apiserver's unstructured decoding reads numbers: integral values become
// int64 ("1.0" is 1), others double. InvalidArgument on malformed input
// (naming the byte offset) and on nesting deeper than 200 levels.
absl::StatusOr<Json> ParseJson(absl::string_view text);

// Parses one YAML document (JSON is YAML) with YAML 1.2 core-schema scalars
// (facet::json::YamlToJson): quoted scalars are strings, plain ones may be
// null, bool, int or float. InvalidArgument on malformed input.
absl::StatusOr<Json> ParseYaml(absl::string_view text);

// Serializes `value` compactly, object keys sorted; invalid UTF-8 in strings
// becomes U+FFFD, as Go's encoding/json writes it.
std::string Dump(const Json& value);

// Returns the member `key` of an object, or nullptr (also for non-objects).
const Json* Find(const Json& value, absl::string_view key);
// Follows `path` through nested objects; nullptr when any step is missing.
const Json* FindPath(const Json& value, std::initializer_list<absl::string_view> path);
// Returns the string at `path`, or "" when missing or not a string.
std::string GetString(const Json& value, std::initializer_list<absl::string_view> path);

// Returns the member `key` of `value`, first turning `value` into an empty
// object when it is anything else (a request may carry "metadata": "x").
Json& Member(Json& value, const std::string& key);

// Applies an RFC 6902 JSON patch (nlohmann::json::patch) to `target`.
// InvalidArgument, with the message kube-apiserver's decoder gives, when
// `patch` is not an array of objects (its 400); FailedPrecondition when an
// operation does not apply: a missing path, an index out of range, a failed
// "test" (its 422). A null patch changes nothing, as there.
absl::StatusOr<Json> ApplyJsonPatch(const Json& target, const Json& patch);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_JSON_H_
