#include "controller/kubernetes/status/gateway_status.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/types/span.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "controller/kubernetes/status/condition_fields.h"

namespace facet::controller {
namespace {

using status_internal::StringNode;
using status_internal::TransitionTime;
using status_internal::Truncate;

// The ParentReference defaults (the Gateway API's CRDs apply them).
constexpr char kDefaultParentKind[] = "Gateway";

// Condition types Facet writes on each kind of entry.
constexpr absl::string_view kRouteConditionTypes[] = {gateway::kConditionAccepted,
                                                      gateway::kConditionResolvedRefs,
                                                      gateway::kConditionPartiallyInvalid};
constexpr absl::string_view kPolicyConditionTypes[] = {gateway::kConditionAccepted};

// A parentRef after defaulting: group, kind, namespace, name, sectionName
// ("" when unset), port (0 when unset).
using RefKey = std::tuple<std::string, std::string, std::string, std::string, std::string, int>;

// The scalar `ref` holds at `key`, `fallback` when it is missing or null.
std::string FieldOr(const YAML::Node& ref, absl::string_view key, absl::string_view fallback) {
  const YAML::Node value = kube::Field(ref, key);
  if (!value.IsDefined() || !value.IsScalar()) return std::string(fallback);
  return value.Scalar();
}

RefKey KeyOfWritten(const YAML::Node& ref, absl::string_view object_namespace) {
  int port = 0;
  (void)absl::SimpleAtoi(FieldOr(ref, "port", "0"), &port);
  std::string ns = FieldOr(ref, "namespace", "");
  if (ns.empty()) ns = std::string(object_namespace);
  return {FieldOr(ref, "group", gateway::kGatewayGroup),
          FieldOr(ref, "kind", kDefaultParentKind),
          std::move(ns),
          FieldOr(ref, "name", ""),
          FieldOr(ref, "sectionName", ""),
          port};
}

RefKey KeyOf(const gateway::ObjectReference& ref, absl::string_view object_namespace) {
  return {ref.group,
          ref.kind.empty() ? std::string(kDefaultParentKind) : ref.kind,
          ref.namespace_.empty() ? std::string(object_namespace) : ref.namespace_,
          ref.name,
          ref.section_name.value_or(""),
          ref.port.value_or(0)};
}

YAML::Node RefNode(const gateway::ObjectReference& ref) {
  YAML::Node node;
  node["group"] = StringNode(ref.group);
  node["kind"] = StringNode(ref.kind.empty() ? std::string(kDefaultParentKind) : ref.kind);
  if (!ref.namespace_.empty()) node["namespace"] = StringNode(ref.namespace_);
  node["name"] = StringNode(ref.name);
  if (ref.section_name.has_value()) node["sectionName"] = StringNode(*ref.section_name);
  if (ref.port.has_value()) node["port"] = *ref.port;
  return node;
}

int64_t ObservedGeneration(const YAML::Node& condition) {
  int64_t generation = 0;
  (void)absl::SimpleAtoi(kube::StringAt(condition, {"observedGeneration"}), &generation);
  return generation;
}

// Whether a condition of the list was observed after `generation`.
bool ObservedAfter(const YAML::Node& conditions, int64_t generation) {
  if (!conditions.IsDefined() || !conditions.IsSequence()) return false;
  for (const YAML::Node& condition : conditions) {
    if (ObservedGeneration(condition) > generation) return true;
  }
  return false;
}

YAML::Node ConditionNode(const gateway::Condition& condition, const YAML::Node& existing,
                         absl::Time now) {
  YAML::Node node;
  node["type"] = StringNode(condition.type);
  node["status"] = StringNode(condition.status);
  node["reason"] = StringNode(condition.reason);
  node["message"] = StringNode(Truncate(condition.message));
  node["observedGeneration"] = condition.observed_generation;
  node["lastTransitionTime"] =
      StringNode(TransitionTime(existing, condition.type, condition.status, now));
  return node;
}

// What both kinds of status have in common: the list field, its entries'
// reference field, its bound and the condition types Facet writes.
struct EntryList {
  absl::string_view list_field;  // "parents", "ancestors".
  absl::string_view ref_field;   // "parentRef", "ancestorRef".
  size_t max_entries;
  absl::Span<const absl::string_view> owned_types;
};

// Merges our conditions for one entry into the entry's `existing` ones.
YAML::Node MergeConditions(const YAML::Node& existing, const std::vector<gateway::Condition>& ours,
                           int64_t generation, const EntryList& list, absl::Time now) {
  std::map<std::string, const gateway::Condition*> wanted;
  for (const gateway::Condition& condition : ours) wanted.try_emplace(condition.type, &condition);
  auto owned = [&](const std::string& type) {
    return wanted.count(type) > 0 || std::find(list.owned_types.begin(), list.owned_types.end(),
                                               type) != list.owned_types.end();
  };
  // In order, each with whether it is of a type Facet writes.
  std::vector<std::pair<YAML::Node, bool>> merged;
  std::set<std::string> placed;
  if (existing.IsDefined() && existing.IsSequence()) {
    for (const YAML::Node& condition : existing) {
      const std::string type = kube::StringAt(condition, {"type"});
      if (!owned(type)) {
        merged.emplace_back(YAML::Clone(condition), false);
        continue;
      }
      if (!placed.insert(type).second) continue;  // A type listed twice: the first stays.
      auto it = wanted.find(type);
      const int64_t ours_observed =
          it == wanted.end() ? generation : it->second->observed_generation;
      if (ObservedGeneration(condition) > ours_observed) {
        merged.emplace_back(YAML::Clone(condition), true);  // Newer than what we saw.
      } else if (it != wanted.end()) {
        merged.emplace_back(ConditionNode(*it->second, existing, now), true);
      }
    }
  }
  for (const gateway::Condition& condition : ours) {
    if (placed.insert(condition.type).second) {
      merged.emplace_back(ConditionNode(condition, existing, now), true);
    }
  }
  // Over the bound: other types go first, from the end. (Nodes are not
  // erased from the vector: assigning a YAML::Node writes through.)
  std::vector<bool> left_out(merged.size(), false);
  size_t excess = merged.size() > kMaxEntryConditions ? merged.size() - kMaxEntryConditions : 0;
  for (size_t i = merged.size(); i-- > 0 && excess > 0;) {
    if (!merged[i].second) {
      left_out[i] = true;
      --excess;
    }
  }
  YAML::Node out(YAML::NodeType::Sequence);
  for (size_t i = 0; i < merged.size(); ++i) {
    if (left_out[i]) continue;
    if (out.size() == kMaxEntryConditions) break;
    out.push_back(merged[i].first);
  }
  return out;
}

// The reference an entry is keyed by.
const gateway::ObjectReference& RefOf(const gateway::ParentStatus& entry) {
  return entry.parent_ref;
}
const gateway::ObjectReference& RefOf(const gateway::AncestorStatus& entry) {
  return entry.ancestor_ref;
}

// Entry: gateway::ParentStatus or gateway::AncestorStatus.
template <typename Entry>
YAML::Node MergeEntries(const YAML::Node& current, const gateway::GatewayStatus& ours,
                        const std::vector<Entry>& entries, absl::string_view controller_name,
                        const EntryList& list, absl::Time now) {
  const std::string& ns = ours.object.namespace_;
  const YAML::Node existing = kube::Field(current, list.list_field);
  const bool has_existing = existing.IsDefined() && existing.IsSequence();
  auto is_ours = [&](const YAML::Node& entry) {
    return kube::StringAt(entry, {"controllerName"}) == controller_name;
  };
  // Others' entries are all kept; ours fill what the bound leaves.
  size_t foreign = 0;
  if (has_existing) {
    for (const YAML::Node& entry : existing) foreign += is_ours(entry) ? 0 : 1;
  }
  size_t budget = list.max_entries > foreign ? list.max_entries - foreign : 0;
  // Ours by key; a parentRef listed twice counts once.
  std::map<RefKey, size_t> index;
  for (size_t i = 0; i < entries.size(); ++i) index.try_emplace(KeyOf(RefOf(entries[i]), ns), i);
  std::vector<bool> written(entries.size(), false);

  auto entry_node = [&](const Entry& entry,
                        const YAML::Node& conditions) -> std::optional<YAML::Node> {
    YAML::Node merged = MergeConditions(conditions, entry.conditions, ours.generation, list, now);
    if (merged.size() == 0) return std::nullopt;  // An entry needs a condition.
    YAML::Node node;
    node[std::string(list.ref_field)] = RefNode(RefOf(entry));
    node["controllerName"] = StringNode(std::string(controller_name));
    node["conditions"] = merged;
    return node;
  };

  YAML::Node out(YAML::NodeType::Sequence);
  if (has_existing) {
    for (const YAML::Node& entry : existing) {
      if (!is_ours(entry)) {
        out.push_back(YAML::Clone(entry));
        continue;
      }
      const YAML::Node conditions = kube::Field(entry, "conditions");
      auto it = index.find(KeyOfWritten(kube::Field(entry, list.ref_field), ns));
      if (it == index.end() || written[it->second]) {
        // Its parentRef left the spec (or it is listed twice): dropped,
        // unless it was written from a newer generation than ours.
        if (it == index.end() && budget > 0 && ObservedAfter(conditions, ours.generation)) {
          out.push_back(YAML::Clone(entry));
          --budget;
        }
        continue;
      }
      written[it->second] = true;
      if (budget == 0) continue;
      if (std::optional<YAML::Node> node = entry_node(entries[it->second], conditions)) {
        out.push_back(*node);
        --budget;
      }
    }
  }
  for (size_t i = 0; i < entries.size() && budget > 0; ++i) {
    if (written[i] || index.find(KeyOf(RefOf(entries[i]), ns))->second != i) continue;
    written[i] = true;
    if (std::optional<YAML::Node> node = entry_node(entries[i], YAML::Node())) {
      out.push_back(*node);
      --budget;
    }
  }
  return out;
}

template <typename Entry>
YAML::Node DesiredGatewayStatus(const YAML::Node& current, const gateway::GatewayStatus& ours,
                                const std::vector<Entry>& entries,
                                absl::string_view controller_name, const EntryList& list,
                                absl::Time now) {
  YAML::Node out = current.IsDefined() && current.IsMap() ? YAML::Clone(current)
                                                          : YAML::Node(YAML::NodeType::Map);
  out[std::string(list.list_field)] =
      MergeEntries(current, ours, entries, controller_name, list, now);
  return out;
}

}  // namespace

YAML::Node DesiredRouteStatus(const YAML::Node& current, const gateway::GatewayStatus& ours,
                              absl::string_view controller_name, absl::Time now) {
  return DesiredGatewayStatus(current, ours, ours.parents, controller_name,
                              {"parents", "parentRef", kMaxStatusParents, kRouteConditionTypes},
                              now);
}

YAML::Node DesiredPolicyStatus(const YAML::Node& current, const gateway::GatewayStatus& ours,
                               absl::string_view controller_name, absl::Time now) {
  return DesiredGatewayStatus(
      current, ours, ours.ancestors, controller_name,
      {"ancestors", "ancestorRef", kMaxStatusAncestors, kPolicyConditionTypes}, now);
}

}  // namespace facet::controller
