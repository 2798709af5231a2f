// Reading the fields of Gateway API objects as their CRDs define them:
// types, lengths, patterns, list sizes, enums and the common references,
// each problem a finding at its field path. Internal to the model.
#ifndef FACET_CONTROLLER_GATEWAY_MODEL_API_FIELDS_H_
#define FACET_CONTROLLER_GATEWAY_MODEL_API_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "controller/gateway/model/gateway_object.h"
#include "re2/re2.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

// What a string field must be. Lengths count characters (Unicode code
// points), as the API server does.
struct StringRule {
  size_t min_length = 0;
  size_t max_length = 0;
  const RE2* pattern = nullptr;   // Must match the whole string when set.
  const char* pattern_text = "";  // The pattern as the CRD writes it, for messages.
};

// The Gateway API's common string types (shared_types.go, object_reference_types.go).
const StringRule& GroupRule();        // "" or a DNS subdomain, at most 253.
const StringRule& KindRule();         // 1-63, [a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?
const StringRule& ObjectNameRule();   // 1-253.
const StringRule& NamespaceRule();    // A DNS label, 1-63.
const StringRule& SectionNameRule();  // A DNS subdomain, 1-253.
const StringRule& HostnameRule();     // A DNS subdomain, "*." allowed first, 1-253.
const StringRule& HeaderNameRule();   // An HTTP token, 1-256.
const StringRule& HeaderValueRule();  // 1-4096.

// Reads the fields of one object into `findings`. Thread-compatible.
class SpecReader {
 public:
  explicit SpecReader(std::vector<xds::Finding>* findings) : findings_(*findings) {}

  // Records an error: reason InvalidSpec, or `reason`.
  void Error(std::string field, std::string message, absl::string_view reason = "InvalidSpec");
  // How many findings were recorded so far (to tell whether a part had any).
  size_t count() const { return findings_.size(); }

  // Returns whether `node` (a list item) is a map; records an error at
  // `field` when it is not.
  bool ExpectMap(const YAML::Node& node, const std::string& field);
  // Records an error for every key of `map` not in `known`.
  void CheckKnown(const YAML::Node& map, const std::string& path,
                  absl::Span<const absl::string_view> known);

  // Each reader takes the parent map, its path and the key; the field's path
  // is "<path>.<key>". Absent and null fields read as unset; a required one
  // is then an error.

  // Returns the field when it is a map; an error when it is something else.
  YAML::Node Map(const YAML::Node& parent, const std::string& path, absl::string_view key,
                 bool required = false);
  // Returns the items of a list field (at most `max_items` of them); errors
  // when it is not a list or its size is out of bounds.
  std::vector<YAML::Node> List(const YAML::Node& parent, const std::string& path,
                               absl::string_view key, size_t min_items, size_t max_items);
  std::optional<std::string> String(const YAML::Node& parent, const std::string& path,
                                    absl::string_view key, const StringRule& rule,
                                    bool required = false);
  // Reads `node` itself (a list item) as a string at `field`.
  std::optional<std::string> StringAt(const YAML::Node& node, const std::string& field,
                                      const StringRule& rule, bool required = false);
  std::optional<int64_t> Integer(const YAML::Node& parent, const std::string& path,
                                 absl::string_view key, int64_t min, int64_t max,
                                 bool required = false);
  // Returns a string field that must be one of `values`; another value is
  // recorded with `reason` (the Gateway API asks for UnsupportedValue).
  std::optional<std::string> Enum(const YAML::Node& parent, const std::string& path,
                                  absl::string_view key, absl::Span<const absl::string_view> values,
                                  absl::string_view reason = "InvalidSpec", bool required = false);

 private:
  std::vector<xds::Finding>& findings_;
};

// Returns "\"text\"" with C escapes, for messages.
std::string Quoted(absl::string_view text);
// Returns "path[index]".
std::string Item(absl::string_view path, size_t index);

// The shape of a reference field: its defaults and which optional parts it
// may have (the CRDs' ParentReference, BackendObjectReference,
// LocalPolicyTargetReferenceWithSectionName).
struct ReferenceShape {
  std::optional<std::string> default_group;  // Unset: group is required.
  std::optional<std::string> default_kind;   // Unset: kind is required.
  bool has_namespace = false;
  bool has_section_name = false;
  bool has_port = false;
};

// Reads a reference's own fields (not checking for unknown ones: callers
// know their extra fields). `path` is the reference's path.
ObjectReference ReadReference(SpecReader& reader, const YAML::Node& node, const std::string& path,
                              const ReferenceShape& shape);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_MODEL_API_FIELDS_H_
