// Asks the API server's discovery whether a collection is served, as
// kubectl and client-go's discovery client do: a custom resource whose CRD is
// not installed (the Gateway API's, or a Facet CRD that a chart upgrade did
// not apply) is absent there, and listing it would fail forever.
#ifndef FACET_CONTROLLER_KUBERNETES_CLIENT_API_DISCOVERY_H_
#define FACET_CONTROLLER_KUBERNETES_CLIENT_API_DISCOVERY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "controller/kubernetes/client/kube_client.h"

namespace facet::controller::kube {

// Returns the discovery path of a group version: "/api/v1" for the core
// group ("v1"), "/apis/<group>/<version>" otherwise.
std::string GroupVersionPath(absl::string_view group_version);

// Returns whether `plural` is among the resources discovery lists for
// `group_version` ("v1", "gateway.networking.k8s.io/v1"): false when the
// group version is not served (404) or does not list it; the error when
// discovery itself fails otherwise (the answer is then unknown). Makes one
// GET; thread-safe as `client` is.
absl::StatusOr<bool> IsResourceServed(KubeClient& client, absl::string_view group_version,
                                      absl::string_view plural);

}  // namespace facet::controller::kube

#endif  // FACET_CONTROLLER_KUBERNETES_CLIENT_API_DISCOVERY_H_
