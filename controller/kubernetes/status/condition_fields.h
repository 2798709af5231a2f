// What every status Facet writes shares: string scalars, condition times,
// bounded messages and lastTransitionTime kept while a condition's status
// stays. Internal to the status writer.
#ifndef FACET_CONTROLLER_KUBERNETES_STATUS_CONDITION_FIELDS_H_
#define FACET_CONTROLLER_KUBERNETES_STATUS_CONDITION_FIELDS_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::status_internal {

// The bound on a condition's message (the Condition type's maxLength).
inline constexpr size_t kMaxConditionMessage = 32768;

// Returns a scalar that is written as a JSON string whatever it holds
// ("true", "1").
YAML::Node StringNode(const std::string& value);

// Returns `time` as a condition's lastTransitionTime ("2006-01-02T15:04:05Z").
std::string ConditionTime(absl::Time time);

// Returns `text` cut to at most `limit` bytes, ending "..." when cut, never
// inside a UTF-8 sequence. `limit` must be at least 3.
std::string Truncate(std::string text, size_t limit = kMaxConditionMessage);

// Returns the lastTransitionTime of a condition of `type` that now has
// `status`: the one a condition of `conditions` (a list, or undefined) of
// that type and status holds, else `now`.
std::string TransitionTime(const YAML::Node& conditions, absl::string_view type,
                           absl::string_view status, absl::Time now);

}  // namespace facet::controller::status_internal

#endif  // FACET_CONTROLLER_KUBERNETES_STATUS_CONDITION_FIELDS_H_
