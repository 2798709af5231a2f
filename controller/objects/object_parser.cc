#include "controller/objects/object_parser.h"

#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/gateway/model/gateway_parser.h"
#include "controller/objects/fields.h"
#include "xds_server/conditional/conditional.h"
#include "xds_server/constraints/match_syntax.h"
#include "xds_server/json/proto_json.h"
#include "xds_server/json/yaml_json.h"
#include "xds_server/snapshot/client_access.h"

namespace facet::controller {
namespace {

using xds::Finding;
using xds::Severity;

std::optional<xds::VariantSpec> ParseVariant(const YAML::Node& node, size_t index,
                                             std::vector<Finding>* findings) {
  const std::string path = absl::StrCat("spec.variants[", index, "]");
  if (!node.IsMap()) {
    AddError(findings, path, absl::StrCat("expected a map, found ", json::DescribeNode(node)));
    return std::nullopt;
  }
  const size_t errors_before = findings->size();
  CheckKnownFields(node, path, {"name", "match", "constraints", "resource", "endpointsFrom"},
                   findings);
  xds::VariantSpec variant;
  variant.label = StringField(node, "name", absl::StrCat(path, ".name"), findings);
  if (variant.label.empty()) variant.label = absl::StrCat("variants[", index, "]");
  YAML::Node match = json::Child(node, "match");
  YAML::Node constraints = json::Child(node, "constraints");
  const bool has_match = match.IsDefined() && !match.IsNull();
  const bool has_constraints = constraints.IsDefined() && !constraints.IsNull();
  if (has_match && has_constraints) {
    AddError(findings, path,
             "both match and constraints are set; a variant uses one of the two forms");
  } else if (has_match) {
    variant.constraints_field = absl::StrCat(path, ".match");
    absl::StatusOr<xds::DynamicParameterConstraints> compiled =
        xds::CompileMatch(match, variant.constraints_field);
    if (compiled.ok()) {
      variant.constraints = *std::move(compiled);
    } else {
      findings->push_back({Severity::kError, "InvalidConstraints", variant.constraints_field,
                           std::string(compiled.status().message())});
    }
  } else if (has_constraints) {
    variant.constraints_field = absl::StrCat(path, ".constraints");
    absl::Status status =
        json::ParseMessage(constraints, variant.constraints_field, &variant.constraints);
    if (!status.ok()) {
      findings->push_back({Severity::kError, "InvalidConstraints", variant.constraints_field,
                           std::string(status.message())});
    }
  }
  variant.resource = json::Child(node, "resource");
  const bool has_resource = variant.resource.IsDefined() && !variant.resource.IsNull();
  YAML::Node from = json::Child(node, "endpointsFrom");
  if (from.IsDefined() && !from.IsNull()) {
    const std::string from_path = absl::StrCat(path, ".endpointsFrom");
    if (has_resource) {
      AddError(findings, path, "both resource and endpointsFrom are set; a variant uses one");
    } else if (!from.IsMap()) {
      AddError(findings, from_path,
               absl::StrCat("expected a map {service, port}, found ", json::DescribeNode(from)));
    } else {
      CheckKnownFields(from, from_path, {"service", "port"}, findings);
      xds::EndpointsFrom endpoints;
      endpoints.service = StringField(from, "service", absl::StrCat(from_path, ".service"), findings);
      if (endpoints.service.empty()) {
        AddError(findings, absl::StrCat(from_path, ".service"), "is required");
      }
      YAML::Node port = json::Child(from, "port");
      const std::string port_path = absl::StrCat(from_path, ".port");
      if (!port.IsDefined() || port.IsNull()) {
        AddError(findings, port_path, "is required (a port name or number)");
      } else if (!port.IsScalar()) {
        AddError(findings, port_path,
                 absl::StrCat("expected a port name or number, found ", json::DescribeNode(port)));
      } else if (json::ClassifyScalar(port) == json::ScalarKind::kInteger) {
        int number = 0;
        if (!absl::SimpleAtoi(port.Scalar(), &number) || number < 1 || number > 65535) {
          AddError(findings, port_path,
                   absl::StrCat("port ", port.Scalar(), " is not between 1 and 65535"));
        }
        endpoints.port_number = number;
      } else if (port.Scalar().empty()) {
        AddError(findings, port_path, "is empty (a port name or number)");
      } else {
        endpoints.port_name = port.Scalar();
      }
      variant.endpoints_from = std::move(endpoints);
    }
  } else if (!has_resource) {
    AddError(findings, absl::StrCat(path, ".resource"), "is required (or endpointsFrom)");
  }
  if (findings->size() != errors_before) return std::nullopt;
  return variant;
}

// Replaces a single unconstrained variant whose resource has conditional
// elements ("@when") by the variants compiled from it. Conditions in a resource
// with several variants, or with constraints, are rejected.
void CompileConditionalElements(xds::ResourceSpec* spec, std::vector<Finding>* findings) {
  for (size_t i = 0; i < spec->variants.size(); ++i) {
    const xds::VariantSpec& variant = spec->variants[i];
    if (!variant.resource.IsDefined() || variant.resource.IsNull()) continue;
    std::optional<std::string> condition = xds::FindCondition(variant.resource);
    if (!condition.has_value()) continue;
    const std::string resource_path = absl::StrCat("spec.variants[", i, "].resource");
    if (spec->variants.size() > 1 || variant.constraints.ByteSizeLong() > 0) {
      AddError(findings, absl::StrCat(resource_path, ".", *condition),
               absl::StrCat(
                   "conditional elements (@when) need a resource with one variant and no match "
                   "or constraints, but this one ",
                   spec->variants.size() > 1
                       ? absl::StrCat("has ", spec->variants.size(), " variants")
                       : "constrains its variant",
                   ": how element conditions would combine with variant constraints (their key "
                   "sets, their exclusivity) is not designed yet; write the variants in full, "
                   "or one unconstrained variant with conditions"));
      continue;
    }
    xds::CompiledResource compiled = xds::CompileConditions(variant.resource, i, variant.label);
    for (xds::ConditionalError& error : compiled.errors) {
      Finding finding;
      finding.reason = std::move(error.reason);
      finding.field = std::move(error.field);
      finding.message = std::move(error.message);
      findings->push_back(std::move(finding));
    }
    if (!compiled.errors.empty()) return;
    const std::string written_field = absl::StrCat("spec.variants[", i, "]");
    std::vector<xds::VariantSpec> variants;
    for (xds::CompiledVariant& out : compiled.variants) {
      xds::VariantSpec compiled_variant;
      compiled_variant.label = std::move(out.label);
      compiled_variant.constraints = std::move(out.constraints);
      compiled_variant.constraints_field = written_field;
      compiled_variant.resource = std::move(out.resource);
      compiled_variant.origin = compiled.origin;
      compiled_variant.included = std::move(out.included);
      variants.push_back(std::move(compiled_variant));
    }
    spec->variants = std::move(variants);
    return;
  }
}

void ParseResourceSpec(const YAML::Node& spec, xds::ResourceObject* object) {
  std::vector<Finding>& findings = object->findings;
  CheckKnownFields(spec, "spec", {"type", "name", "authority", "contextParams", "variants"},
                   &findings);
  xds::ResourceSpec out;
  out.type = StringField(spec, "type", "spec.type", &findings);
  out.name = StringField(spec, "name", "spec.name", &findings);
  out.authority = StringField(spec, "authority", "spec.authority", &findings);
  if (out.type.empty() && json::Child(spec, "type").IsDefined() == false) {
    AddError(&findings, "spec.type", "is required");
  }
  YAML::Node params = json::Child(spec, "contextParams");
  if (params.IsDefined() && !params.IsNull()) {
    if (!params.IsMap()) {
      AddError(&findings, "spec.contextParams",
               absl::StrCat("expected a map of strings, found ", json::DescribeNode(params)));
    } else {
      for (const auto& entry : params) {
        const std::string key = entry.first.Scalar();
        out.context_params[key] =
            StringField(params, key.c_str(), absl::StrCat("spec.contextParams.", key), &findings);
      }
    }
  }
  YAML::Node variants = json::Child(spec, "variants");
  if (!variants.IsDefined() || variants.IsNull()) {
    AddError(&findings, "spec.variants", "is required: at least one variant");
  } else if (!variants.IsSequence()) {
    AddError(&findings, "spec.variants",
             absl::StrCat("expected a list, found ", json::DescribeNode(variants)));
  } else {
    for (size_t i = 0; i < variants.size(); ++i) {
      std::optional<xds::VariantSpec> variant = ParseVariant(variants[i], i, &findings);
      if (variant) out.variants.push_back(std::move(*variant));
    }
  }
  // Variant indices match spec.variants only when every variant parsed.
  if (findings.empty()) CompileConditionalElements(&out, &findings);
  if (findings.empty()) object->spec = std::move(out);
}

// Reads spec.allowedClients: a list of {spiffeId: ...} or {dnsName: ...}.
// The entries' syntax is checked with the snapshot's other rules.
void ParseAllowedClients(const YAML::Node& spec, xds::AuthorityObject* object) {
  std::vector<Finding>& findings = object->findings;
  YAML::Node clients = json::Child(spec, "allowedClients");
  if (!clients.IsDefined() || clients.IsNull()) return;
  if (!clients.IsSequence()) {
    AddError(&findings, "spec.allowedClients",
             absl::StrCat("expected a list of {spiffeId: ...} or {dnsName: ...}, found ",
                          json::DescribeNode(clients)));
    return;
  }
  if (clients.size() > xds::kMaxAllowedClients) {
    AddError(&findings, "spec.allowedClients",
             absl::StrCat("has ", clients.size(), " entries; at most ", xds::kMaxAllowedClients,
                          " are allowed (use a \"spiffe://<trust domain>/<path>/*\" prefix)"));
    return;
  }
  std::vector<xds::AllowedClient> out;
  for (size_t i = 0; i < clients.size(); ++i) {
    const std::string path = absl::StrCat("spec.allowedClients[", i, "]");
    const YAML::Node& entry = clients[i];
    if (!entry.IsMap()) {
      AddError(&findings, path,
               absl::StrCat("expected {spiffeId: ...} or {dnsName: ...}, found ",
                            json::DescribeNode(entry)));
      continue;
    }
    CheckKnownFields(entry, path, {"spiffeId", "dnsName"}, &findings);
    const bool spiffe = json::Child(entry, "spiffeId").IsDefined();
    const bool dns = json::Child(entry, "dnsName").IsDefined();
    if (spiffe == dns) {
      AddError(&findings, path, "set exactly one of spiffeId and dnsName");
      continue;
    }
    xds::AllowedClient client;
    client.kind = spiffe ? xds::AllowedClient::Kind::kSpiffeId : xds::AllowedClient::Kind::kDnsName;
    const char* key = spiffe ? "spiffeId" : "dnsName";
    const size_t errors = findings.size();
    client.value = StringField(entry, key, absl::StrCat(path, ".", key), &findings);
    if (findings.size() == errors) out.push_back(std::move(client));
  }
  object->allowed_clients = std::move(out);
}

void ParseAuthoritySpec(const YAML::Node& spec, xds::AuthorityObject* object) {
  std::vector<Finding>& findings = object->findings;
  CheckKnownFields(spec, "spec", {"authority", "allowedNamespaces", "allowedClients"}, &findings);
  object->authority = StringField(spec, "authority", "spec.authority", &findings);
  if (object->authority.empty()) object->authority = object->ref.name;
  ParseAllowedClients(spec, object);
  YAML::Node namespaces = json::Child(spec, "allowedNamespaces");
  if (!namespaces.IsDefined() || namespaces.IsNull()) return;
  if (!namespaces.IsSequence()) {
    AddError(&findings, "spec.allowedNamespaces",
             absl::StrCat("expected a list of namespace names, found ",
                          json::DescribeNode(namespaces)));
    return;
  }
  for (size_t i = 0; i < namespaces.size(); ++i) {
    if (!IsString(namespaces[i])) {
      AddError(&findings, absl::StrCat("spec.allowedNamespaces[", i, "]"),
               absl::StrCat("expected a string, found ", json::DescribeNode(namespaces[i])));
      continue;
    }
    object->allowed_namespaces.push_back(namespaces[i].Scalar());
  }
}

}  // namespace

ParsedDocument ParseDocument(const YAML::Node& document, absl::string_view location,
                             absl::string_view default_namespace) {
  if (!document.IsMap() || !IsString(json::Child(document, "kind")) || !IsString(json::Child(document, "apiVersion"))) {
    return UnusableDocument{
        "not a Facet object: expected a Kubernetes object with apiVersion and kind "
        "(facet.dev/v1alpha1 XdsResource or XdsAuthority)"};
  }
  const std::string kind = json::Child(document, "kind").Scalar();
  const std::string api_version = json::Child(document, "apiVersion").Scalar();
  const YAML::Node metadata = json::Child(document, "metadata");
  const std::string name = ObjectName(metadata);
  const bool is_facet_group = api_version.rfind(absl::StrCat(kApiGroup, "/"), 0) == 0;
  if (!is_facet_group || (kind != xds::kXdsResourceKind && kind != xds::kXdsAuthorityKind)) {
    if (!gateway::IsGatewayKind(api_version, kind)) return ForeignObject{kind, name};
    if (name.empty()) return UnusableDocument{absl::StrCat(kind, " without metadata.name")};
    return gateway::ParseGatewayObject(document, location, default_namespace);
  }
  if (name.empty()) {
    return UnusableDocument{absl::StrCat(kind, " without metadata.name")};
  }

  std::vector<Finding> findings;
  if (api_version != kApiVersion) {
    AddError(&findings, "apiVersion",
             absl::StrCat("unsupported version ", api_version, "; this Facet serves ", kApiVersion));
  }
  CheckObjectName(name, &findings);
  const int64_t generation = ObjectGeneration(metadata);
  YAML::Node spec = json::Child(document, "spec");
  const bool spec_ok = spec.IsMap();
  if (!spec_ok) {
    AddError(&findings, "spec",
             spec.IsDefined() ? absl::StrCat("expected a map, found ", json::DescribeNode(spec))
                              : "is required");
  }

  if (kind == xds::kXdsAuthorityKind) {
    xds::AuthorityObject object;
    object.ref = {kind, "", name};
    object.generation = generation;
    object.location = std::string(location);
    object.findings = std::move(findings);
    if (spec_ok) ParseAuthoritySpec(spec, &object);
    return object;
  }
  xds::ResourceObject object;
  const std::string ns = ObjectNamespace(metadata, default_namespace, &findings);
  object.ref = {kind, ns, name};
  object.generation = generation;
  object.location = std::string(location);
  object.findings = std::move(findings);
  if (spec_ok && object.findings.empty()) {
    ParseResourceSpec(spec, &object);
  }
  return object;
}

}  // namespace facet::controller
