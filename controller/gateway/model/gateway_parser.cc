#include "controller/gateway/model/gateway_parser.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/gateway/model/api_fields.h"
#include "controller/gateway/model/grpc_route_parser.h"
#include "controller/kubernetes/endpoints/endpoint_slices.h"
#include "controller/objects/fields.h"
#include "re2/re2.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller::gateway {
namespace {

constexpr char kDiscoveryGroup[] = "discovery.k8s.io";
constexpr char kFacetGroup[] = "facet.dev";
constexpr size_t kMaxGrantEntries = 16;
constexpr size_t kMaxTargetRefs = 16;
constexpr size_t kUnbounded = std::numeric_limits<size_t>::max();

struct KindVersions {
  const char* group;
  const char* kind;
  std::vector<absl::string_view> versions;  // Those Facet reads.
};

const std::vector<KindVersions>& Kinds() {
  static const auto* const kKinds = new std::vector<KindVersions>{
      {kGatewayGroup, kGrpcRouteKind, {"v1"}},
      {kGatewayGroup, kReferenceGrantKind, {"v1beta1", "v1"}},
      {"", kServiceKind, {"v1"}},
      {kDiscoveryGroup, kEndpointSliceKind, {"v1"}},
      {kFacetGroup, kXdsVariantPolicyKind, {"v1alpha1"}},
  };
  return *kKinds;
}

// Splits "group/version" ("v1" is the core group's).
std::pair<absl::string_view, absl::string_view> SplitApiVersion(absl::string_view api_version) {
  const size_t slash = api_version.find('/');
  if (slash == absl::string_view::npos) return {"", api_version};
  return {api_version.substr(0, slash), api_version.substr(slash + 1)};
}

const KindVersions* FindKind(absl::string_view api_version, absl::string_view kind) {
  const absl::string_view group = SplitApiVersion(api_version).first;
  for (const KindVersions& entry : Kinds()) {
    if (entry.group == group && entry.kind == kind) return &entry;
  }
  return nullptr;
}

std::string ApiVersion(const KindVersions& kind, absl::string_view version) {
  return kind.group[0] == '\0' ? std::string(version) : absl::StrCat(kind.group, "/", version);
}

// A Service's name becomes a DNS label of its own: an RFC 1035 label.
void CheckServiceName(const std::string& name, SpecReader& reader) {
  static const RE2* const kLabel = new RE2("[a-z]([-a-z0-9]*[a-z0-9])?");
  if (name.size() > 63 || !RE2::FullMatch(name, *kLabel)) {
    reader.Error("metadata.name",
                 absl::StrCat(Quoted(name),
                              " is not a valid Service name (lower-case RFC 1035 label: a "
                              "letter first, at most 63 characters)"));
  }
}

ServiceInfo ParseService(const YAML::Node& spec, SpecReader& reader) {
  static const StringRule kAny;
  static const StringRule kPortName{0, 63, &DnsLabel(), "a lower-case RFC 1123 label"};
  ServiceInfo service;
  service.type =
      reader.Enum(spec, "spec", "type", {"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"})
          .value_or("ClusterIP");
  service.cluster_ip = reader.String(spec, "spec", "clusterIP", kAny).value_or("");
  service.external_name = reader.String(spec, "spec", "externalName", kAny).value_or("");
  if (service.type == "ExternalName" && service.external_name.empty()) {
    reader.Error("spec.externalName", "is required for type ExternalName");
  }
  const std::vector<YAML::Node> ports = reader.List(spec, "spec", "ports", 0, kUnbounded);
  std::map<std::string, size_t> names;
  std::map<std::pair<int, std::string>, size_t> numbers;  // By port and protocol.
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string path = Item("spec.ports", i);
    if (!reader.ExpectMap(ports[i], path)) continue;
    ServicePort port;
    // "" is unnamed, as when the name is left out (the pattern is for names).
    const YAML::Node name = json::Child(ports[i], "name");
    const bool unnamed =
        !name.IsDefined() || name.IsNull() || (IsString(name) && name.Scalar().empty());
    if (!unnamed) port.name = reader.String(ports[i], path, "name", kPortName).value_or("");
    port.port =
        static_cast<int>(reader.Integer(ports[i], path, "port", 1, 65535, true).value_or(0));
    port.protocol = reader.Enum(ports[i], path, "protocol", {"TCP", "UDP", "SCTP"}).value_or("TCP");
    const YAML::Node target = json::Child(ports[i], "targetPort");
    if (target.IsScalar()) {
      port.target_port = target.Scalar();
    } else if (target.IsDefined() && !target.IsNull()) {
      reader.Error(path + ".targetPort", absl::StrCat("expected a port number or name, found ",
                                                      json::DescribeNode(target)));
    }
    if (ports.size() > 1 && unnamed) {
      reader.Error(path + ".name", "is required when a Service has more than one port");
    } else if (auto [it, inserted] = names.emplace(port.name, i); !inserted && !port.name.empty()) {
      reader.Error(path + ".name", absl::StrCat(Quoted(port.name), " is also the name of ",
                                                Item("spec.ports", it->second)));
    }
    // Kubernetes refuses a port and protocol twice; the names served for a
    // Service port derive from its number.
    if (port.port != 0) {
      auto [it, inserted] = numbers.emplace(std::make_pair(port.port, port.protocol), i);
      if (!inserted) {
        reader.Error(path + ".port",
                     absl::StrCat("port ", port.port, "/", port.protocol, " is also ",
                                  Item("spec.ports", it->second), "'s"));
      }
    }
    service.ports.push_back(std::move(port));
  }
  return service;
}

ReferenceGrant ParseReferenceGrant(const YAML::Node& spec, SpecReader& reader) {
  ReferenceGrant grant;
  reader.CheckKnown(spec, "spec", {"from", "to"});
  const std::vector<YAML::Node> from = reader.List(spec, "spec", "from", 1, kMaxGrantEntries);
  for (size_t i = 0; i < from.size(); ++i) {
    const std::string path = Item("spec.from", i);
    if (!reader.ExpectMap(from[i], path)) continue;
    reader.CheckKnown(from[i], path, {"group", "kind", "namespace"});
    ReferenceGrant::From entry;
    entry.group = reader.String(from[i], path, "group", GroupRule(), true).value_or("");
    entry.kind = reader.String(from[i], path, "kind", KindRule(), true).value_or("");
    entry.namespace_ =
        reader.String(from[i], path, "namespace", NamespaceRule(), true).value_or("");
    grant.from.push_back(std::move(entry));
  }
  const std::vector<YAML::Node> to = reader.List(spec, "spec", "to", 1, kMaxGrantEntries);
  for (size_t i = 0; i < to.size(); ++i) {
    const std::string path = Item("spec.to", i);
    if (!reader.ExpectMap(to[i], path)) continue;
    reader.CheckKnown(to[i], path, {"group", "kind", "name"});
    ReferenceGrant::To entry;
    entry.group = reader.String(to[i], path, "group", GroupRule(), true).value_or("");
    entry.kind = reader.String(to[i], path, "kind", KindRule(), true).value_or("");
    entry.name = reader.String(to[i], path, "name", ObjectNameRule());
    grant.to.push_back(std::move(entry));
  }
  return grant;
}

VariantPolicy ParseVariantPolicy(const YAML::Node& spec, SpecReader& reader) {
  VariantPolicy policy;
  reader.CheckKnown(spec, "spec", {"targetRefs", "when"});
  const std::vector<YAML::Node> targets =
      reader.List(spec, "spec", "targetRefs", 1, kMaxTargetRefs);
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string path = Item("spec.targetRefs", i);
    if (!reader.ExpectMap(targets[i], path)) continue;
    reader.CheckKnown(targets[i], path, {"group", "kind", "name", "sectionName"});
    ObjectReference ref = ReadReference(reader, targets[i], path, {.has_section_name = true});
    if (json::Child(targets[i], "group").IsDefined() && ref.group != kGatewayGroup) {
      reader.Error(path + ".group",
                   absl::StrCat("must be ", kGatewayGroup, " (policies target GRPCRoutes)"));
    }
    if (json::Child(targets[i], "kind").IsDefined() && ref.kind != kGrpcRouteKind) {
      reader.Error(path + ".kind", absl::StrCat("must be ", kGrpcRouteKind));
    }
    // The CRD's CEL rules: no target twice; a route named by several
    // targets names a rule in each.
    for (const ObjectReference& other : policy.target_refs) {
      if (std::tie(other.group, other.kind, other.name) !=
          std::tie(ref.group, ref.kind, ref.name)) {
        continue;
      }
      if (other.section_name.has_value() != ref.section_name.has_value()) {
        reader.Error(path, absl::StrCat("a GRPCRoute named by several targetRefs needs a "
                                        "sectionName in each (also ",
                                        other.field, ")"));
        break;
      }
      if (other.section_name == ref.section_name) {
        reader.Error(path, absl::StrCat("targets the same ", ref.section_name ? "rule" : "route",
                                        " as ", other.field, "; each targetRef must be unique"));
        break;
      }
    }
    policy.target_refs.push_back(std::move(ref));
  }
  policy.when = json::Child(spec, "when");
  if (!policy.when.IsDefined() || policy.when.IsNull()) {
    reader.Error("spec.when", "is required: the clients the targets are for ({} for every client)");
    return policy;
  }
  absl::StatusOr<xds::DynamicParameterConstraints> compiled =
      xds::CompileMatch(policy.when, "spec.when");
  if (compiled.ok()) {
    policy.constraints = *std::move(compiled);
  } else {
    reader.Error("spec.when", std::string(compiled.status().message()), "InvalidConstraints");
  }
  return policy;
}

SliceRef ParseSlice(const YAML::Node& document, std::vector<xds::Finding>* findings) {
  SliceRef slice;
  slice.slice = document;
  const YAML::Node label =
      json::Child(json::Child(json::Child(document, "metadata"), "labels"), kServiceNameLabel);
  if (IsString(label) && !label.Scalar().empty()) {
    slice.service = label.Scalar();
  } else {
    findings->push_back({xds::Severity::kWarning, "InvalidSpec",
                         absl::StrCat("metadata.labels.", kServiceNameLabel),
                         "is not set: the slice belongs to no Service and is not used"});
  }
  return slice;
}

}  // namespace

bool IsGatewayKind(absl::string_view api_version, absl::string_view kind) {
  return FindKind(api_version, kind) != nullptr;
}

GatewayObject ParseGatewayObject(const YAML::Node& document, absl::string_view location,
                                 absl::string_view default_namespace) {
  const std::string api_version = json::Child(document, "apiVersion").Scalar();
  const std::string kind = json::Child(document, "kind").Scalar();
  GatewayObject object;
  object.location = std::string(location);
  std::vector<xds::Finding>& findings = object.findings;
  SpecReader reader(&findings);
  const KindVersions* known = FindKind(api_version, kind);
  const absl::string_view version = SplitApiVersion(api_version).second;
  if (known != nullptr &&
      std::find(known->versions.begin(), known->versions.end(), version) == known->versions.end()) {
    std::vector<std::string> supported;
    for (absl::string_view v : known->versions) supported.push_back(ApiVersion(*known, v));
    reader.Error("apiVersion", absl::StrCat("unsupported version ", api_version, "; Facet reads ",
                                            kind, " as ", absl::StrJoin(supported, " or ")));
  }
  const YAML::Node metadata = json::Child(document, "metadata");
  const std::string name = ObjectName(metadata);
  if (kind == kServiceKind) {
    CheckServiceName(name, reader);
  } else {
    CheckObjectName(name, &findings);
  }
  object.ref = {kind, ObjectNamespace(metadata, default_namespace, &findings), name};
  object.generation = ObjectGeneration(metadata);
  const YAML::Node created = json::Child(metadata, "creationTimestamp");
  if (created.IsScalar()) {
    object.creation_timestamp = created.Scalar();
    absl::Time time;
    std::string error;
    if (absl::ParseTime(absl::RFC3339_full, object.creation_timestamp, &time, &error)) {
      object.creation_time = time;
    } else {
      reader.Error("metadata.creationTimestamp",
                   absl::StrCat(Quoted(object.creation_timestamp),
                                " is not an RFC 3339 time (2006-01-02T15:04:05Z)"));
    }
  } else if (created.IsDefined() && !created.IsNull()) {
    reader.Error("metadata.creationTimestamp",
                 absl::StrCat("expected an RFC 3339 time, found ", json::DescribeNode(created)));
  }

  if (kind == kEndpointSliceKind) {
    object.spec = ParseSlice(document, &findings);
    return object;
  }
  const YAML::Node spec = json::Child(document, "spec");
  if (!spec.IsMap()) {
    reader.Error("spec", spec.IsDefined() && !spec.IsNull()
                             ? absl::StrCat("expected a map, found ", json::DescribeNode(spec))
                             : "is required");
  }
  if (kind == kGrpcRouteKind) {
    object.spec = spec.IsMap() ? ParseGrpcRouteSpec(spec, reader) : GrpcRoute();
  } else if (kind == kServiceKind) {
    object.spec = spec.IsMap() ? ParseService(spec, reader) : ServiceInfo();
  } else if (kind == kReferenceGrantKind) {
    object.spec = spec.IsMap() ? ParseReferenceGrant(spec, reader) : ReferenceGrant();
  } else {
    object.spec = spec.IsMap() ? ParseVariantPolicy(spec, reader) : VariantPolicy();
  }
  return object;
}

}  // namespace facet::controller::gateway
