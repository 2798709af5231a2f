#include "controller/gateway/translate/policies.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "xds_server/common/struct_json.h"

namespace facet::controller::gateway {
namespace {

std::string Key(const xds::ObjectRef& ref) { return absl::StrCat(ref.namespace_, "/", ref.name); }

// GEP-713's order: the oldest first, then by "namespace/name"; an unset
// creation time after every set one.
bool Older(const std::optional<absl::Time>& a_created, const xds::ObjectRef& a,
           const std::optional<absl::Time>& b_created, const xds::ObjectRef& b) {
  const absl::Time a_time = a_created.value_or(absl::InfiniteFuture());
  const absl::Time b_time = b_created.value_or(absl::InfiniteFuture());
  if (a_time != b_time) return a_time < b_time;
  return Key(a) < Key(b);
}

// What a target names on its route: a rule, or the whole route.
struct Candidate {
  const GatewayObject* policy;
  size_t target;
  std::optional<std::string> section;
};

std::string TargetText(const xds::ObjectRef& route, const std::optional<std::string>& section) {
  return absl::StrCat("GRPCRoute ", Key(route),
                      section.has_value() ? absl::StrCat(" rule ", *section) : "");
}

}  // namespace

bool SameApplied(absl::Span<const AppliedPolicy> a, absl::Span<const AppliedPolicy> b) {
  auto key = [](const AppliedPolicy& p) {
    return std::make_tuple(p.policy, p.created, p.rule, YAML::Dump(p.condition));
  };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [&](const auto& x, const auto& y) { return key(x) == key(y); });
}

YAML::Node PolicyCondition(const GatewayObject& policy) {
  const VariantPolicy& spec = std::get<VariantPolicy>(policy.spec);
  return YAML::Load(json::MessageToJson(
      spec.constraints.value_or(envoy::service::discovery::v3::DynamicParameterConstraints()),
      /*pretty=*/false));
}

RoutePolicies ResolveRoutePolicies(const xds::ObjectRef& route_ref, const GatewayObject* route,
                                   absl::Span<const GatewayObject* const> policies) {
  RoutePolicies out;
  std::vector<Candidate> candidates;
  for (const GatewayObject* policy : policies) {
    const std::vector<ObjectReference>& targets = std::get<VariantPolicy>(policy->spec).target_refs;
    for (size_t i = 0; i < targets.size(); ++i) {
      const ObjectReference& target = targets[i];
      const std::string& ns =
          target.namespace_.empty() ? policy->ref.namespace_ : target.namespace_;
      if (target.kind != kGrpcRouteKind || ns != route_ref.namespace_ ||
          target.name != route_ref.name) {
        continue;
      }
      candidates.push_back({policy, i, target.section_name});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return Older(a.policy->creation_time, a.policy->ref, b.policy->creation_time,
                                  b.policy->ref);
                   });
  std::vector<const Candidate*> winners;
  for (const Candidate& candidate : candidates) {
    TargetOutcome& outcome = out.outcomes.emplace_back();
    outcome.policy = candidate.policy->ref;
    outcome.target = candidate.target;
    const std::string target = TargetText(route_ref, candidate.section);
    std::optional<size_t> rule;
    if (route == nullptr) {
      outcome.reason = kReasonTargetNotFound;
      outcome.message = absl::StrCat(TargetText(route_ref, std::nullopt), " does not exist");
      continue;
    }
    if (candidate.section.has_value()) {
      const std::vector<RouteRule>& rules = std::get<GrpcRoute>(route->spec).rules;
      for (size_t r = 0; r < rules.size() && !rule.has_value(); ++r) {
        if (rules[r].name == candidate.section) rule = r;
      }
      if (!rule.has_value()) {
        outcome.reason = kReasonTargetNotFound;
        outcome.message = absl::StrCat(TargetText(route_ref, std::nullopt), " has no rule named ",
                                       *candidate.section);
        continue;
      }
    }
    auto winner = std::find_if(winners.begin(), winners.end(), [&](const Candidate* other) {
      return !other->section.has_value() || !candidate.section.has_value() ||
             other->section == candidate.section;
    });
    if (winner != winners.end()) {
      const GatewayObject& established = *(*winner)->policy;
      const bool older = established.creation_time.value_or(absl::InfiniteFuture()) <
                         candidate.policy->creation_time.value_or(absl::InfiniteFuture());
      outcome.reason = kReasonConflicted;
      outcome.message = absl::StrCat(
          Key(established.ref), older ? " (older)" : " (as old, first by namespace/name)",
          " targets ", TargetText(route_ref, (*winner)->section), "; only one policy applies");
      continue;
    }
    winners.push_back(&candidate);
    outcome.reason = kReasonAccepted;
    outcome.message = absl::StrCat("applies to ", target);
    AppliedPolicy& applied = out.applied.emplace_back();
    applied.policy = candidate.policy->ref;
    applied.created = candidate.policy->creation_time;
    applied.rule = rule;
    applied.condition = PolicyCondition(*candidate.policy);
  }
  // Outcomes by policy, then target: the order statuses list them in.
  std::stable_sort(out.outcomes.begin(), out.outcomes.end(),
                   [](const TargetOutcome& a, const TargetOutcome& b) {
                     return std::tie(a.policy, a.target) < std::tie(b.policy, b.target);
                   });
  return out;
}

RouteConditions ConditionsOf(absl::Span<const AppliedPolicy> applied,
                             const std::set<xds::ObjectRef>& left_out) {
  RouteConditions out;
  for (const AppliedPolicy& policy : applied) {
    // `when: {}` is every client: no condition.
    if (left_out.count(policy.policy) > 0 || policy.condition.size() == 0) continue;
    if (policy.rule.has_value()) {
      out.rules[*policy.rule] = policy.condition;
    } else {
      out.route = policy.condition;
    }
  }
  return out;
}

size_t CountConditions(absl::Span<const ParentRoutePolicies> routes, const ParentScope& parent,
                       const std::set<xds::ObjectRef>& left_out) {
  std::vector<RouteConditions> conditions;
  conditions.reserve(routes.size());
  std::vector<ScopedRoute> scoped;
  for (const ParentRoutePolicies& entry : routes) {
    conditions.push_back(entry.applied == nullptr ? RouteConditions()
                                                  : ConditionsOf(*entry.applied, left_out));
    scoped.push_back({entry.route->ref.namespace_, &conditions.back()});
  }
  const ClientScopes scopes =
      ScopeToClients(parent.service_namespace, scoped, parent.client_namespace_param);
  std::set<std::string> distinct;
  for (size_t r = 0; r < routes.size(); ++r) {
    const size_t rules = std::get<GrpcRoute>(routes[r].route->spec).rules.size();
    for (size_t i = 0; i < rules; ++i) {
      if (std::optional<YAML::Node> condition = RuleCondition(&scopes.routes[r], i)) {
        distinct.insert(YAML::Dump(*condition));
      }
    }
  }
  if (scopes.routed.has_value()) {
    distinct.insert(YAML::Dump(*scopes.routed));
    distinct.insert(YAML::Dump(NoneOf(*scopes.routed)));
  }
  return distinct.size();
}

std::set<xds::ObjectRef> PoliciesPastBound(absl::Span<const ParentRoutePolicies> routes,
                                           const ParentScope& parent, size_t max) {
  std::set<xds::ObjectRef> left_out;
  if (CountConditions(routes, parent, left_out) <= max) return left_out;
  std::vector<const AppliedPolicy*> newest_first;
  for (const ParentRoutePolicies& entry : routes) {
    if (entry.applied == nullptr) continue;
    for (const AppliedPolicy& policy : *entry.applied) newest_first.push_back(&policy);
  }
  std::stable_sort(newest_first.begin(), newest_first.end(),
                   [](const AppliedPolicy* a, const AppliedPolicy* b) {
                     return Older(b->created, b->policy, a->created, a->policy);
                   });
  for (const AppliedPolicy* policy : newest_first) {
    if (!left_out.insert(policy->policy).second) continue;
    if (CountConditions(routes, parent, left_out) <= max) break;
  }
  return left_out;
}

}  // namespace facet::controller::gateway
