#include "controller/gateway/model/gateway_object.h"

namespace facet::controller::gateway {

bool IsReadOnlyKind(absl::string_view kind) {
  return kind == kServiceKind || kind == kEndpointSliceKind || kind == kReferenceGrantKind;
}

bool GatewayObject::has_errors() const {
  for (const xds::Finding& finding : findings) {
    if (finding.severity == xds::Severity::kError) return true;
  }
  return false;
}

}  // namespace facet::controller::gateway
