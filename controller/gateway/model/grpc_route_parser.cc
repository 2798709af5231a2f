#include "controller/gateway/model/grpc_route_parser.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller::gateway {
namespace {

constexpr absl::string_view kMatchTypes[] = {"Exact", "RegularExpression"};
constexpr absl::string_view kFilterTypes[] = {"ResponseHeaderModifier", "RequestHeaderModifier",
                                              "RequestMirror", "ExtensionRef"};
// Each filter type and the field that carries its settings.
constexpr std::pair<absl::string_view, absl::string_view> kFilterPayloads[] = {
    {"RequestHeaderModifier", "requestHeaderModifier"},
    {"ResponseHeaderModifier", "responseHeaderModifier"},
    {"RequestMirror", "requestMirror"},
    {"ExtensionRef", "extensionRef"}};

constexpr size_t kMaxParentRefs = 32;
constexpr size_t kMaxHostnames = 16;
constexpr size_t kMaxRules = 16;
constexpr size_t kMaxMatchesPerRule = 64;
constexpr size_t kMaxMatchesPerRoute = 128;
constexpr size_t kMaxHeaders = 16;
constexpr size_t kMaxFilters = 16;
constexpr size_t kMaxBackendRefs = 16;
constexpr size_t kMaxHeaderEdits = 16;
constexpr int64_t kMaxWeight = 1'000'000;
constexpr int64_t kMaxInt32 = 2'147'483'647;

// GRPCMethodMatch service and method: at most 1024 characters; the CEL
// patterns of an Exact match are checked apart.
const StringRule& MethodPartRule() {
  static const StringRule kRule{0, 1024, nullptr, ""};
  return kRule;
}

constexpr char kExactServiceText[] = R"(^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$)";
constexpr char kExactMethodText[] = R"(^[A-Za-z_][A-Za-z_0-9]*$)";

const RE2& ExactService() {
  static const RE2* const kPattern = new RE2(kExactServiceText);
  return *kPattern;
}

const RE2& ExactMethod() {
  static const RE2* const kPattern = new RE2(kExactMethodText);
  return *kPattern;
}

// Returns the match type (Exact when unset), or nullopt for a type this
// version does not know (recorded as UnsupportedValue).
std::optional<MatchType> ReadMatchType(SpecReader& reader, const YAML::Node& node,
                                       const std::string& path) {
  const size_t before = reader.count();
  std::optional<std::string> type = reader.Enum(node, path, "type", kMatchTypes, kUnsupportedValue);
  if (reader.count() > before) return std::nullopt;
  return type == "RegularExpression" ? MatchType::kRegularExpression : MatchType::kExact;
}

// Records an UnsupportedValue error when `text` is not an RE2 regular
// expression (Facet's dialect for RegularExpression matches).
void CheckRegex(SpecReader& reader, const std::string& field, const std::string& text) {
  RE2::Options options;
  options.set_log_errors(false);
  RE2 re(text, options);
  if (!re.ok()) {
    reader.Error(field,
                 absl::StrCat(Quoted(text), " is not an RE2 regular expression: ", re.error()),
                 kUnsupportedValue);
  }
}

MethodMatch ReadMethodMatch(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  reader.CheckKnown(node, path, {"type", "service", "method"});
  MethodMatch method;
  const std::optional<MatchType> type = ReadMatchType(reader, node, path);
  method.type = type.value_or(MatchType::kExact);
  const std::optional<std::string> service = reader.String(node, path, "service", MethodPartRule());
  const std::optional<std::string> method_name =
      reader.String(node, path, "method", MethodPartRule());
  method.service = service.value_or("");
  method.method = method_name.value_or("");
  // Judged on what is written: a part refused above is not also missing. An
  // empty regular expression counts as left out; an empty Exact part is
  // present, as for the CRD's CEL rules (has()), and refused below.
  auto written = [&](absl::string_view key) {
    const YAML::Node part = json::Child(node, key);
    return part.IsDefined() && !part.IsNull() &&
           !(type == MatchType::kRegularExpression && part.IsScalar() && part.Scalar().empty());
  };
  if (!written("service") && !written("method")) {
    reader.Error(path,
                 "set service or method, or both (a method match without either matches "
                 "nothing the spec defines; leave method out to match every call)");
  }
  if (type == MatchType::kExact) {
    if (service.has_value() && !RE2::FullMatch(method.service, ExactService())) {
      reader.Error(absl::StrCat(path, ".service"),
                   absl::StrCat(Quoted(method.service),
                                " is not a gRPC service name (an Exact service must match ",
                                kExactServiceText, ")"));
    }
    if (method_name.has_value() && !RE2::FullMatch(method.method, ExactMethod())) {
      reader.Error(absl::StrCat(path, ".method"),
                   absl::StrCat(Quoted(method.method),
                                " is not a gRPC method name (an Exact method must match ",
                                kExactMethodText, ")"));
    }
  } else if (type == MatchType::kRegularExpression) {
    if (!method.service.empty()) CheckRegex(reader, absl::StrCat(path, ".service"), method.service);
    if (!method.method.empty()) CheckRegex(reader, absl::StrCat(path, ".method"), method.method);
  }
  return method;
}

// Records an error on each entry whose `name` repeats an earlier one
// (x-kubernetes-list-type: map keyed by name).
void CheckUniqueNames(SpecReader& reader, const std::vector<std::string>& names,
                      const std::string& path) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    auto [it, inserted] = first.emplace(names[i], i);
    if (!inserted) {
      reader.Error(absl::StrCat(Item(path, i), ".name"),
                   absl::StrCat(Quoted(names[i]), " is also the name of ", Item(path, it->second),
                                "; names must be unique in this list"));
    }
  }
}

RouteMatch ReadRouteMatch(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  RouteMatch match;
  match.field = path;
  if (!reader.ExpectMap(node, path)) {
    return match;
  }
  reader.CheckKnown(node, path, {"method", "headers"});
  const YAML::Node method = reader.Map(node, path, "method");
  if (method.IsDefined()) match.method = ReadMethodMatch(reader, method, path + ".method");
  const std::string headers_path = path + ".headers";
  std::vector<std::string> names;
  const std::vector<YAML::Node> headers = reader.List(node, path, "headers", 0, kMaxHeaders);
  for (size_t i = 0; i < headers.size(); ++i) {
    const std::string header_path = Item(headers_path, i);
    HeaderMatch header;
    if (reader.ExpectMap(headers[i], header_path)) {
      reader.CheckKnown(headers[i], header_path, {"type", "name", "value"});
      header.type = ReadMatchType(reader, headers[i], header_path).value_or(MatchType::kExact);
      header.name =
          reader.String(headers[i], header_path, "name", HeaderNameRule(), true).value_or("");
      header.value =
          reader.String(headers[i], header_path, "value", HeaderValueRule(), true).value_or("");
      if (header.type == MatchType::kRegularExpression && !header.value.empty()) {
        CheckRegex(reader, header_path + ".value", header.value);
      }
    }
    names.push_back(header.name);
    match.headers.push_back(std::move(header));
  }
  CheckUniqueNames(reader, names, headers_path);
  return match;
}

// Reads the {set, add, remove} of a RequestHeaderModifier or
// ResponseHeaderModifier filter (HTTPHeaderFilter).
void ReadHeaderFilter(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  reader.CheckKnown(node, path, {"set", "add", "remove"});
  for (absl::string_view key : {"set", "add"}) {
    const std::string list_path = absl::StrCat(path, ".", key);
    std::vector<std::string> names;
    const std::vector<YAML::Node> headers = reader.List(node, path, key, 0, kMaxHeaderEdits);
    for (size_t i = 0; i < headers.size(); ++i) {
      const std::string header_path = Item(list_path, i);
      if (!reader.ExpectMap(headers[i], header_path)) {
        names.emplace_back();
        continue;
      }
      reader.CheckKnown(headers[i], header_path, {"name", "value"});
      names.push_back(
          reader.String(headers[i], header_path, "name", HeaderNameRule(), true).value_or(""));
      reader.String(headers[i], header_path, "value", HeaderValueRule(), true);
    }
    CheckUniqueNames(reader, names, list_path);
  }
  static const StringRule kAny;
  std::set<std::string> removed;
  const std::vector<YAML::Node> remove = reader.List(node, path, "remove", 0, kMaxHeaderEdits);
  for (size_t i = 0; i < remove.size(); ++i) {
    const std::string item_path = Item(path + ".remove", i);
    std::optional<std::string> name = reader.StringAt(remove[i], item_path, kAny);
    if (name.has_value() && !removed.insert(*name).second) {
      reader.Error(item_path, absl::StrCat(Quoted(*name), " is listed twice"));
    }
  }
}

// Reads a reference to a backend (BackendObjectReference): group "" and
// kind Service by default; a Service needs a port.
ObjectReference ReadBackendObjectReference(SpecReader& reader, const YAML::Node& node,
                                           const std::string& path) {
  ObjectReference ref = ReadReference(
      reader, node, path,
      {.default_group = "", .default_kind = "Service", .has_namespace = true, .has_port = true});
  if (ref.group.empty() && ref.kind == "Service" && !ref.port.has_value() &&
      !json::Child(node, "port").IsDefined()) {
    reader.Error(path + ".port", "is required for a Service reference (the Service port)");
  }
  return ref;
}

void ReadMirrorFilter(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  reader.CheckKnown(node, path, {"backendRef", "percent", "fraction"});
  const YAML::Node backend = reader.Map(node, path, "backendRef", /*required=*/true);
  if (backend.IsDefined()) {
    const std::string backend_path = path + ".backendRef";
    reader.CheckKnown(backend, backend_path, {"group", "kind", "name", "namespace", "port"});
    ReadBackendObjectReference(reader, backend, backend_path);
  }
  reader.Integer(node, path, "percent", 0, 100);
  const YAML::Node fraction = reader.Map(node, path, "fraction");
  if (fraction.IsDefined()) {
    const std::string fraction_path = path + ".fraction";
    reader.CheckKnown(fraction, fraction_path, {"numerator", "denominator"});
    const std::optional<int64_t> numerator =
        reader.Integer(fraction, fraction_path, "numerator", 0, kMaxInt32, /*required=*/true);
    const int64_t denominator =
        reader.Integer(fraction, fraction_path, "denominator", 1, kMaxInt32).value_or(100);
    if (numerator.has_value() && *numerator > denominator) {
      reader.Error(fraction_path, "numerator must be less than or equal to denominator");
    }
    if (json::Child(node, "percent").IsDefined()) {
      reader.Error(path, "set percent or fraction, not both");
    }
  }
}

RouteFilter ReadFilter(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  RouteFilter filter;
  filter.field = path;
  if (!reader.ExpectMap(node, path)) {
    return filter;
  }
  reader.CheckKnown(
      node, path,
      {"type", "requestHeaderModifier", "responseHeaderModifier", "requestMirror", "extensionRef"});
  filter.type = reader
                    .Enum(node, path, "type", kFilterTypes, kUnsupportedValue,
                          /*required=*/true)
                    .value_or("");
  for (const auto& [type, key] : kFilterPayloads) {
    const bool set = json::Child(node, key).IsDefined() && !json::Child(node, key).IsNull();
    const std::string field = absl::StrCat(path, ".", key);
    if (set && filter.type != type && !filter.type.empty()) {
      reader.Error(field, absl::StrCat("must be unset unless type is ", type));
    } else if (!set && filter.type == type) {
      reader.Error(field, absl::StrCat("is required for type ", type));
    }
    if (!set || filter.type != type) continue;
    const YAML::Node payload = reader.Map(node, path, key);
    if (!payload.IsDefined()) continue;
    if (key == "requestMirror") {
      ReadMirrorFilter(reader, payload, field);
    } else if (key == "extensionRef") {
      reader.CheckKnown(payload, field, {"group", "kind", "name"});
      ReadReference(reader, payload, field, {});
    } else {
      ReadHeaderFilter(reader, payload, field);
    }
  }
  return filter;
}

std::vector<RouteFilter> ReadFilters(SpecReader& reader, const YAML::Node& parent,
                                     const std::string& path) {
  std::vector<RouteFilter> filters;
  const std::string list_path = path + ".filters";
  const std::vector<YAML::Node> items = reader.List(parent, path, "filters", 0, kMaxFilters);
  std::map<std::string, size_t> once;  // The header modifiers, which may appear once.
  for (size_t i = 0; i < items.size(); ++i) {
    RouteFilter filter = ReadFilter(reader, items[i], Item(list_path, i));
    if (filter.type == "RequestHeaderModifier" || filter.type == "ResponseHeaderModifier") {
      auto [it, inserted] = once.emplace(filter.type, i);
      if (!inserted) {
        reader.Error(filter.field, absl::StrCat(filter.type, " filter cannot be repeated (also ",
                                                Item(list_path, it->second), ")"));
      }
    }
    filters.push_back(std::move(filter));
  }
  return filters;
}

BackendRef ReadBackendRef(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  BackendRef backend;
  backend.ref.field = path;
  if (!reader.ExpectMap(node, path)) {
    return backend;
  }
  reader.CheckKnown(node, path,
                    {"group", "kind", "name", "namespace", "port", "weight", "filters"});
  backend.ref = ReadBackendObjectReference(reader, node, path);
  backend.weight =
      static_cast<int>(reader.Integer(node, path, "weight", 0, kMaxWeight).value_or(1));
  backend.filters = ReadFilters(reader, node, path);
  return backend;
}

RouteRule ReadRule(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  RouteRule rule;
  rule.field = path;
  const size_t findings_before = reader.count();
  if (!reader.ExpectMap(node, path)) {
    rule.has_errors = true;
    return rule;
  }
  reader.CheckKnown(node, path,
                    {"name", "matches", "filters", "backendRefs", "sessionPersistence"});
  rule.name = reader.String(node, path, "name", SectionNameRule());
  const std::vector<YAML::Node> matches = reader.List(node, path, "matches", 0, kMaxMatchesPerRule);
  for (size_t i = 0; i < matches.size(); ++i) {
    rule.matches.push_back(ReadRouteMatch(reader, matches[i], Item(path + ".matches", i)));
  }
  rule.filters = ReadFilters(reader, node, path);
  const std::vector<YAML::Node> backends =
      reader.List(node, path, "backendRefs", 0, kMaxBackendRefs);
  for (size_t i = 0; i < backends.size(); ++i) {
    rule.backend_refs.push_back(
        ReadBackendRef(reader, backends[i], Item(path + ".backendRefs", i)));
  }
  const YAML::Node session = json::Child(node, "sessionPersistence");
  if (session.IsDefined() && !session.IsNull()) {
    rule.session_persistence = true;
    reader.Error(path + ".sessionPersistence",
                 "is an experimental field Facet does not support: the proxyless gRPC clients "
                 "it serves keep no sessions; remove it",
                 kUnsupportedValue);
  }
  rule.has_errors = reader.count() != findings_before;
  return rule;
}

ObjectReference ReadParentRef(SpecReader& reader, const YAML::Node& node, const std::string& path) {
  if (!reader.ExpectMap(node, path)) {
    return {.field = path};
  }
  reader.CheckKnown(node, path, {"group", "kind", "namespace", "name", "sectionName", "port"});
  return ReadReference(reader, node, path,
                       {.default_group = kGatewayGroup,
                        .default_kind = "Gateway",
                        .has_namespace = true,
                        .has_section_name = true,
                        .has_port = true});
}

// The CRD's CEL rules on parentRefs: references to one parent all set
// sectionName or none does, and no two name the same section.
void CheckParentSections(SpecReader& reader, const std::vector<ObjectReference>& parents) {
  for (size_t j = 0; j < parents.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      const ObjectReference& a = parents[i];
      const ObjectReference& b = parents[j];
      if (a.name.empty() || std::tie(a.group, a.kind, a.name, a.namespace_) !=
                                std::tie(b.group, b.kind, b.name, b.namespace_)) {
        continue;
      }
      if (a.section_name.has_value() != b.section_name.has_value()) {
        reader.Error(b.field, absl::StrCat("sectionName must be specified when parentRefs "
                                           "includes 2 or more references to the same parent (",
                                           a.field, ")"));
      } else if (a.section_name == b.section_name) {
        reader.Error(b.field, absl::StrCat("sectionName must be unique when parentRefs includes 2 "
                                           "or more references to the same parent (",
                                           a.field, ")"));
      } else {
        continue;
      }
      break;
    }
  }
}

void CheckRuleNames(SpecReader& reader, std::vector<RouteRule>& rules) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (!rules[i].name.has_value()) continue;
    auto [it, inserted] = first.emplace(*rules[i].name, i);
    if (inserted) continue;
    reader.Error(
        rules[i].field + ".name",
        absl::StrCat(Quoted(*rules[i].name), " is also the name of ", rules[it->second].field,
                     "; rule names must be unique within a route"));
    rules[i].has_errors = true;
  }
}

}  // namespace

GrpcRoute ParseGrpcRouteSpec(const YAML::Node& spec, SpecReader& reader) {
  GrpcRoute route;
  reader.CheckKnown(spec, "spec", {"parentRefs", "hostnames", "rules", "useDefaultGateways"});
  const std::vector<YAML::Node> parents =
      reader.List(spec, "spec", "parentRefs", 0, kMaxParentRefs);
  for (size_t i = 0; i < parents.size(); ++i) {
    route.parent_refs.push_back(ReadParentRef(reader, parents[i], Item("spec.parentRefs", i)));
  }
  CheckParentSections(reader, route.parent_refs);
  const std::vector<YAML::Node> hostnames =
      reader.List(spec, "spec", "hostnames", 0, kMaxHostnames);
  for (size_t i = 0; i < hostnames.size(); ++i) {
    if (std::optional<std::string> hostname =
            reader.StringAt(hostnames[i], Item("spec.hostnames", i), HostnameRule())) {
      route.hostnames.push_back(*std::move(hostname));
    }
  }
  const std::vector<YAML::Node> rules = reader.List(spec, "spec", "rules", 0, kMaxRules);
  size_t matches = 0;
  for (size_t i = 0; i < rules.size(); ++i) {
    const YAML::Node written = json::Child(rules[i], "matches");
    if (written.IsSequence()) matches += written.size();
    route.rules.push_back(ReadRule(reader, rules[i], Item("spec.rules", i)));
  }
  if (matches > kMaxMatchesPerRoute) {
    reader.Error("spec.rules", absl::StrCat("has ", matches, " matches over all rules; at most ",
                                            kMaxMatchesPerRoute, " are allowed in a route"));
  }
  CheckRuleNames(reader, route.rules);
  const std::optional<std::string> defaults =
      reader.Enum(spec, "spec", "useDefaultGateways", {"All", "None"}, kUnsupportedValue);
  if (defaults == "All") {
    reader.Error("spec.useDefaultGateways",
                 "is an experimental field Facet does not support: Facet attaches routes to "
                 "Services (mesh), never to default Gateways; remove it",
                 kUnsupportedValue);
  }
  return route;
}

}  // namespace facet::controller::gateway
