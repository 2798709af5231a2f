#include "controller/objects/fields.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "xds_server/common/did_you_mean.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {

void AddError(std::vector<xds::Finding>* findings, absl::string_view field,
              absl::string_view message) {
  findings->push_back(
      {xds::Severity::kError, "InvalidSpec", std::string(field), std::string(message)});
}

bool IsString(const YAML::Node& node) {
  return node.IsScalar() && json::ClassifyScalar(node) == json::ScalarKind::kString;
}

std::string StringField(const YAML::Node& parent, const char* key, const std::string& path,
                        std::vector<xds::Finding>* findings) {
  YAML::Node node = json::Child(parent, key);
  if (!node.IsDefined() || node.IsNull()) return "";
  if (!IsString(node)) {
    AddError(findings, path,
             absl::StrCat("expected a string, found ", json::DescribeNode(node),
                          node.IsScalar() ? "; quote it to make it a string" : ""));
    return "";
  }
  return node.Scalar();
}

void CheckKnownFields(const YAML::Node& map, const std::string& path,
                      absl::Span<const absl::string_view> known,
                      std::vector<xds::Finding>* findings) {
  for (const auto& entry : map) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
    bool found = false;
    for (absl::string_view k : known) found = found || k == key;
    if (!found) {
      AddError(findings, absl::StrCat(path, ".", key),
               absl::StrCat("unknown field; expected one of ", absl::StrJoin(known, ", "),
                            DidYouMean(key, std::vector<std::string>(known.begin(), known.end()))));
    }
  }
}

const RE2& DnsSubdomain() {
  static const RE2* const kPattern =
      new RE2(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  return *kPattern;
}

const RE2& DnsLabel() {
  static const RE2* const kPattern = new RE2(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?)");
  return *kPattern;
}

std::string ObjectName(const YAML::Node& metadata) {
  const YAML::Node name = json::Child(metadata, "name");
  return IsString(name) ? name.Scalar() : "";
}

void CheckObjectName(const std::string& name, std::vector<xds::Finding>* findings) {
  if (!RE2::FullMatch(name, DnsSubdomain()) || name.size() > 253) {
    AddError(findings, "metadata.name",
             absl::StrCat("\"", absl::CHexEscape(name),
                          "\" is not a valid Kubernetes name (lower-case RFC 1123 subdomain)"));
  }
}

std::string ObjectNamespace(const YAML::Node& metadata, absl::string_view default_namespace,
                            std::vector<xds::Finding>* findings) {
  const YAML::Node node = json::Child(metadata, "namespace");
  const std::string ns = node.IsScalar() ? node.Scalar() : "";
  if (ns.empty()) return std::string(default_namespace);
  if (ns.size() > 63 || !RE2::FullMatch(ns, DnsLabel())) {
    AddError(findings, "metadata.namespace",
             absl::StrCat("\"", absl::CHexEscape(ns),
                          "\" is not a valid Kubernetes namespace (lower-case RFC 1123 label, at "
                          "most 63 characters)"));
  }
  return ns;
}

int64_t ObjectGeneration(const YAML::Node& metadata) {
  const YAML::Node generation = json::Child(metadata, "generation");
  return generation.IsScalar() ? generation.as<int64_t>(0) : 0;
}

}  // namespace facet::controller
