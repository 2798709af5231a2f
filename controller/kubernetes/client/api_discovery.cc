#include "controller/kubernetes/client/api_discovery.h"

#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"

namespace facet::controller::kube {

std::string GroupVersionPath(absl::string_view group_version) {
  if (group_version.find('/') == absl::string_view::npos) {
    return absl::StrCat("/api/", group_version);
  }
  return absl::StrCat("/apis/", group_version);
}

absl::StatusOr<bool> IsResourceServed(KubeClient& client, absl::string_view group_version,
                                      absl::string_view plural) {
  absl::StatusOr<YAML::Node> list = client.Get(GroupVersionPath(group_version));
  if (!list.ok()) {
    if (list.status().code() == absl::StatusCode::kNotFound) return false;
    return list.status();
  }
  const YAML::Node resources = Field(*list, "resources");
  if (!resources.IsDefined() || !resources.IsSequence()) return false;
  for (const YAML::Node& resource : resources) {
    if (StringAt(resource, {"name"}) == plural) return true;
  }
  return false;
}

}  // namespace facet::controller::kube
