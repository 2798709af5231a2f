// Writes what Facet did with each object into its `status` subresource:
// for XdsResources and XdsAuthorities observedGeneration, conditions
// (Accepted, ResolvedRefs, Programmed) and per-variant client feedback,
// following Kubernetes conventions; for GRPCRoutes and XdsVariantPolicies
// Facet's entries among their parents or ancestors (gateway_status.h).
#ifndef FACET_CONTROLLER_KUBERNETES_STATUS_STATUS_WRITER_H_
#define FACET_CONTROLLER_KUBERNETES_STATUS_STATUS_WRITER_H_

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/kubernetes/client/clock.h"
#include "controller/kubernetes/client/kube_client.h"
#include "controller/kubernetes/status/gateway_status.h"
#include "xds_server/ads/nack_log.h"
#include "xds_server/snapshot/builder.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller {

// What connected clients say about served variants, keyed by
// (type URL, served name, variant version).
struct ClientFeedback {
  std::map<std::tuple<std::string, std::string, std::string>, int> clients;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<xds::NackRecord>> nacks;
};

// Returns the `status` Facet wants for an object, given the status it has
// now (whose lastTransitionTimes are kept where a condition's status did not
// change). Deterministic apart from `now`.
YAML::Node DesiredStatus(const xds::ObjectStatus& status, const YAML::Node& current,
                         const ClientFeedback& feedback, int authority_resources, absl::Time now);

// Returns whether two status values are the same (ignoring key order).
bool SameStatus(const YAML::Node& a, const YAML::Node& b);

// Thread-compatible: call from one thread (the controller's worker).
class StatusWriter {
 public:
  // `wall_now` gives the time written into lastTransitionTime.
  explicit StatusWriter(kube::KubeClient& client,
                        std::function<absl::Time()> wall_now = [] { return absl::Now(); })
      : client_(client), wall_now_(std::move(wall_now)) {}

  // Writes the status of one object through its /status subresource when it
  // differs from what is stored: returns true when it wrote, false when
  // nothing changed or the object is gone. What is stored is read from
  // `cached` (the object as a watch cache holds it) when given, so an
  // unchanged status costs no request; otherwise, and after a conflict, with a
  // GET. Conflicts are retried (re-GET and recompute) up to 5 times.
  absl::StatusOr<bool> Sync(const xds::ObjectStatus& status, const ClientFeedback& feedback,
                            int authority_resources = 0, const YAML::Node* cached = nullptr);

  // Writes a GRPCRoute's status as DesiredRouteStatus merges `route` into
  // it (controllerName gateway::kControllerName), as Sync does. A route with
  // no parent of Facet's, and no entry of Facet's stored, is another
  // controller's: nothing is written.
  absl::StatusOr<bool> SyncRouteStatus(const gateway::GatewayStatus& route,
                                       const YAML::Node* cached = nullptr);
  // Writes an XdsVariantPolicy's status as DesiredPolicyStatus merges
  // `policy` into it, as Sync does (nothing when neither `policy` nor the
  // stored status has an ancestor entry of Facet's).
  absl::StatusOr<bool> SyncPolicyStatus(const gateway::GatewayStatus& policy,
                                        const YAML::Node* cached = nullptr);

  // Reads the object `ref` names (ObjectPath) from `cached` when given, else
  // with a GET; computes its status with `desired_status(object)` (the
  // stored object, status included) and writes it through /status unless it
  // is the stored one. A conflict reads the object again and recomputes, up
  // to 5 times (then Aborted). Returns whether it wrote; false also when the
  // object is gone.
  absl::StatusOr<bool> ReadModifyWrite(
      const xds::ObjectRef& ref, const YAML::Node* cached,
      const std::function<YAML::Node(const YAML::Node& object)>& desired_status);

 private:
  kube::KubeClient& client_;
  std::function<absl::Time()> wall_now_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_KUBERNETES_STATUS_STATUS_WRITER_H_
