// What kube-apiserver's Service registry does to a core/v1 Service when it is
// written, as far as a controller reading Services can see it: the defaults
// (type ClusterIP, sessionAffinity None, port protocol TCP, targetPort = port,
// internalTrafficPolicy, IP family), a cluster IP from 10.96.0.0/12 and node
// ports from 30000-32767, the validation of type, ports and cluster IP, and a
// cluster IP that cannot change once set (an update without one keeps it).
// Pure functions: the caller passes what is allocated and stores the result.
#ifndef FACET_TEST_KUBE_API_SERVER_SERVICES_H_
#define FACET_TEST_KUBE_API_SERVER_SERVICES_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "test/kube_api_server/json.h"

namespace facet::testing {

// The Service CIDR (kubeadm's default) and the address of default/kubernetes.
inline constexpr char kServiceCidr[] = "10.96.0.0/12";
inline constexpr char kKubernetesServiceIp[] = "10.96.0.1";

// What the stored Services hold.
struct ServiceAllocations {
  std::set<uint32_t> cluster_ips;  // IPv4 addresses in host order.
  std::set<int64_t> node_ports;

  // Records the cluster IP and node ports of `service`.
  void Add(const Json& service);
};

// A rejected write: the field path and the apiserver's detail, as in
// `spec.ports[1].name: Required value`.
struct FieldError {
  std::string field;
  std::string detail;
};

// Defaults and validates `service` (the whole object) for a create, and
// allocates its cluster IP and node ports from those not in `in_use`.
std::optional<FieldError> PrepareServiceForCreate(Json& service, const ServiceAllocations& in_use);

// Defaults and validates `service` replacing `current`: a cluster IP or node
// port left out is kept from `current`, a changed cluster IP is refused, new
// needs are allocated from those not in `in_use` (which includes `current`'s).
std::optional<FieldError> PrepareServiceForUpdate(const Json& current, Json& service,
                                                  const ServiceAllocations& in_use);

// The Service that kube-apiserver keeps in the default namespace:
// `kubernetes`, ClusterIP kKubernetesServiceIp, port https 443 → 6443.
Json KubernetesService();

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_SERVICES_H_
