#include "controller/gateway/translate/grpc_route.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/gateway/translate/xds_yaml.h"
#include "xds_server/conditional/conditional.h"

namespace facet::controller::gateway {
namespace {

using internal::AbortConfig;
using internal::EmptyMap;
using internal::GeneratedObject;
using internal::Integer;
using internal::String;

// A cause that makes a condition False, with its reason.
struct Problem {
  std::string reason;
  ConditionCause cause;
};

// Returns a condition of `type` at `generation`: False with the first
// problem's reason when there are problems (every one of them a cause),
// True with `true_reason` otherwise (the notes as its causes).
Condition MakeCondition(const char* type, const char* true_reason, absl::string_view true_message,
                        const std::vector<Problem>& problems,
                        const std::vector<ConditionCause>& notes, int64_t generation) {
  Condition condition;
  condition.type = type;
  condition.observed_generation = generation;
  if (problems.empty()) {
    condition.status = kStatusTrue;
    condition.reason = true_reason;
    condition.causes = notes;
    condition.message = notes.empty() ? std::string(true_message)
                                      : absl::StrCat(true_message, "; ", ConditionMessage(notes));
    return condition;
  }
  condition.status = kStatusFalse;
  condition.reason = problems.front().reason;
  for (const Problem& problem : problems) condition.causes.push_back(problem.cause);
  condition.message = ConditionMessage(condition.causes);
  return condition;
}

void AddFilterProblems(const std::vector<RouteFilter>& filters, std::vector<Problem>* problems) {
  for (const RouteFilter& filter : filters) {
    std::string why;
    if (filter.type == "RequestMirror") {
      why = "proxyless gRPC clients cannot mirror requests";
    } else if (filter.type == "ExtensionRef") {
      why = "Facet defines no extension filters";
    } else {
      why = "proxyless gRPC clients cannot modify headers (no gRFC gives them a filter for it)";
    }
    problems->push_back(
        {kReasonIncompatibleFilters,
         {filter.field, absl::StrCat(filter.type.empty() ? "this" : filter.type,
                                     " filter is not supported: ", why, "; remove it")}});
  }
}

// The route action of `rule` with its backends resolved; records the
// invalid backends in `unresolved`.
void AddAction(const GatewayObject& route, const RouteRule& rule, const GatewayLookup& lookup,
               const TranslateOptions& options, std::vector<Problem>* unresolved,
               YAML::Node* xds_route) {
  std::vector<std::pair<std::string, int64_t>> valid;  // Cluster, weight; first seen first.
  int64_t invalid_weight = 0;
  for (const BackendRef& backend : rule.backend_refs) {
    BackendResolution resolved =
        ResolveBackendRef(route.ref.namespace_, backend.ref, lookup, options);
    if (resolved.cluster.empty()) {
      unresolved->push_back(
          {std::move(resolved.reason),
           {backend.ref.field, backend.weight == 0
                                   ? absl::StrCat(resolved.message, " (weight 0: no traffic)")
                                   : std::move(resolved.message)}});
      invalid_weight += backend.weight;
      continue;
    }
    if (backend.weight == 0) continue;  // No traffic.
    auto same = std::find_if(valid.begin(), valid.end(),
                             [&](const auto& entry) { return entry.first == resolved.cluster; });
    if (same != valid.end()) {
      same->second += backend.weight;
    } else {
      valid.emplace_back(resolved.cluster, backend.weight);
    }
  }
  YAML::Node action;
  if (valid.empty()) {
    // No backendRefs, all weights 0 or every weighted one invalid.
    action["cluster"] = String(kUnroutableName);
    (*xds_route)["route"] = action;
    (*xds_route)["typed_per_filter_config"] = AbortConfig(kUnavailable);
    return;
  }
  if (valid.size() == 1 && invalid_weight == 0) {
    action["cluster"] = String(valid.front().first);
    (*xds_route)["route"] = action;
    return;
  }
  int64_t total = 0;
  YAML::Node clusters(YAML::NodeType::Sequence);
  for (const auto& [cluster, weight] : valid) {
    YAML::Node entry;
    entry["name"] = String(cluster);
    entry["weight"] = Integer(weight);
    clusters.push_back(entry);
    total += weight;
  }
  if (invalid_weight > 0) {
    // The spec: the share that would have gone to invalid backends fails
    // UNAVAILABLE (a per-ClusterWeight override, gRFC A39).
    YAML::Node entry;
    entry["name"] = String(kUnroutableName);
    entry["weight"] = Integer(invalid_weight);
    entry["typed_per_filter_config"] = AbortConfig(kUnavailable);
    clusters.push_back(entry);
    total += invalid_weight;
  }
  action["weighted_clusters"]["clusters"] = clusters;
  // gRPC 1.51 (C-core) requires the weights to add up to total_weight.
  action["weighted_clusters"]["total_weight"] = Integer(total);
  (*xds_route)["route"] = action;
}

std::string RuleLabel(const RouteRule& rule, size_t index) {
  return rule.name.has_value() ? *rule.name : absl::StrCat("rules[", index, "]");
}

}  // namespace

TranslatedRoute TranslateRoute(const GatewayObject& route, const RouteConditions* conditions,
                               const GatewayLookup& lookup, const TranslateOptions& options) {
  const GrpcRoute& spec = std::get<GrpcRoute>(route.spec);
  TranslatedRoute out;
  out.ref = route.ref;
  out.generation = route.generation;
  std::vector<Problem> rejected;
  std::vector<Problem> unresolved;
  std::vector<ConditionCause> notes;
  for (const xds::Finding& finding : route.findings) {
    if (finding.severity == xds::Severity::kError) {
      // What the CRD refuses and what Facet cannot honour alike: the route
      // cannot be served as written.
      rejected.push_back({kReasonUnsupportedValue, {finding.field, finding.message}});
    } else {
      notes.push_back({finding.field, finding.message});
    }
  }
  if (!spec.hostnames.empty()) {
    notes.push_back({"spec.hostnames",
                     "ignored: a route attached to a Service applies to every call to it, "
                     "whatever authority the client uses (GEP-1294)"});
  }
  const std::string route_key = absl::StrCat(route.ref.namespace_, "/", route.ref.name);
  std::vector<XdsRoute> routes;
  for (size_t i = 0; i < spec.rules.size(); ++i) {
    const RouteRule& rule = spec.rules[i];
    AddFilterProblems(rule.filters, &rejected);
    for (const BackendRef& backend : rule.backend_refs) {
      AddFilterProblems(backend.filters, &rejected);
    }
    std::vector<TranslatedMatch> matches;
    for (const RouteMatch& match : rule.matches) matches.push_back(TranslateMatch(match));
    if (matches.empty()) matches.push_back(MatchEverything());
    YAML::Node action;
    AddAction(route, rule, lookup, options, &unresolved, &action);
    for (size_t j = 0; j < matches.size(); ++j) {
      TranslatedMatch& match = matches[j];
      for (ConditionCause& problem : match.problems) {
        // The parser may have said it already (a regular expression that
        // is not RE2 as written is not once wrapped either).
        const bool known = std::any_of(rejected.begin(), rejected.end(), [&](const Problem& p) {
          return p.cause.field == problem.field;
        });
        if (!known) rejected.push_back({kReasonUnsupportedValue, std::move(problem)});
      }
      for (ConditionCause& note : match.notes) notes.push_back(std::move(note));
      XdsRoute xds_route;
      xds_route.precedence = match.precedence;
      xds_route.precedence.created = route.creation_time.value_or(absl::InfiniteFuture());
      xds_route.precedence.route = route_key;
      xds_route.precedence.rule = i;
      xds_route.precedence.match = j;
      xds_route.matches_all = match.matches_all;
      YAML::Node& node = xds_route.route;
      node["name"] =
          String(absl::StrCat(route_key, "/", RuleLabel(rule, i),
                              matches.size() > 1 ? absl::StrCat("/matches[", j, "]") : ""));
      node["match"] = match.match;
      // Each xDS route gets its own copy: the compiler edits elements.
      for (const auto& entry : action) node[entry.first.Scalar()] = YAML::Clone(entry.second);
      routes.push_back(std::move(xds_route));
    }
  }
  out.accepted = MakeCondition(kConditionAccepted, kReasonAccepted, "Route is accepted", rejected,
                               notes, route.generation);
  out.resolved_refs =
      MakeCondition(kConditionResolvedRefs, kReasonResolvedRefs, "All references are resolved",
                    unresolved, {}, route.generation);
  if (rejected.empty()) {
    ApplyConditions(conditions, &routes);
    out.routes = std::move(routes);
  }
  return out;
}

void ApplyConditions(const RouteConditions* conditions, std::vector<XdsRoute>* routes) {
  std::map<size_t, std::optional<YAML::Node>> by_rule;
  for (XdsRoute& route : *routes) {
    auto it = by_rule.find(route.precedence.rule);
    if (it == by_rule.end()) {
      it = by_rule.emplace(route.precedence.rule, RuleCondition(conditions, route.precedence.rule))
               .first;
    }
    if (!it->second.has_value()) continue;
    route.conditional = true;
    route.matches_all = false;
    route.route[xds::kWhenConstraintsField] = YAML::Clone(*it->second);
  }
}

ClientScopes ScopeToClients(absl::string_view service_ns, absl::Span<const ScopedRoute> routes,
                            absl::string_view param) {
  ClientScopes out;
  // Per group of clients (a consumer namespace, or "" for the producer
  // routes' clients): whether a route is for all of them.
  std::map<std::string, bool> covered;
  std::map<std::string, YAML::Node> consumer_scopes;  // By namespace.
  std::vector<YAML::Node> consumers;
  for (const ScopedRoute& route : routes) {
    const bool consumer = route.ns != service_ns;
    const bool unconditional = route.conditions == nullptr || !route.conditions->route.has_value();
    covered[consumer ? route.ns : ""] |= unconditional;
    if (consumer && consumer_scopes.count(route.ns) == 0) {
      YAML::Node condition;
      condition["constraint"]["key"] = String(param);
      condition["constraint"]["value"] = String(route.ns);
      consumer_scopes.emplace(route.ns, condition);
    }
  }
  for (const auto& [ns, condition] : consumer_scopes) consumers.push_back(condition);
  std::vector<YAML::Node> route_conditions;
  bool every_route_conditional = !routes.empty();
  for (const ScopedRoute& route : routes) {
    RouteConditions& scoped = out.routes.emplace_back();
    if (route.conditions != nullptr) scoped = *route.conditions;
    std::optional<YAML::Node> scope;
    if (route.ns != service_ns) {
      scope = consumer_scopes.at(route.ns);
    } else if (!consumers.empty()) {
      scope = NoneOf(AnyOf(consumers));
    }
    if (scope.has_value()) {
      if (scoped.route.has_value()) {
        YAML::Node both;
        both["and_constraints"]["constraints"].push_back(*scope);
        both["and_constraints"]["constraints"].push_back(scoped.route->node());
        scoped.route = both;
      } else {
        scoped.route = *scope;
      }
    }
    if (scoped.route.has_value()) {
      route_conditions.push_back(*scoped.route);
    } else {
      every_route_conditional = false;
    }
  }
  // Every client has a route when a route without a policy condition is
  // on each group, the producer routes' clients included.
  const bool every_client_routed =
      covered.count("") > 0 &&
      std::all_of(covered.begin(), covered.end(), [](const auto& group) { return group.second; });
  if (every_route_conditional && !every_client_routed) out.routed = AnyOf(route_conditions);
  return out;
}

std::optional<YAML::Node> RuleCondition(const RouteConditions* conditions, size_t rule) {
  if (conditions == nullptr) return std::nullopt;
  auto it = conditions->rules.find(rule);
  if (it == conditions->rules.end()) {
    if (!conditions->route.has_value()) return std::nullopt;
    return conditions->route->node();
  }
  if (!conditions->route.has_value()) return it->second.node();
  YAML::Node both;
  both["and_constraints"]["constraints"].push_back(conditions->route->node());
  both["and_constraints"]["constraints"].push_back(it->second.node());
  return both;
}

YAML::Node AnyOf(const std::vector<YAML::Node>& conditions) {
  std::set<std::string> seen;
  YAML::Node list(YAML::NodeType::Sequence);
  for (const YAML::Node& condition : conditions) {
    if (seen.insert(YAML::Dump(condition)).second) list.push_back(condition);
  }
  if (list.size() == 1) return list[0];
  YAML::Node any;
  any["or_constraints"]["constraints"] = list;
  return any;
}

YAML::Node NoneOf(const YAML::Node& condition) {
  YAML::Node none;
  none["not_constraints"] = condition;
  return none;
}

std::string ConditionMessage(const std::vector<ConditionCause>& causes) {
  return absl::StrJoin(causes, "; ", [](std::string* out, const ConditionCause& cause) {
    absl::StrAppend(out, cause.field, cause.field.empty() ? "" : ": ", cause.message);
  });
}

ParentStatus ParentStatusFor(const TranslatedRoute& translated, const ObjectReference& parent_ref,
                             const ParentResolution& resolution) {
  ParentStatus status;
  status.parent_ref = parent_ref;
  Condition accepted = translated.accepted;
  if (resolution.outcome == ParentResolution::Outcome::kRejected) {
    std::vector<ConditionCause> causes = {{parent_ref.field, resolution.message}};
    if (accepted.status == kStatusFalse) {
      causes.insert(causes.end(), accepted.causes.begin(), accepted.causes.end());
    }
    accepted.status = kStatusFalse;
    accepted.reason = resolution.reason;
    accepted.causes = std::move(causes);
    accepted.message = ConditionMessage(accepted.causes);
  }
  status.conditions = {std::move(accepted), translated.resolved_refs};
  return status;
}

ParentTranslation TranslateParent(const GatewayObject& service, const ServicePort& port,
                                  absl::Span<const AttachedRoute> routes,
                                  const GatewayLookup& lookup, const TranslateOptions& options) {
  ParentTranslation out;
  std::vector<std::string> served;  // The accepted routes, "ns/name".
  std::vector<TranslatedRoute> accepted;
  std::vector<ScopedRoute> scoped;
  ParentResolution attached;
  attached.outcome = ParentResolution::Outcome::kAttached;
  attached.service = service.ref;
  attached.ports = {port.port};
  for (const AttachedRoute& entry : routes) {
    // Conditions are applied once the routes that are accepted are known:
    // consumer routes change the producer routes' scope.
    TranslatedRoute translated = TranslateRoute(*entry.route, nullptr, lookup, options);
    const GrpcRoute& spec = std::get<GrpcRoute>(entry.route->spec);
    GatewayStatus& status = out.statuses.emplace_back();
    status.object = entry.route->ref;
    status.generation = entry.route->generation;
    for (size_t index : entry.parent_refs) {
      status.parents.push_back(ParentStatusFor(translated, spec.parent_refs.at(index), attached));
    }
    if (translated.accepted.status != kStatusTrue) continue;
    served.push_back(absl::StrCat(entry.route->ref.namespace_, "/", entry.route->ref.name));
    scoped.push_back({entry.route->ref.namespace_, entry.conditions});
    accepted.push_back(std::move(translated));
  }
  const ClientScopes scopes =
      ScopeToClients(service.ref.namespace_, scoped, options.client_namespace_param);
  std::vector<XdsRoute> merged;
  for (size_t i = 0; i < accepted.size(); ++i) {
    ApplyConditions(&scopes.routes[i], &accepted[i].routes);
    merged.insert(merged.end(), accepted[i].routes.begin(), accepted[i].routes.end());
  }
  if (served.empty()) {
    out.route_configuration = DefaultRouteConfiguration(service, port, options);
    return out;
  }
  // Sorted by pointer: assigning a YAML::Node overwrites the node it refers
  // to (shared with its copies) instead of rebinding it.
  std::vector<const XdsRoute*> sorted;
  for (const XdsRoute& route : merged) sorted.push_back(&route);
  std::stable_sort(sorted.begin(), sorted.end(), [](const XdsRoute* a, const XdsRoute* b) {
    return Precedes(a->precedence, b->precedence);
  });
  const std::string name = ServicePortName(service.ref, port.port, options.cluster_domain);
  YAML::Node host;
  host["name"] = String(name);
  host["domains"].push_back(String("*"));
  host["routes"] = YAML::Node(YAML::NodeType::Sequence);
  // A route without rules has no xDS routes, but its condition still
  // scopes facet/no-route and the default.
  bool conditional = scopes.routed.has_value();
  for (const XdsRoute* route : sorted) {
    conditional = conditional || route->conditional;
    host["routes"].push_back(route->route);
  }
  if (sorted.empty() || !sorted.back()->matches_all) {
    YAML::Node no_route;
    no_route["name"] = String(kNoRouteName);
    no_route["match"]["prefix"] = String("");
    no_route["route"]["cluster"] = String(kUnroutableName);
    no_route["typed_per_filter_config"] = AbortConfig(kUnimplemented);
    if (scopes.routed.has_value()) {
      no_route[xds::kWhenConstraintsField] = YAML::Clone(*scopes.routed);
    }
    host["routes"].push_back(no_route);
  }
  if (scopes.routed.has_value()) {
    // Clients no route is for get the Service's own endpoints, as if no
    // GRPCRoute were attached (GEP-1294's default mesh behaviour).
    YAML::Node fallback = YAML::Clone(DefaultRouteConfiguration(service, port, options)
                                          .spec->variants.front()
                                          .resource["virtual_hosts"][0]["routes"][0]);
    fallback[xds::kWhenConstraintsField] = YAML::Clone(NoneOf(*scopes.routed));
    host["routes"].push_back(fallback);
  }
  YAML::Node config;
  config["virtual_hosts"].push_back(host);
  std::sort(served.begin(), served.end());
  out.route_configuration = GeneratedObject(
      service.ref.namespace_, "route", name, config,
      absl::StrCat("Service ", service.ref.namespace_, "/", service.ref.name, " port ", port.port,
                   " (GRPCRoute", served.size() > 1 ? "s " : " ", absl::StrJoin(served, ", "),
                   ")"));
  out.route_configuration.generation = service.generation;
  out.route_configuration.location = service.location;
  if (conditional) {
    xds::ResourceSpec& spec = *out.route_configuration.spec;
    xds::CompiledResource compiled =
        xds::CompileConditions(spec.variants.front().resource, 0, spec.variants.front().label);
    for (xds::ConditionalError& error : compiled.errors) {
      out.route_configuration.findings.push_back({xds::Severity::kError, std::move(error.reason),
                                                  std::move(error.field),
                                                  std::move(error.message)});
    }
    std::vector<xds::VariantSpec> variants;
    for (xds::CompiledVariant& compiled_variant : compiled.variants) {
      xds::VariantSpec& variant = variants.emplace_back();
      variant.label = std::move(compiled_variant.label);
      variant.constraints = std::move(compiled_variant.constraints);
      variant.constraints_field = "spec.variants[0]";
      variant.resource = std::move(compiled_variant.resource);
      variant.origin = compiled.origin;
      variant.included = std::move(compiled_variant.included);
    }
    spec.variants = std::move(variants);
  }
  return out;
}

}  // namespace facet::controller::gateway
