// Builds ClusterLoadAssignments from Kubernetes EndpointSlices, for
// XdsResource variants that say `endpointsFrom: {service, port}`.
#ifndef FACET_CONTROLLER_KUBERNETES_ENDPOINTS_ENDPOINT_SLICES_H_
#define FACET_CONTROLLER_KUBERNETES_ENDPOINTS_ENDPOINT_SLICES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "xds_server/snapshot/objects.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// The label that ties an EndpointSlice to its Service.
inline constexpr char kServiceNameLabel[] = "kubernetes.io/service-name";

struct SlicedEndpoints {
  // The ClusterLoadAssignment, as proto3 JSON in YAML form (no name: the
  // builder fills in the served name).
  YAML::Node resource;
  // Warnings for the variant's status (a Service without ready endpoints,
  // slices whose port does not match), naming `field`.
  std::vector<xds::Finding> findings;
};

// Returns the ClusterLoadAssignment `from` denotes in `slices` (the Service's
// EndpointSlices, any order): one locality per zone (load-balancing weight
// 1), one endpoint per address whose endpoint is ready (a missing `ready`
// counts as ready); endpoints that are serving but terminating are included
// as DRAINING, the rest left out. The port is resolved in each slice (by
// name, or by number; with `from.match_name_only` by name alone, "" naming
// the unnamed port; a slice whose ports do not name it is skipped with a
// warning); FQDN slices are skipped with a warning. Deterministic: the same
// endpoints in any slice order give the same document. Pure; thread-safe.
SlicedEndpoints ClusterLoadAssignmentFromSlices(const std::vector<YAML::Node>& slices,
                                                const xds::EndpointsFrom& from,
                                                absl::string_view field);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_ENDPOINTS_ENDPOINT_SLICES_H_
