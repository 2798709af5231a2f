#include "controller/gateway/front_end/route_status.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace facet::controller::gateway {
namespace {

// Whether `field` is `prefix` or lies inside it ("spec.rules[1].matches[0]"
// inside "spec.rules[1]", "spec.rules[10]" not).
bool Inside(absl::string_view field, absl::string_view prefix) {
  return absl::StartsWith(field, prefix) &&
         (field.size() == prefix.size() || field[prefix.size()] == '.');
}

// Makes `condition` False for `causes` (keeping its reason when it is False
// already, else taking `reason`).
void AddCauses(const char* reason, const std::vector<ConditionCause>& causes,
               Condition* condition) {
  if (causes.empty()) return;
  if (condition->status == kStatusTrue) {
    condition->status = kStatusFalse;
    condition->reason = reason;
    condition->causes.clear();  // Notes of a True condition; problems now.
  }
  condition->causes.insert(condition->causes.end(), causes.begin(), causes.end());
  condition->message = ConditionMessage(condition->causes);
}

}  // namespace

bool HasValidRule(const GatewayObject& route, const TranslatedRoute& translated) {
  for (const RouteRule& rule : std::get<GrpcRoute>(route.spec).rules) {
    if (rule.has_errors) continue;
    const std::vector<ConditionCause>& causes = translated.accepted.causes;
    if (std::none_of(causes.begin(), causes.end(), [&](const ConditionCause& cause) {
          return Inside(cause.field, rule.field);
        })) {
      return true;
    }
  }
  return false;
}

GatewayStatus RouteStatus(const GatewayObject& route, const TranslatedRoute& translated,
                          const TranslatedRoute* fallback,
                          absl::Span<const ParentResolution> resolutions) {
  GatewayStatus status;
  status.object = route.ref;
  status.generation = route.generation;
  // Only its conditions are read.
  TranslatedRoute effective;
  effective.ref = route.ref;
  effective.generation = route.generation;
  std::optional<Condition> partially_invalid;
  if (fallback == nullptr || translated.accepted.status == kStatusTrue) {
    effective.accepted = translated.accepted;
    effective.resolved_refs = translated.resolved_refs;
  } else if (HasValidRule(route, translated)) {
    effective.accepted = fallback->accepted;
    effective.resolved_refs = fallback->resolved_refs;
    Condition& condition = partially_invalid.emplace();
    condition.type = kConditionPartiallyInvalid;
    condition.status = kStatusTrue;
    condition.reason = kReasonUnsupportedValue;
    condition.observed_generation = route.generation;
    condition.causes = translated.accepted.causes;
    condition.message = absl::StrCat("Fall Back: ", ConditionMessage(condition.causes));
  } else {
    effective.accepted = translated.accepted;
    // Manifests often carry no generation: then the two look alike.
    effective.accepted.causes.push_back(
        {"", fallback->generation == route.generation
                 ? std::string("its last accepted revision keeps serving")
                 : absl::StrCat("generation ", fallback->generation,
                                ", the last accepted, keeps serving")});
    effective.accepted.message = ConditionMessage(effective.accepted.causes);
    effective.resolved_refs = fallback->resolved_refs;
  }
  const std::vector<ObjectReference>& parent_refs = std::get<GrpcRoute>(route.spec).parent_refs;
  for (size_t i = 0; i < parent_refs.size() && i < resolutions.size(); ++i) {
    if (resolutions[i].outcome == ParentResolution::Outcome::kNotFacets) continue;
    ParentStatus& entry =
        status.parents.emplace_back(ParentStatusFor(effective, parent_refs[i], resolutions[i]));
    if (partially_invalid.has_value() &&
        resolutions[i].outcome == ParentResolution::Outcome::kAttached) {
      entry.conditions.push_back(*partially_invalid);
    }
  }
  return status;
}

bool BuilderConflicts::empty() const {
  return backends.empty() &&
         std::all_of(parents.begin(), parents.end(),
                     [](const std::vector<ConditionCause>& causes) { return causes.empty(); });
}

void AddConflicts(const BuilderConflicts& conflicts, GatewayStatus* status) {
  for (size_t i = 0; i < status->parents.size(); ++i) {
    for (Condition& condition : status->parents[i].conditions) {
      if (condition.type == kConditionAccepted && i < conflicts.parents.size()) {
        AddCauses(kReasonConflicted, conflicts.parents[i], &condition);
      } else if (condition.type == kConditionResolvedRefs) {
        AddCauses(kReasonConflicted, conflicts.backends, &condition);
      }
    }
  }
}

}  // namespace facet::controller::gateway
