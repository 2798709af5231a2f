#include "controller/objects/crd.h"

#include "absl/strings/str_cat.h"
#include "controller/gateway/model/gateway_object.h"

namespace facet::controller {

std::string CollectionPath(absl::string_view plural, absl::string_view ns) {
  if (ns.empty()) return absl::StrCat("/apis/", kApiVersion, "/", plural);
  return absl::StrCat("/apis/", kApiVersion, "/namespaces/", ns, "/", plural);
}

std::string ObjectPath(const xds::ObjectRef& ref) {
  if (ref.kind == kXdsAuthorityKind) {
    return absl::StrCat(CollectionPath(kXdsAuthorityPlural), "/", ref.name);
  }
  if (ref.kind == gateway::kGrpcRouteKind) {
    return absl::StrCat("/apis/", gateway::kGatewayGroup, "/v1/namespaces/", ref.namespace_,
                        "/grpcroutes/", ref.name);
  }
  if (ref.kind == gateway::kXdsVariantPolicyKind) {
    return absl::StrCat(CollectionPath(kXdsVariantPolicyPlural, ref.namespace_), "/", ref.name);
  }
  return absl::StrCat(CollectionPath(kXdsResourcePlural, ref.namespace_), "/", ref.name);
}

}  // namespace facet::controller
