#include "test/kube_api_server/resource_types.h"

#include "absl/strings/str_cat.h"

namespace facet::testing {
namespace {

const std::vector<std::string>& AllVerbs() {
  static const auto* verbs = new std::vector<std::string>{
      "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"};
  return *verbs;
}

std::vector<ResourceType> MakeTypes() {
  std::vector<ResourceType> types;

  ResourceType xr;
  xr.group = "facet.dev";
  xr.version = "v1alpha1";
  xr.plural = "xdsresources";
  xr.singular = "xdsresource";
  xr.kind = "XdsResource";
  xr.namespaced = true;
  xr.status_subresource = true;
  xr.custom = true;
  xr.short_names = {"xr", "xdsr"};
  xr.categories = {"facet"};
  xr.verbs = AllVerbs();
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

  ResourceType xa;
  xa.group = "facet.dev";
  xa.version = "v1alpha1";
  xa.plural = "xdsauthorities";
  xa.singular = "xdsauthority";
  xa.kind = "XdsAuthority";
  xa.namespaced = false;
  xa.status_subresource = true;
  xa.custom = true;
  xa.short_names = {"xa"};
  xa.categories = {"facet"};
  xa.verbs = AllVerbs();
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

  ResourceType lease;
  lease.group = "coordination.k8s.io";
  lease.version = "v1";
  lease.plural = "leases";
  lease.singular = "lease";
  lease.kind = "Lease";
  lease.namespaced = true;
  lease.verbs = AllVerbs();
  lease.allow_create_on_update = true;
  lease.columns = {
      {"Holder", "string", ".spec.holderIdentity", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(lease);

  // What StatefulSets and DaemonSets keep their history in; Facet keeps the
  // last accepted spec of each XdsResource in them.
  ResourceType revision;
  revision.group = "apps";
  revision.version = "v1";
  revision.plural = "controllerrevisions";
  revision.singular = "controllerrevision";
  revision.kind = "ControllerRevision";
  revision.namespaced = true;
  revision.verbs = AllVerbs();
  revision.columns = {
      {"Controller", "string", ".metadata.ownerReferences[0].name", "", 0},
      {"Revision", "integer", ".revision", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(revision);

  ResourceType slice;
  slice.group = "discovery.k8s.io";
  slice.version = "v1";
  slice.plural = "endpointslices";
  slice.singular = "endpointslice";
  slice.kind = "EndpointSlice";
  slice.namespaced = true;
  slice.verbs = AllVerbs();
  slice.columns = {
      {"AddressType", "string", ".addressType", "", 0},
      {"Ports", "string", ".ports[*].port", "", 0},
      {"Endpoints", "string", ".endpoints[*].addresses[0]", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(slice);

  // What the API server reads to call validating admission webhooks
  // (admission_webhooks.h).
  ResourceType webhooks;
  webhooks.group = "admissionregistration.k8s.io";
  webhooks.version = "v1";
  webhooks.plural = "validatingwebhookconfigurations";
  webhooks.singular = "validatingwebhookconfiguration";
  webhooks.kind = "ValidatingWebhookConfiguration";
  webhooks.namespaced = false;
  webhooks.verbs = AllVerbs();
  webhooks.categories = {"api-extensions"};
  webhooks.columns = {
      {"Webhooks", "integer", ".webhooks", "", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(webhooks);

  ResourceType ns;
  ns.group = "";
  ns.version = "v1";
  ns.plural = "namespaces";
  ns.singular = "namespace";
  ns.kind = "Namespace";
  ns.namespaced = false;
  ns.status_subresource = true;
  ns.short_names = {"ns"};
  ns.allow_unconditional_update = true;
  ns.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  ns.columns = {
      {"Status", "string", ".status.phase", "The phase of the namespace.", 0},
      {"Age", "date", ".metadata.creationTimestamp", "", 0},
  };
  types.push_back(ns);
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

const std::vector<ResourceType>& ServedResourceTypes() {
  static const auto* types = new std::vector<ResourceType>(MakeTypes());
  return *types;
}

const ResourceType* FindResourceType(const std::string& group, const std::string& version,
                                     const std::string& plural) {
  for (const ResourceType& type : ServedResourceTypes()) {
    if (type.group == group && type.version == version && type.plural == plural) return &type;
  }
  return nullptr;
}

}  // namespace facet::testing
