// The validating admission webhook's decision: an admission.k8s.io/v1
// AdmissionReview for an XdsResource or XdsAuthority in, the review with its
// response out.
#ifndef FACET_CONTROLLER_KUBERNETES_WEBHOOK_ADMISSION_H_
#define FACET_CONTROLLER_KUBERNETES_WEBHOOK_ADMISSION_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "xds_server/snapshot/builder.h"
#include "xds_server/snapshot/objects.h"

namespace facet::controller {

// Returns the AdmissionReview (JSON) answering `request_body`. It denies what
// the object alone breaks (spec, resource JSON, constraints, overlaps and key
// sets with their witness, limits, names, authority admission against
// `authorities`), with the messages `facet validate` prints
// ("namespace/name: field: reason"), and allows what depends on the order of
// applies (references: those stay in status). Warnings go into
// response.warnings. The response carries the request's uid. A body that is
// not an AdmissionReview, is not valid JSON or YAML, or exceeds the bounds on
// what is read from the API (an object within those of a manifest file: see
// kube::ParseDocumentText) is answered with allowed=false and a 400 status
// whose message names the problem, its line and column, and the limit.
// Pure; thread-safe.
std::string ReviewAdmission(absl::string_view request_body,
                            const std::vector<xds::AuthorityObject>& authorities,
                            const xds::BuildOptions& options);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_WEBHOOK_ADMISSION_H_
