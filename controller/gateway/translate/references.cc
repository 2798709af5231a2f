#include "controller/gateway/translate/references.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "controller/gateway/model/gateway_status.h"

namespace facet::controller::gateway {
namespace {

const ServiceInfo& InfoOf(const GatewayObject& service) {
  return std::get<ServiceInfo>(service.spec);
}

std::string ServiceText(absl::string_view ns, absl::string_view name) {
  return absl::StrCat("Service ", ns, "/", name);
}

const ServicePort* PortByNumber(const ServiceInfo& service, int number) {
  for (const ServicePort& port : service.ports) {
    if (port.port == number) return &port;
  }
  return nullptr;
}

const ServicePort* PortByName(const ServiceInfo& service, absl::string_view name) {
  for (const ServicePort& port : service.ports) {
    if (port.name == name) return &port;
  }
  return nullptr;
}

ParentResolution Rejected(ParentResolution resolution, std::string reason, std::string message) {
  resolution.outcome = ParentResolution::Outcome::kRejected;
  resolution.reason = std::move(reason);
  resolution.message = std::move(message);
  return resolution;
}

// Whether a grant in the backend's namespace lets GRPCRoutes in `route_ns`
// refer to Service `name`.
bool Granted(absl::string_view route_ns, absl::string_view backend_ns, absl::string_view name,
             const GatewayLookup& lookup) {
  for (const ReferenceGrant* grant : lookup.grants(backend_ns)) {
    bool from = false;
    for (const ReferenceGrant::From& entry : grant->from) {
      from = from || (entry.group == kGatewayGroup && entry.kind == kGrpcRouteKind &&
                      entry.namespace_ == route_ns);
    }
    if (!from) continue;
    for (const ReferenceGrant::To& entry : grant->to) {
      if (entry.group.empty() && entry.kind == kServiceKind &&
          (!entry.name.has_value() || *entry.name == name)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

ParentResolution ResolveParentRef(absl::string_view route_ns, const ObjectReference& parent,
                                  const GatewayLookup& lookup, const TranslateOptions& options) {
  ParentResolution out;
  if (parent.kind != kServiceKind) return out;
  const std::string ns = parent.namespace_.empty() ? std::string(route_ns) : parent.namespace_;
  out.service = {kServiceKind, ns, parent.name};
  if (parent.group == kGatewayGroup || parent.group == "core") {
    return Rejected(std::move(out), kReasonNoMatchingParent,
                    absl::StrCat("kind Service in group \"", parent.group,
                                 "\" is no Kubernetes Service; set group: \"\" for a core "
                                 "Service (a mesh route)"));
  }
  if (!parent.group.empty()) return ParentResolution();  // Some other API's Service.
  const GatewayObject* found = lookup.service(ns, parent.name);
  if (found == nullptr) {
    return Rejected(std::move(out), kReasonNoMatchingParent,
                    absl::StrCat(ServiceText(ns, parent.name), " does not exist"));
  }
  const ServiceInfo& service = InfoOf(*found);
  if (service.type == "ExternalName" || service.headless()) {
    return Rejected(std::move(out), kReasonNoMatchingParent,
                    absl::StrCat(ServiceText(ns, parent.name), " is ",
                                 service.headless() ? "headless" : "of type ExternalName",
                                 ": it has no cluster IP for a mesh route to apply to"));
  }
  if (ns != route_ns && options.client_namespace_param.empty()) {
    return Rejected(std::move(out), kReasonConsumerRoutesDisabled,
                    absl::StrCat("the route is in namespace ", route_ns, ", its parent ",
                                 ServiceText(ns, parent.name),
                                 " in another (a consumer route): consumer routes are disabled "
                                 "(--gateway-client-namespace-param is empty)"));
  }
  const ServicePort* by_number =
      parent.port.has_value() ? PortByNumber(service, *parent.port) : nullptr;
  const ServicePort* by_name =
      parent.section_name.has_value() ? PortByName(service, *parent.section_name) : nullptr;
  if (parent.port.has_value() && by_number == nullptr) {
    return Rejected(std::move(out), kReasonNoMatchingParent,
                    absl::StrCat(ServiceText(ns, parent.name), " has no port ", *parent.port));
  }
  if (parent.section_name.has_value() && by_name == nullptr) {
    return Rejected(std::move(out), kReasonNoMatchingParent,
                    absl::StrCat(ServiceText(ns, parent.name), " has no port named \"",
                                 *parent.section_name, "\""));
  }
  if (by_number != nullptr && by_name != nullptr && by_number != by_name) {
    return Rejected(std::move(out), kReasonNoMatchingParent,
                    absl::StrCat("port ", *parent.port, " and sectionName \"", *parent.section_name,
                                 "\" name different ports of ", ServiceText(ns, parent.name)));
  }
  if (const ServicePort* selected = by_number != nullptr ? by_number : by_name) {
    if (!IsServedPort(service, *selected)) {
      return Rejected(std::move(out), kReasonNoMatchingParent,
                      absl::StrCat("port ", selected->port, " of ", ServiceText(ns, parent.name),
                                   " is ", selected->protocol, "; gRPC runs over TCP"));
    }
    out.ports.push_back(selected->port);
  } else {
    for (const ServicePort& port : service.ports) {
      if (IsServedPort(service, port)) out.ports.push_back(port.port);
    }
    if (out.ports.empty()) {
      return Rejected(std::move(out), kReasonNoMatchingParent,
                      absl::StrCat(ServiceText(ns, parent.name), " has no TCP port"));
    }
  }
  out.outcome = ParentResolution::Outcome::kAttached;
  return out;
}

BackendResolution ResolveBackendRef(absl::string_view route_ns, const ObjectReference& backend,
                                    const GatewayLookup& lookup, const TranslateOptions& options) {
  BackendResolution out;
  auto invalid = [&](const char* reason, std::string message) {
    out.reason = reason;
    out.message = std::move(message);
    return out;
  };
  if (!backend.group.empty() || backend.kind != kServiceKind) {
    return invalid(kReasonInvalidKind,
                   absl::StrCat("group \"", backend.group, "\" kind ", backend.kind,
                                " is not a backend Facet serves; refer to a core Service "
                                "(group \"\", kind Service)"));
  }
  const std::string ns = backend.namespace_.empty() ? std::string(route_ns) : backend.namespace_;
  if (ns != route_ns && !Granted(route_ns, ns, backend.name, lookup)) {
    return invalid(kReasonRefNotPermitted,
                   absl::StrCat(ServiceText(ns, backend.name),
                                " is in another namespace and no ReferenceGrant there lets "
                                "GRPCRoutes in namespace ",
                                route_ns, " refer to it"));
  }
  const GatewayObject* found = lookup.service(ns, backend.name);
  if (found == nullptr) {
    return invalid(kReasonBackendNotFound,
                   absl::StrCat(ServiceText(ns, backend.name), " does not exist"));
  }
  const ServiceInfo& service = InfoOf(*found);
  if (service.type == "ExternalName") {
    return invalid(kReasonInvalidKind, absl::StrCat(ServiceText(ns, backend.name),
                                                    " is of type ExternalName, which has no "
                                                    "endpoints for Facet to serve"));
  }
  const ServicePort* port = PortByNumber(service, backend.port.value_or(0));
  if (port == nullptr) {
    return invalid(kReasonBackendNotFound, absl::StrCat(ServiceText(ns, backend.name),
                                                        " has no port ", backend.port.value_or(0)));
  }
  if (!IsServedPort(service, *port)) {
    return invalid(kReasonUnsupportedProtocol,
                   absl::StrCat("port ", port->port, " of ", ServiceText(ns, backend.name), " is ",
                                port->protocol, "; gRPC runs over TCP"));
  }
  out.cluster = ServicePortName(found->ref, port->port, options.cluster_domain);
  return out;
}

}  // namespace facet::controller::gateway
