#include "test/kube_api_server/resource_types.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace facet::testing {
namespace {

const std::vector<std::string>& AllVerbs() {
  static const auto* verbs = new std::vector<std::string>{
      "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"};
  return *verbs;
}

// The Service columns `kubectl get services` prints that no JSONPath gives
// (k8s.io/kubernetes/pkg/printers/internalversion: printService).
Json ServiceExternalIp(const Json& service) {
  const std::string type = GetString(service, {"spec", "type"});
  std::vector<std::string> ips;
  if (const Json* external = FindPath(service, {"spec", "externalIPs"});
      external != nullptr && external->is_array()) {
    for (const Json& ip : *external) {
      if (ip.is_string()) ips.push_back(ip.get<std::string>());
    }
  }
  if (type == "ExternalName") return Json(GetString(service, {"spec", "externalName"}));
  if (type == "LoadBalancer") {
    if (const Json* ingress = FindPath(service, {"status", "loadBalancer", "ingress"});
        ingress != nullptr && ingress->is_array()) {
      for (const Json& entry : *ingress) {
        std::string address = GetString(entry, {"ip"});
        if (address.empty()) address = GetString(entry, {"hostname"});
        if (!address.empty()) ips.push_back(address);
      }
    }
    if (ips.empty()) return Json("<pending>");
  }
  return Json(ips.empty() ? "<none>" : absl::StrJoin(ips, ","));
}

Json ServicePorts(const Json& service) {
  std::vector<std::string> ports;
  if (const Json* list = FindPath(service, {"spec", "ports"});
      list != nullptr && list->is_array()) {
    for (const Json& port : *list) {
      const Json* number = Find(port, "port");
      const Json* node_port = Find(port, "nodePort");
      std::string text = number != nullptr ? Dump(*number) : "";
      if (node_port != nullptr && node_port->is_number_integer() && node_port->get<int64_t>() > 0) {
        absl::StrAppend(&text, ":", node_port->get<int64_t>());
      }
      absl::StrAppend(&text, "/", GetString(port, {"protocol"}));
      ports.push_back(std::move(text));
    }
  }
  return Json(ports.empty() ? "<none>" : absl::StrJoin(ports, ","));
}

Json ServiceSelector(const Json& service) {
  std::vector<std::string> pairs;
  if (const Json* selector = FindPath(service, {"spec", "selector"});
      selector != nullptr && selector->is_object()) {
    for (const auto& [key, value] : selector->items()) {
      pairs.push_back(absl::StrCat(key, "=", value.is_string() ? value.get<std::string>() : ""));
    }
  }
  return Json(pairs.empty() ? "<none>" : absl::StrJoin(pairs, ","));
}

// A type with every verb; its singular name is its kind in lower case.
ResourceType NewType(const char* group, const char* version, const char* kind, const char* plural,
                     bool namespaced, bool custom, bool status_subresource) {
  ResourceType type;
  type.group = group;
  type.version = version;
  type.kind = kind;
  type.plural = plural;
  type.singular = absl::AsciiStrToLower(kind);
  type.namespaced = namespaced;
  type.custom = custom;
  type.status_subresource = status_subresource;
  type.verbs = AllVerbs();
  return type;
}

std::vector<ResourceType> MakeTypes() {
  std::vector<ResourceType> types;

  ResourceType xr =
      NewType("facet.dev", "v1alpha1", "XdsResource", "xdsresources", /*namespaced=*/true,
              /*custom=*/true, /*status_subresource=*/true);
  xr.short_names = {"xr", "xdsr"};
  xr.categories = {"facet"};
  xr.columns = {
      {"Type", "string", ".spec.type", "The xDS resource type, as written in spec.type.", 0},
      {"xDS Name", "string", ".status.servedName",
       "The full xDS name Facet serves this resource under.", 0},
      {"Variants", "integer", ".status.variantCount", "The number of variants Facet accepted.", 0},
      {"Accepted", "string", ".status.conditions[?(@.type==\"Accepted\")].status",
       "Whether the object passed validation (True, False or Unknown).", 0},
      {"Programmed", "string", ".status.conditions[?(@.type==\"Programmed\")].status",
       "Whether Facet serves the current revision of the object.", 1},
      {"Authority", "string", ".spec.authority",
       "The xdstp:// authority, empty for old-style names.", 1},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(xr);

  ResourceType xa =
      NewType("facet.dev", "v1alpha1", "XdsAuthority", "xdsauthorities", /*namespaced=*/false,
              /*custom=*/true, /*status_subresource=*/true);
  xa.short_names = {"xa"};
  xa.categories = {"facet"};
  xa.columns = {
      {"Authority", "string", ".spec.authority",
       "The authority in xdstp:// names (empty means metadata.name).", 0},
      {"Resources", "integer", ".status.resources",
       "The number of XdsResources currently served under this authority.", 0},
      {"Accepted", "string", ".status.conditions[?(@.type==\"Accepted\")].status",
       "Whether the declaration was accepted (True, False or Unknown).", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(xa);

  ResourceType xvp = NewType("facet.dev", "v1alpha1", "XdsVariantPolicy", "xdsvariantpolicies",
                             /*namespaced=*/true,
                             /*custom=*/true, /*status_subresource=*/true);
  xvp.short_names = {"xvp"};
  xvp.categories = {"facet"};
  xvp.columns = {
      {"Target", "string", ".spec.targetRefs[0].name", "The name of the first targeted GRPCRoute.",
       0},
      {"Section", "string", ".spec.targetRefs[0].sectionName",
       "The rule of the first target (its rules[].name); empty for the whole route.", 0},
      {"Accepted", "string", ".status.ancestors[0].conditions[?(@.type==\"Accepted\")].status",
       "Whether Facet applies the policy, for the first ancestor (True, False or Unknown).", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(xvp);

  // The Gateway API kinds Facet reads, as the v1.4 standard CRDs define them.
  ResourceType grpc_route =
      NewType("gateway.networking.k8s.io", "v1", "GRPCRoute", "grpcroutes", /*namespaced=*/true,
              /*custom=*/true, /*status_subresource=*/true);
  grpc_route.categories = {"gateway-api"};
  grpc_route.columns = {
      {"Hostnames", "string", ".spec.hostnames", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(grpc_route);

  // No status subresource: status is part of the object.
  ResourceType grant = NewType("gateway.networking.k8s.io", "v1beta1", "ReferenceGrant",
                               "referencegrants", /*namespaced=*/true,
                               /*custom=*/true, /*status_subresource=*/false);
  grant.short_names = {"refgrant"};
  grant.categories = {"gateway-api"};
  grant.columns = {{"Age", "date", ".metadata.creationTimestamp", "", 0}};
  types.push_back(grant);

  ResourceType lease = NewType("coordination.k8s.io", "v1", "Lease", "leases", /*namespaced=*/true,
                               /*custom=*/false, /*status_subresource=*/false);
  lease.allow_create_on_update = true;
  lease.columns = {
      {"Holder", "string", ".spec.holderIdentity", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(lease);

  // What StatefulSets and DaemonSets keep their history in; Facet keeps the
  // last accepted spec of each XdsResource in them.
  ResourceType revision =
      NewType("apps", "v1", "ControllerRevision", "controllerrevisions", /*namespaced=*/true,
              /*custom=*/false, /*status_subresource=*/false);
  revision.columns = {
      {"Controller", "string", ".metadata.ownerReferences[0].name", "", 0},
      {"Revision", "integer", ".revision", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(revision);

  ResourceType slice =
      NewType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", /*namespaced=*/true,
              /*custom=*/false, /*status_subresource=*/false);
  slice.columns = {
      {"AddressType", "string", ".addressType", "", 0},
      {"Ports", "string", ".ports[*].port", "", 0},
      {"Endpoints", "string", ".endpoints[*].addresses[0]", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(slice);

  // What the API server reads to call validating admission webhooks
  // (admission_webhooks.h).
  ResourceType webhooks =
      NewType("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
              "validatingwebhookconfigurations", /*namespaced=*/false,
              /*custom=*/false, /*status_subresource=*/false);
  webhooks.categories = {"api-extensions"};
  webhooks.merge_keys = {{"webhooks", "name"}};
  webhooks.columns = {
      {"Webhooks", "integer", ".webhooks", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(webhooks);

  ResourceType ns = NewType("", "v1", "Namespace", "namespaces", /*namespaced=*/false,
                            /*custom=*/false, /*status_subresource=*/true);
  ns.short_names = {"ns"};
  ns.allow_unconditional_update = true;
  ns.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  ns.merge_keys = {{"status.conditions", "type"}};
  ns.columns = {
      {"Status", "string", ".status.phase", "The phase of the namespace.", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(ns);

  // Built in: defaults, cluster IPs and node ports come from services.h.
  ResourceType service = NewType("", "v1", "Service", "services", /*namespaced=*/true,
                                 /*custom=*/false, /*status_subresource=*/true);
  service.short_names = {"svc"};
  service.categories = {"all"};
  service.columns = {
      {"Type", "string", ".spec.type", "The type of the service.", 0},
      {"Cluster-IP", "string", ".spec.clusterIP", "The cluster IP of the service.", 0},
      {"External-IP", "string", "", "The external IPs of the service.", 0, &ServiceExternalIp},
      {"Port(s)", "string", "", "The ports of the service.", 0, &ServicePorts},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
      {"Selector", "string", "", "The selector of the service.", 1, &ServiceSelector},
  };
  service.merge_keys = {{"spec.ports", "port"}};
  types.push_back(service);
  return types;
}

}  // namespace

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string ResourceType::PathPrefix() const {
  return group.empty() ? absl::StrCat("/api/", version)
                       : absl::StrCat("/apis/", group, "/", version);
}

std::string ResourceType::QualifiedResource() const {
  return group.empty() ? plural : absl::StrCat(plural, ".", group);
}

std::string ResourceType::QualifiedKind() const {
  return group.empty() ? kind : absl::StrCat(kind, ".", group);
}

const std::vector<ResourceType>& AllResourceTypes() {
  static const auto* types = new std::vector<ResourceType>(MakeTypes());
  return *types;
}

const ResourceType* FindResourceType(const std::string& group, const std::string& version,
                                     const std::string& plural) {
  for (const ResourceType& type : AllResourceTypes()) {
    if (type.group == group && type.version == version && type.plural == plural) return &type;
  }
  return nullptr;
}

absl::StatusOr<ResourceTypeSet> ResourceTypeSet::Make(const std::vector<std::string>& omitted) {
  std::vector<bool> used(omitted.size(), false);
  ResourceTypeSet set;
  for (const ResourceType& type : AllResourceTypes()) {
    bool leave_out = false;
    for (size_t i = 0; i < omitted.size(); ++i) {
      if (type.custom && (omitted[i] == type.QualifiedResource() || omitted[i] == type.group)) {
        leave_out = true;
        used[i] = true;
      }
    }
    if (!leave_out) set.types_.push_back(&type);
  }
  for (size_t i = 0; i < omitted.size(); ++i) {
    if (!used[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot leave out \"", omitted[i],
                       "\": not a custom resource (<plural>.<group>) or a group of them"));
    }
  }
  return set;
}

const ResourceType* ResourceTypeSet::Find(const std::string& group, const std::string& version,
                                          const std::string& plural) const {
  for (const ResourceType* type : types_) {
    if (type->group == group && type->version == version && type->plural == plural) return type;
  }
  return nullptr;
}

std::vector<std::string> ResourceTypeSet::Groups() const {
  std::vector<std::string> groups;
  for (const ResourceType* type : types_) {
    if (!type->group.empty() &&
        std::find(groups.begin(), groups.end(), type->group) == groups.end()) {
      groups.push_back(type->group);
    }
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

namespace {

// Sorts as k8s.io/apimachinery's version.CompareKubeAwareVersionStrings:
// GA, then beta, then alpha, each by major then minor number descending;
// other strings last, alphabetically.
std::tuple<int, int64_t, int64_t, std::string> VersionRank(absl::string_view version) {
  absl::string_view rest = version;
  int64_t major = 0;
  int64_t minor = 0;
  if (absl::ConsumePrefix(&rest, "v") && !rest.empty() && absl::ascii_isdigit(rest[0])) {
    size_t digits = 0;
    while (digits < rest.size() && absl::ascii_isdigit(rest[digits])) ++digits;
    if (absl::SimpleAtoi(rest.substr(0, digits), &major)) {
      rest.remove_prefix(digits);
      int stage = -1;
      if (rest.empty()) {
        stage = 0;
      } else if (absl::ConsumePrefix(&rest, "beta")) {
        stage = 1;
      } else if (absl::ConsumePrefix(&rest, "alpha")) {
        stage = 2;
      }
      if (stage == 0 || (stage > 0 && absl::SimpleAtoi(rest, &minor))) {
        return {stage, -major, -minor, ""};
      }
    }
  }
  return {3, 0, 0, std::string(version)};
}

}  // namespace

std::vector<std::string> ResourceTypeSet::Versions(const std::string& group) const {
  std::vector<std::string> versions;
  for (const ResourceType* type : types_) {
    if (type->group == group &&
        std::find(versions.begin(), versions.end(), type->version) == versions.end()) {
      versions.push_back(type->version);
    }
  }
  std::sort(versions.begin(), versions.end(), [](const std::string& a, const std::string& b) {
    return VersionRank(a) < VersionRank(b);
  });
  return versions;
}

}  // namespace facet::testing
