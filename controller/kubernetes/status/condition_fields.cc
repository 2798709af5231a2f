#include "controller/kubernetes/status/condition_fields.h"

#include "controller/kubernetes/client/yaml_fields.h"
#include "xds_server/common/log_text.h"

namespace facet::controller::status_internal {

YAML::Node StringNode(const std::string& value) {
  YAML::Node node(value);
  node.SetTag("!");
  return node;
}

std::string ConditionTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

std::string Truncate(std::string text, size_t limit) {
  if (text.size() > limit) {
    text.resize(xds::Utf8PrefixLength(text, limit - 3));
    text += "...";
  }
  return text;
}

std::string TransitionTime(const YAML::Node& conditions, absl::string_view type,
                           absl::string_view status, absl::Time now) {
  std::string transition = ConditionTime(now);
  if (!conditions.IsDefined() || !conditions.IsSequence()) return transition;
  for (const YAML::Node& existing : conditions) {
    if (kube::StringAt(existing, {"type"}) == type &&
        kube::StringAt(existing, {"status"}) == status &&
        !kube::StringAt(existing, {"lastTransitionTime"}).empty()) {
      transition = kube::StringAt(existing, {"lastTransitionTime"});
    }
  }
  return transition;
}

}  // namespace facet::controller::status_internal
