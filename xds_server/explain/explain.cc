#include "xds_server/explain/explain.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "xds_server/common/struct_json.h"
#include "xds_server/explain/fault_abort.h"
#include "xds_server/explain/route_match_text.h"
#include "xds_server/names/names.h"

namespace facet::xds {
namespace {

using ::envoy::config::cluster::v3::Cluster;
using ::envoy::config::endpoint::v3::ClusterLoadAssignment;
using ::envoy::config::listener::v3::Listener;
using ::envoy::config::route::v3::Route;
using ::envoy::config::route::v3::RouteAction;
using ::envoy::config::route::v3::RouteConfiguration;
using ::envoy::config::route::v3::VirtualHost;
using ::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;
using Status = ExplainNode::Status;
using json::BoolValue;
using json::NumberValue;
using json::StringValue;

constexpr char kListenerTemplatePrefix[] = "/envoy.config.listener.v3.Listener/";
// Deepest graph followed (aggregate clusters may nest; gRPC stops at 16).
constexpr int kMaxDepth = 32;
// Route lines shown per resource.
constexpr int kMaxRouteLines = 64;

struct StatusName {
  Status status;
  const char* name;
};
constexpr StatusName kStatusNames[] = {
    {Status::kSelected, "selected"},        {Status::kMissing, "does_not_exist"},
    {Status::kNoVariant, "no_variant"},     {Status::kNotCached, "not_cached"},
    {Status::kInvalidName, "invalid_name"}, {Status::kShownAbove, "shown_above"},
};

const char* NameOf(Status status) {
  for (const StatusName& entry : kStatusNames) {
    if (entry.status == status) return entry.name;
  }
  return "selected";
}

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

std::string FaultAbortText(int code) {
  return absl::StrCat("fails with ", GrpcCodeName(code), " (fault abort)");
}

// How well a virtual host domain pattern matches `host` (gRPC's order):
// 4 exact, 3 suffix wildcard ("*.example.com"), 2 prefix wildcard
// ("greeter.*"), 1 "*", 0 no match.
int DomainMatch(absl::string_view pattern, absl::string_view host) {
  const std::string p = absl::AsciiStrToLower(pattern);
  const std::string h = absl::AsciiStrToLower(host);
  if (p == "*") return 1;
  if (p == h) return 4;
  if (absl::StartsWith(p, "*") && absl::EndsWith(h, p.substr(1))) return 3;
  if (absl::EndsWith(p, "*") && absl::StartsWith(h, p.substr(0, p.size() - 1))) return 2;
  return 0;
}

// What a resource's routes decide about the references the client follows.
struct RouteFacts {
  // Reference prefixes behind a fault abort: not followed.
  std::vector<std::string> terminals;
  // The rule of each cluster reference (by its field), at most
  // kMaxRouteLines of them.
  std::map<std::string, ExplainRouteRule> rules;
  int rules_left_off = 0;
};

std::string WeightShare(const ExplainRouteRule& rule) {
  return absl::StrCat("weight ", rule.weight, " of ", rule.total_weight, " (",
                      absl::StrFormat("%.4g", 100.0 * rule.weight / rule.total_weight), "%)");
}

class Walker {
 public:
  Walker(const Snapshot& snapshot, const ExplainRequest& request, std::string host,
         std::vector<std::string>* problems)
      : snapshot_(snapshot),
        params_(request.params),
        rejected_(request.rejected),
        serving_previous_(request.serving_previous),
        host_(std::move(host)),
        problems_(problems) {}

  ExplainNode Visit(const ResourceType& type, const std::string& written, const std::string& field,
                    int depth) {
    ExplainNode node;
    node.type = std::string(type.alias());
    node.field = field;
    node.name = written;
    absl::StatusOr<std::string> name = NormalizeResourceName(written);
    if (!name.ok()) {
      return Broken(std::move(node), Status::kInvalidName,
                    absl::StrCat("not a valid resource name: ", name.status().message()));
    }
    node.name = *name;
    if (depth > kMaxDepth) {
      return Broken(std::move(node), Status::kShownAbove,
                    absl::StrCat("more than ", kMaxDepth, " levels of references"));
    }
    if (!expanded_.insert({&type, node.name}).second) {
      node.status = Status::kShownAbove;
      return node;
    }
    const ServedResource* resource = snapshot_.Find(type, node.name);
    if (resource == nullptr) {
      if (snapshot_.partial()) {
        return Broken(std::move(node), Status::kNotCached,
                      "not cached: the relay has not fetched it from upstream (yet)");
      }
      auto rejected = rejected_.find({node.type, node.name});
      // Built before `node` is moved into Broken's argument.
      std::string problem =
          rejected != rejected_.end()
              ? absl::StrCat("does not exist: the object declaring it is rejected: ",
                             rejected->second)
              : absl::StrCat("does not exist: no object serves ", node.type, " ",
                             Quoted(node.name));
      return Broken(std::move(node), Status::kMissing, std::move(problem));
    }
    node.object = resource->owner.ToString();
    if (auto previous = serving_previous_.find(resource->owner);
        previous != serving_previous_.end()) {
      node.serving_previous = previous->second;
    }
    const Variant* variant = resource->Select(params_);
    if (variant == nullptr) {
      if (snapshot_.partial() && resource->resolution != nullptr &&
          !resource->resolution->Knows(params_)) {
        return Broken(std::move(node), Status::kNotCached,
                      "not cached for these parameters: the relay has not asked upstream (yet)");
      }
      std::vector<std::string> variants;
      for (const auto& v : resource->variants) {
        variants.push_back(absl::StrCat(v->label, " {", v->constraints.ToString(), "}"));
      }
      std::string problem =
          absl::StrCat("does not exist for these parameters: no variant of ", node.object,
                       " matches (variants: ", absl::StrJoin(variants, ", "), ")");
      return Broken(std::move(node), Status::kNoVariant, std::move(problem));
    }
    node.variant = variant->label;
    node.version = variant->version;
    node.constraints = variant->constraints.unconstrained() ? "" : variant->constraints.ToString();
    std::unique_ptr<google::protobuf::Message> message = type.New();
    (void)message->ParseFromString(variant->serialized);
    // The references the client follows: every one, or those of the chosen
    // virtual host, except those behind a fault abort (`routes.terminals`).
    std::optional<std::string> only_prefix;
    RouteFacts routes;
    if (&type == &ListenerType()) {
      only_prefix = DescribeListener(static_cast<const Listener&>(*message), &node, &routes);
    } else if (&type == &RouteConfigurationType()) {
      only_prefix =
          ChooseVirtualHost(static_cast<const RouteConfiguration&>(*message), "", &node, &routes);
    } else if (&type == &ClusterType()) {
      DescribeCluster(static_cast<const Cluster&>(*message), &node);
    } else if (&type == &ClusterLoadAssignmentType()) {
      DescribeEndpoints(static_cast<const ClusterLoadAssignment&>(*message), &node);
    }
    if (routes.rules_left_off > 0) {
      node.details.push_back(absl::StrCat("... and the route rules of ", routes.rules_left_off,
                                          " more cluster references"));
    }
    if (!node.problem.empty()) Report(node);
    // A relay's cache keeps what upstream sent, without the references a
    // build derives: read them from the resource, so that what is missing
    // below is named rather than the graph ending here.
    std::vector<ResourceReference> derived;
    if (variant->references.empty() && snapshot_.partial()) {
      absl::StatusOr<std::vector<ResourceReference>> references =
          type.References(*message, node.name);
      if (references.ok()) derived = *std::move(references);
    }
    for (const ResourceReference& reference :
         variant->references.empty() ? derived : variant->references) {
      if (only_prefix.has_value() && !absl::StartsWith(reference.field, *only_prefix)) continue;
      if (std::any_of(routes.terminals.begin(), routes.terminals.end(),
                      [&](const std::string& terminal) {
                        return absl::StartsWith(reference.field, terminal);
                      })) {
        continue;
      }
      node.children.push_back(Visit(*reference.target, reference.name, reference.field, depth + 1));
      if (auto rule = routes.rules.find(reference.field); rule != routes.rules.end()) {
        node.children.back().route_rule = rule->second;
      }
    }
    return node;
  }

 private:
  ExplainNode Broken(ExplainNode node, Status status, std::string problem) {
    node.status = status;
    node.problem = std::move(problem);
    Report(node);
    return node;
  }

  void Report(const ExplainNode& node) {
    problems_->push_back(absl::StrCat(node.type, " ", Quoted(node.name),
                                      node.field.empty() ? "" : absl::StrCat(" (", node.field, ")"),
                                      ": ", node.problem));
  }

  // Returns the reference prefix to follow, if only part of the listener is.
  std::optional<std::string> DescribeListener(const Listener& listener, ExplainNode* node,
                                              RouteFacts* routes) {
    HttpConnectionManager hcm;
    if (!listener.api_listener().api_listener().UnpackTo(&hcm)) {
      node->problem = "not an API listener with an HttpConnectionManager: gRPC clients NACK it";
      return std::nullopt;
    }
    // The routes below apply the overrides of these filters only.
    faults_ = FaultFilters(hcm);
    if (hcm.has_rds()) {
      node->details.push_back(
          absl::StrCat("routes from RouteConfiguration ", Quoted(hcm.rds().route_config_name())));
      return std::nullopt;
    }
    if (hcm.has_route_config()) {
      node->details.push_back("routes inline (route_config)");
      return ChooseVirtualHost(hcm.route_config(), "api_listener.api_listener.route_config.", node,
                               routes);
    }
    return std::nullopt;
  }

  // Picks the virtual host gRPC picks for the target; returns the prefix of
  // its references, or nullopt when every virtual host is shown.
  std::optional<std::string> ChooseVirtualHost(const RouteConfiguration& route,
                                               const std::string& prefix, ExplainNode* node,
                                               RouteFacts* routes) {
    if (host_.empty()) {
      node->details.push_back(
          "virtual host not chosen (the target is an xdstp:// name): every route is shown");
      for (int v = 0; v < route.virtual_hosts_size(); ++v) {
        DescribeRoutes(route.virtual_hosts(v), absl::StrCat(prefix, "virtual_hosts[", v, "]"), node,
                       routes);
      }
      return std::nullopt;
    }
    int best = -1;
    int best_rank = 0;
    size_t best_length = 0;
    for (int v = 0; v < route.virtual_hosts_size(); ++v) {
      for (const std::string& domain : route.virtual_hosts(v).domains()) {
        const int rank = DomainMatch(domain, host_);
        if (rank > best_rank || (rank == best_rank && rank > 0 && domain.size() > best_length)) {
          best = v;
          best_rank = rank;
          best_length = domain.size();
        }
      }
    }
    if (best < 0) {
      std::vector<std::string> domains;
      for (const auto& vhost : route.virtual_hosts()) {
        domains.push_back(absl::StrCat("[", absl::StrJoin(vhost.domains(), ", "), "]"));
      }
      node->problem =
          absl::StrCat("no virtual host matches ", Quoted(host_),
                       " (domains: ", domains.empty() ? "none" : absl::StrJoin(domains, ", "),
                       "): RPCs fail with UNAVAILABLE");
      return absl::StrCat(prefix, "virtual_hosts[-1].");  // Follow nothing.
    }
    const auto& vhost = route.virtual_hosts(best);
    node->virtual_host = vhost.name();
    node->details.push_back(absl::StrCat(
        "virtual host ", Quoted(vhost.name()), " (", prefix, "virtual_hosts[", best, "], domains ",
        absl::StrJoin(vhost.domains(), ", "), ") matches ", Quoted(host_)));
    DescribeRoutes(vhost, absl::StrCat(prefix, "virtual_hosts[", best, "]"), node, routes);
    return absl::StrCat(prefix, "virtual_hosts[", best, "].");
  }

  // Adds a line for each route of `vhost` (at `field`) that has a name or
  // that a fault abort ends: the abort comes before any pick (gRFC A33), so
  // the cluster behind it is never used. Adds the reference prefixes behind
  // such aborts to `routes->terminals`, and the rule of each cluster
  // reference to `routes->rules`.
  void DescribeRoutes(const VirtualHost& vhost, const std::string& field, ExplainNode* node,
                      RouteFacts* routes) {
    std::vector<std::string>* terminals = &routes->terminals;
    int more = 0;
    for (int r = 0; r < vhost.routes_size(); ++r) {
      const Route& route = vhost.routes(r);
      const std::string route_field = absl::StrCat(field, ".routes[", r, "]");
      AddRules(vhost, r, route_field, routes);
      std::string action;
      bool aborts = false;
      if (route.has_route()) {
        const RouteAction& forward = route.route();
        if (forward.has_weighted_clusters()) {
          std::vector<std::string> entries;
          for (int c = 0; c < forward.weighted_clusters().clusters_size(); ++c) {
            const auto& weighted = forward.weighted_clusters().clusters(c);
            const std::string weight = absl::StrCat("weight ", weighted.weight().value());
            const std::optional<int> code = faults_.CertainAbort(
                {&weighted.typed_per_filter_config(), &route.typed_per_filter_config(),
                 &vhost.typed_per_filter_config()});
            if (code) {
              aborts = true;
              terminals->push_back(
                  absl::StrCat(route_field, ".route.weighted_clusters.clusters[", c, "]."));
              entries.push_back(absl::StrCat(weight, " ", FaultAbortText(*code)));
            } else {
              entries.push_back(absl::StrCat(Quoted(weighted.name()), " ", weight));
            }
          }
          action = absl::StrCat("-> weighted clusters: ", absl::StrJoin(entries, ", "));
        } else if (const std::optional<int> code = faults_.CertainAbort(
                       {&route.typed_per_filter_config(), &vhost.typed_per_filter_config()})) {
          aborts = true;
          terminals->push_back(absl::StrCat(route_field, ".route."));
          action = FaultAbortText(*code);
        } else if (forward.has_cluster()) {
          action = absl::StrCat("-> cluster ", Quoted(forward.cluster()));
        } else {
          action = "-> a cluster not named in the route";
        }
      } else if (route.has_non_forwarding_action()) {
        action = "non-forwarding action";
      } else {
        action = "unsupported action";
      }
      if (route.name().empty() && !aborts) continue;
      if (node->details.size() >= static_cast<size_t>(kMaxRouteLines)) {
        ++more;
        continue;
      }
      node->details.push_back(absl::StrCat(
          "route ", route.name().empty() ? "" : absl::StrCat(Quoted(route.name()), " "), "(",
          route_field, "): ", RouteMatchText(route.match()), " ", action));
    }
    if (more > 0) node->details.push_back(absl::StrCat("... and ", more, " more routes"));
  }

  // Adds the rule of each cluster reference route `r` of `vhost` (at
  // `route_field`) makes, the field names as ResourceType::References
  // writes them, up to kMaxRouteLines rules in all.
  static void AddRules(const VirtualHost& vhost, int r, const std::string& route_field,
                       RouteFacts* routes) {
    const Route& route = vhost.routes(r);
    if (!route.has_route()) return;
    const RouteAction& forward = route.route();
    ExplainRouteRule rule;
    rule.virtual_host = vhost.name();
    rule.index = r;
    rule.field = route_field;
    rule.name = route.name();
    if (forward.has_weighted_clusters()) {
      const auto& clusters = forward.weighted_clusters().clusters();
      uint64_t total = 0;
      for (const auto& weighted : clusters) total += weighted.weight().value();
      for (int c = 0; c < clusters.size(); ++c) {
        if (routes->rules.size() >= static_cast<size_t>(kMaxRouteLines)) {
          ++routes->rules_left_off;
          continue;
        }
        rule.weight = clusters[c].weight().value();
        rule.total_weight = total;
        if (rule.match.empty()) rule.match = RouteMatchText(route.match());
        routes->rules.emplace(
            absl::StrCat(route_field, ".route.weighted_clusters.clusters[", c, "].name"), rule);
      }
    } else if (forward.has_cluster()) {
      if (routes->rules.size() >= static_cast<size_t>(kMaxRouteLines)) {
        ++routes->rules_left_off;
        return;
      }
      rule.match = RouteMatchText(route.match());
      routes->rules.emplace(absl::StrCat(route_field, ".route.cluster"), std::move(rule));
    }
  }

  static void DescribeCluster(const Cluster& cluster, ExplainNode* node) {
    if (cluster.has_cluster_type()) {
      node->details.push_back("aggregate cluster");
    } else if (cluster.type() == Cluster::EDS) {
      node->details.push_back("EDS cluster");
    } else if (cluster.type() == Cluster::LOGICAL_DNS) {
      node->details.push_back("LOGICAL_DNS cluster");
      DescribeEndpoints(cluster.load_assignment(), node);
    } else {
      node->details.push_back(
          absl::StrCat(Cluster::DiscoveryType_Name(cluster.type()), " cluster"));
    }
  }

  static void DescribeEndpoints(const ClusterLoadAssignment& assignment, ExplainNode* node) {
    size_t count = 0;
    for (const auto& locality : assignment.endpoints()) {
      for (const auto& lb : locality.lb_endpoints()) {
        ++count;
        const auto& socket = lb.endpoint().address().socket_address();
        std::string line = absl::StrCat("endpoint ", socket.address(), ":", socket.port_value());
        if (locality.priority() != 0) absl::StrAppend(&line, " priority ", locality.priority());
        if (lb.has_load_balancing_weight()) {
          absl::StrAppend(&line, " weight ", lb.load_balancing_weight().value());
        }
        if (lb.health_status() != envoy::config::core::v3::UNKNOWN) {
          absl::StrAppend(&line, " ", envoy::config::core::v3::HealthStatus_Name(lb.health_status()));
        }
        node->details.push_back(std::move(line));
      }
    }
    if (count == 0 && node->type == "endpoint") {
      node->problem = "no endpoints: RPCs routed here fail with UNAVAILABLE";
    }
  }

  const Snapshot& snapshot_;
  const ParameterSet& params_;
  const std::map<std::pair<std::string, std::string>, std::string>& rejected_;
  const std::map<ObjectRef, std::string>& serving_previous_;
  const std::string host_;
  std::vector<std::string>* problems_;
  std::set<std::pair<const ResourceType*, std::string>> expanded_;
  // The fault filters of the listener whose routes are described.
  FaultFilters faults_;
};

Value StringList(const std::vector<std::string>& items) {
  Value value;
  auto* list = value.mutable_list_value();
  for (const std::string& item : items) *list->add_values() = StringValue(item);
  return value;
}

Value NodeToValue(const ExplainNode& node) {
  Value value;
  auto& f = *value.mutable_struct_value()->mutable_fields();
  f["type"] = StringValue(node.type);
  f["name"] = StringValue(node.name);
  f["field"] = StringValue(node.field);
  f["status"] = StringValue(NameOf(node.status));
  f["object"] = StringValue(node.object);
  f["variant"] = StringValue(node.variant);
  f["version"] = StringValue(node.version);
  f["constraints"] = StringValue(node.constraints);
  f["serving_previous"] = StringValue(node.serving_previous);
  f["virtual_host"] = StringValue(node.virtual_host);
  if (node.route_rule.has_value()) {
    const ExplainRouteRule& rule = *node.route_rule;
    auto& r = *f["route_rule"].mutable_struct_value()->mutable_fields();
    r["virtual_host"] = StringValue(rule.virtual_host);
    r["index"] = NumberValue(rule.index);
    r["field"] = StringValue(rule.field);
    r["name"] = StringValue(rule.name);
    r["match"] = StringValue(rule.match);
    r["weight"] = NumberValue(rule.weight);
    r["total_weight"] = NumberValue(static_cast<double>(rule.total_weight));
  } else {
    f["route_rule"].set_null_value(google::protobuf::NULL_VALUE);
  }
  f["details"] = StringList(node.details);
  f["problem"] = StringValue(node.problem);
  auto* children = f["children"].mutable_list_value();
  for (const ExplainNode& child : node.children) *children->add_values() = NodeToValue(child);
  return value;
}

std::string GetString(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

double GetNumber(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? 0 : it->second.number_value();
}

std::vector<std::string> GetStrings(const Struct& s, const std::string& key) {
  std::vector<std::string> out;
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return out;
  for (const Value& v : it->second.list_value().values()) out.push_back(v.string_value());
  return out;
}

absl::StatusOr<ExplainNode> NodeFromStruct(const Struct& s, int depth) {
  if (depth > kMaxDepth + 1) return absl::InvalidArgumentError("explain JSON nests too deeply");
  ExplainNode node;
  node.type = GetString(s, "type");
  node.name = GetString(s, "name");
  node.field = GetString(s, "field");
  const std::string status = GetString(s, "status");
  bool known = false;
  for (const StatusName& entry : kStatusNames) {
    if (status == entry.name) {
      node.status = entry.status;
      known = true;
    }
  }
  if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown node status \"", status, "\""));
  node.object = GetString(s, "object");
  node.variant = GetString(s, "variant");
  node.version = GetString(s, "version");
  node.constraints = GetString(s, "constraints");
  node.serving_previous = GetString(s, "serving_previous");
  node.virtual_host = GetString(s, "virtual_host");
  if (auto rule = s.fields().find("route_rule");
      rule != s.fields().end() && rule->second.has_struct_value()) {
    const Struct& r = rule->second.struct_value();
    ExplainRouteRule& out = node.route_rule.emplace();
    out.virtual_host = GetString(r, "virtual_host");
    out.index = static_cast<int>(GetNumber(r, "index"));
    out.field = GetString(r, "field");
    out.name = GetString(r, "name");
    out.match = GetString(r, "match");
    out.weight = static_cast<uint32_t>(GetNumber(r, "weight"));
    out.total_weight = static_cast<uint64_t>(GetNumber(r, "total_weight"));
  }
  node.details = GetStrings(s, "details");
  node.problem = GetString(s, "problem");
  auto children = s.fields().find("children");
  if (children != s.fields().end()) {
    for (const Value& child : children->second.list_value().values()) {
      absl::StatusOr<ExplainNode> parsed = NodeFromStruct(child.struct_value(), depth + 1);
      if (!parsed.ok()) return parsed.status();
      node.children.push_back(*std::move(parsed));
    }
  }
  return node;
}

// Returns the line that names the route rule a reference comes from, e.g.
// `from route "a" (virtual_hosts[0].routes[0]) of virtual host "greeter":
// prefix "/", weight 90 of 100 (90%)`.
std::string RouteRuleText(const ExplainRouteRule& rule) {
  return absl::StrCat("from route ", rule.name.empty() ? "" : absl::StrCat(Quoted(rule.name), " "),
                      "(", rule.field, ") of virtual host ", Quoted(rule.virtual_host), ": ",
                      rule.match, rule.weighted() ? absl::StrCat(", ", WeightShare(rule)) : "");
}

void NodeToText(const ExplainNode& node, int indent, std::string* out) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  absl::StrAppend(out, pad, node.type, " \"", node.name, "\"");
  if (!node.field.empty()) absl::StrAppend(out, " (", node.field, ")");
  // The rule follows the node's line whatever its status: the edge exists.
  const std::string rule = node.route_rule.has_value()
                               ? absl::StrCat(pad, "  - ", RouteRuleText(*node.route_rule), "\n")
                               : "";
  switch (node.status) {
    case Status::kSelected:
      absl::StrAppend(out, ": variant \"", node.variant, "\" ",
                      node.constraints.empty() ? "(unconstrained)"
                                               : absl::StrCat("{", node.constraints, "}"),
                      " of ", node.object,
                      node.serving_previous.empty()
                          ? ""
                          : absl::StrCat(" (its previous revision: the latest is rejected: ",
                                         node.serving_previous, ")"),
                      ", version ", node.version, "\n", rule);
      break;
    case Status::kShownAbove:
      absl::StrAppend(
          out,
          node.problem.empty() ? ": shown above\n" : absl::StrCat(": BROKEN: ", node.problem, "\n"),
          rule);
      return;
    default:
      absl::StrAppend(out, ": BROKEN: ", node.problem, "\n", rule);
      return;
  }
  for (const std::string& detail : node.details) absl::StrAppend(out, pad, "  - ", detail, "\n");
  if (!node.problem.empty()) absl::StrAppend(out, pad, "  BROKEN: ", node.problem, "\n");
  for (const ExplainNode& child : node.children) NodeToText(child, indent + 1, out);
}

}  // namespace

absl::StatusOr<ExplainTarget> ParseExplainTarget(const ExplainRequest& request) {
  if (request.target.empty()) return absl::InvalidArgumentError("--target: must not be empty");
  ExplainTarget target;
  target.authority = request.authority;
  std::string name = request.target;
  if (IsXdstpName(request.target)) {
    if (!request.authority.empty()) {
      return absl::InvalidArgumentError(
          "--authority: not with an xdstp:// --target (the name carries its authority)");
    }
    target.listener_name = request.target;
  } else {
    if (absl::StartsWith(request.target, "xds:")) {
      // gRPC's target URI: xds:///NAME (the bootstrap's default authority)
      // or xds://AUTHORITY/NAME.
      absl::string_view rest = absl::string_view(request.target).substr(4);
      const size_t slash = rest.find('/', 2);
      if (!absl::StartsWith(rest, "//") || slash == absl::string_view::npos ||
          slash + 1 == rest.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--target: \"", request.target,
                         "\" is not an xDS target URI: expected xds:///NAME or "
                         "xds://AUTHORITY/NAME"));
      }
      const std::string authority(rest.substr(2, slash - 2));
      if (!authority.empty()) {
        if (!request.authority.empty() && request.authority != authority) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--authority: \"", request.authority, "\" differs from the authority \"",
              authority, "\" of --target ", request.target));
        }
        target.authority = authority;
      }
      name = std::string(rest.substr(slash + 1));
    }
    target.host = name;
    target.listener_name =
        target.authority.empty()
            ? name
            : absl::StrCat("xdstp://", target.authority, kListenerTemplatePrefix, name);
  }
  absl::StatusOr<std::string> normalized = NormalizeResourceName(target.listener_name);
  if (!normalized.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--target: \"", target.listener_name,
                                                   "\" is not a valid listener name: ",
                                                   normalized.status().message()));
  }
  target.listener_name = *std::move(normalized);
  return target;
}

absl::StatusOr<std::string> ListenerNameFor(const ExplainRequest& request) {
  absl::StatusOr<ExplainTarget> target = ParseExplainTarget(request);
  if (!target.ok()) return target.status();
  return target->listener_name;
}

std::string RejectionReason(const ObjectStatus& status) {
  for (const Finding& finding : status.findings) {
    if (finding.severity != Severity::kError) continue;
    return finding.field.empty() ? finding.message
                                 : absl::StrCat(finding.field, ": ", finding.message);
  }
  return "";
}

void AddSourceStatuses(absl::Span<const std::shared_ptr<const ObjectStatus>> statuses,
                       ExplainRequest* request) {
  for (const auto& status : statuses) {
    if (status == nullptr || status->accepted || !status->serving_previous) continue;
    request->serving_previous[status->ref] = RejectionReason(*status);
  }
}

absl::StatusOr<ExplainResult> Explain(const Snapshot& snapshot, const ExplainRequest& request) {
  absl::StatusOr<ExplainTarget> target = ParseExplainTarget(request);
  if (!target.ok()) return target.status();
  ExplainResult result;
  result.target = request.target;
  result.authority = target->authority;
  result.listener_name = target->listener_name;
  result.params = request.params;
  result.partial = snapshot.partial();
  // gRPC matches virtual hosts against the target's name (xds:///NAME).
  Walker walker(snapshot, request, target->host, &result.problems);
  result.root = walker.Visit(ListenerType(), result.listener_name, "", 0);
  return result;
}

std::string ExplainToJson(const ExplainResult& result) {
  Struct root;
  auto& f = *root.mutable_fields();
  f["target"] = StringValue(result.target);
  f["authority"] = StringValue(result.authority);
  f["listener_name"] = StringValue(result.listener_name);
  auto& params = *f["parameters"].mutable_struct_value()->mutable_fields();
  for (const auto& [key, value] : result.params) params[key] = StringValue(value);
  f["partial"] = BoolValue(result.partial);
  f["complete"] = BoolValue(result.complete());
  f["problems"] = StringList(result.problems);
  f["graph"] = NodeToValue(result.root);
  return json::MessageToJson(root, /*pretty=*/true);
}

absl::StatusOr<ExplainResult> ExplainFromJson(absl::string_view json) {
  Struct root;
  auto parsed = google::protobuf::util::JsonStringToMessage(std::string(json), &root);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not the JSON of an explanation: ", parsed.message().as_string()));
  }
  ExplainResult result;
  result.target = GetString(root, "target");
  result.authority = GetString(root, "authority");
  result.listener_name = GetString(root, "listener_name");
  auto params = root.fields().find("parameters");
  if (params != root.fields().end()) {
    for (const auto& [key, value] : params->second.struct_value().fields()) {
      result.params[key] = value.string_value();
    }
  }
  auto partial = root.fields().find("partial");
  result.partial = partial != root.fields().end() && partial->second.bool_value();
  result.problems = GetStrings(root, "problems");
  auto graph = root.fields().find("graph");
  if (graph == root.fields().end() || !graph->second.has_struct_value()) {
    return absl::InvalidArgumentError("not the JSON of an explanation: no \"graph\"");
  }
  absl::StatusOr<ExplainNode> node = NodeFromStruct(graph->second.struct_value(), 0);
  if (!node.ok()) return node.status();
  result.root = *std::move(node);
  return result;
}

std::string ExplainToText(const ExplainResult& result) {
  std::string out = absl::StrCat(
      "target \"", result.target, "\"",
      result.authority.empty() ? "" : absl::StrCat(" (authority ", result.authority, ")"),
      " with parameters ", ParameterSetToString(result.params), " -> listener \"",
      result.listener_name, "\"", result.partial ? " (from a relay's cache)" : "", "\n");
  NodeToText(result.root, 0, &out);
  if (result.complete()) {
    absl::StrAppend(&out, "graph complete\n");
  } else {
    absl::StrAppend(&out, "graph broken (", result.problems.size(), " problem",
                    result.problems.size() == 1 ? "" : "s", "):\n");
    for (const std::string& problem : result.problems) absl::StrAppend(&out, "  ", problem, "\n");
  }
  return out;
}

}  // namespace facet::xds
