// YAML texts that attack a reader, for tests and benchmarks.
#ifndef FACET_XDS_SERVER_JSON_HOSTILE_YAML_H_
#define FACET_XDS_SERVER_JSON_HOSTILE_YAML_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace facet::json {

// Returns the "billion laughs": map entries a to i, each line indented by
// `indent`, where a is a list of nine strings and each later entry a list of
// nine aliases of the one before: 9^9 (387 million) strings once expanded,
// in under 900 bytes.
inline std::string AliasBomb(absl::string_view indent = "") {
  std::string text = absl::StrCat(indent, "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
  const std::string names = "abcdefghi";
  for (size_t i = 1; i < names.size(); ++i) {
    absl::StrAppend(&text, indent, names.substr(i, 1), ": &", names.substr(i, 1), " [");
    for (int j = 0; j < 9; ++j) {
      absl::StrAppend(&text, j > 0 ? "," : "", "*", names.substr(i - 1, 1));
    }
    absl::StrAppend(&text, "]\n");
  }
  return text;
}

}  // namespace facet::json

#endif  // FACET_XDS_SERVER_JSON_HOSTILE_YAML_H_
