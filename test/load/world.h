// The synthetic world of the load benchmark: S services, one manifest file
// per service with six XdsResource objects (a Listener using RDS, a
// RouteConfiguration with four variants over env x version, two EDS Clusters,
// two ClusterLoadAssignments). The served resources are written as proto3
// JSON, so the null server can serve exactly what `facet serve` serves.
#ifndef FACET_TEST_LOAD_WORLD_H_
#define FACET_TEST_LOAD_WORLD_H_

#include <map>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace facet::load {

// The namespace of every object in the world.
inline constexpr absl::string_view kWorldNamespace = "load";

// Returns the Listener and RouteConfiguration name of service `index`
// ("svc-00042").
std::string ServiceName(int index);

// Returns the names of the service's two Clusters (and ClusterLoadAssignments):
// "svc-00042-a" (prod) and "svc-00042-b" (test).
std::string PrimaryClusterName(absl::string_view service);
std::string SecondaryClusterName(absl::string_view service);

// Returns the manifest file name of service `index` ("svc-00042.yaml").
std::string ServiceFileName(int index);

// Returns the manifest of service `index`. With `edited`, the "prod" variant
// of its route (env=prod, version not v2) sends traffic to the secondary
// cluster instead of the primary one; nothing else changes.
std::string ServiceManifest(int index, bool edited);

// Returns whether a client with dynamic parameters `params` selects the route
// variant that ServiceManifest(i, /*edited=*/true) changes.
bool SelectsEditedVariant(const std::map<std::string, std::string>& params);

// Returns the proto3 JSON of a served resource, as the manifests hold it.
// `service` is a ServiceName, `cluster` a cluster name. RouteJson returns the
// variant that a client with `params` selects.
std::string ListenerJson(absl::string_view service);
std::string RouteJson(absl::string_view service, const std::map<std::string, std::string>& params,
                      bool edited);
std::string ClusterJson(absl::string_view cluster);
std::string EndpointsJson(absl::string_view cluster);

// Writes the manifests of services [0, services) into `dir`, which is created
// if missing. Files of a larger world already in `dir` are left alone.
absl::Status WriteWorld(const std::string& dir, int services);

// Writes `contents` to `path` through a temporary file in the same directory,
// calling `before_rename` just before the rename (the moment the new contents
// become visible to a directory watcher).
absl::Status WriteFileByRename(const std::string& path, absl::string_view contents,
                               absl::FunctionRef<void()> before_rename);

}  // namespace facet::load

#endif  // FACET_TEST_LOAD_WORLD_H_
