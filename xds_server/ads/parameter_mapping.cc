#include "xds_server/ads/parameter_mapping.h"

#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace facet::xds {

absl::StatusOr<ParameterMapping> ParameterMapping::Parse(absl::string_view spec) {
  ParameterMapping mapping;
  if (absl::StripAsciiWhitespace(spec).empty()) return mapping;
  std::set<std::string> seen;
  for (absl::string_view entry : absl::StrSplit(spec, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    std::pair<std::string, std::string> pair = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    std::string param(absl::StripAsciiWhitespace(pair.first));
    std::string key(absl::StripAsciiWhitespace(pair.second));
    if (key.empty()) key = param;
    if (param.empty() || (entry.find('=') != absl::string_view::npos && pair.second.empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat("node metadata mapping entry \"", entry,
                       "\": expected PARAM or PARAM=METADATA_KEY with non-empty names"));
    }
    if (!seen.insert(param).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("node metadata mapping: parameter \"", param, "\" is listed twice"));
    }
    mapping.entries_.emplace_back(std::move(param), std::move(key));
  }
  return mapping;
}

ParameterSet ParameterMapping::ParametersFor(const envoy::config::core::v3::Node& node) const {
  ParameterSet params;
  const auto& fields = node.metadata().fields();
  if (entries_.empty()) {
    for (const auto& [key, value] : fields) {
      if (value.kind_case() == google::protobuf::Value::kStringValue) {
        params.emplace(key, value.string_value());
      }
    }
    return params;
  }
  for (const auto& [param, key] : entries_) {
    auto it = fields.find(key);
    if (it != fields.end() && it->second.kind_case() == google::protobuf::Value::kStringValue) {
      params.emplace(param, it->second.string_value());
    }
  }
  return params;
}

std::string ParameterMapping::ToString() const {
  return absl::StrJoin(entries_, ",", [](std::string* out, const auto& entry) {
    absl::StrAppend(out, entry.first);
    if (entry.second != entry.first) absl::StrAppend(out, "=", entry.second);
  });
}

}  // namespace facet::xds
