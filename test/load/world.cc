#include "test/load/world.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace facet::load {
namespace {

constexpr absl::string_view kHttpConnectionManagerType =
    "type.googleapis.com/"
    "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
constexpr absl::string_view kRouterType =
    "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";

// One route variant: its name, its `match:` and the clusters it sends to.
struct RouteVariant {
  absl::string_view name;
  absl::string_view match;
  bool prod;
  bool v2;
};

constexpr RouteVariant kRouteVariants[] = {
    {"prod-v2", "{env: prod, version: v2}", /*prod=*/true, /*v2=*/true},
    {"prod", "{env: prod, version: {not: v2}}", /*prod=*/true, /*v2=*/false},
    {"test-v2", "{env: {not: prod}, version: v2}", /*prod=*/false, /*v2=*/true},
    {"test", "{env: {not: prod}, version: {not: v2}}", /*prod=*/false, /*v2=*/false},
};

std::string RouteVariantJson(absl::string_view service, const RouteVariant& variant, bool edited) {
  const std::string primary = PrimaryClusterName(service);
  const std::string secondary = SecondaryClusterName(service);
  const std::string& main = variant.prod ? primary : secondary;
  const std::string& other = variant.prod ? secondary : primary;
  std::string action;
  if (variant.v2) {
    action = absl::StrCat(R"({"weighted_clusters": {"clusters": [{"name": ")", main,
                          R"(", "weight": 90}, {"name": ")", other, R"(", "weight": 10}]}})");
  } else {
    // The edit moves the prod variant to the secondary cluster.
    const std::string& cluster = variant.prod && edited ? secondary : main;
    action = absl::StrCat(R"({"cluster": ")", cluster, R"("})");
  }
  return absl::StrCat(R"({"name": ")", service, R"(", "virtual_hosts": [{"name": ")", service,
                      R"(", "domains": [")", service,
                      R"("], "routes": [{"match": {"prefix": ""}, "route": )", action, "}]}]}");
}

std::string ObjectHeader(absl::string_view object_name, absl::string_view type,
                         absl::string_view served_name) {
  return absl::StrCat("apiVersion: facet.dev/v1alpha1\nkind: XdsResource\nmetadata: {name: ",
                      object_name, ", namespace: ", kWorldNamespace, "}\nspec:\n  type: ", type,
                      "\n  name: ", served_name, "\n  variants:\n");
}

}  // namespace

std::string ServiceName(int index) { return absl::StrFormat("svc-%05d", index); }

std::string PrimaryClusterName(absl::string_view service) { return absl::StrCat(service, "-a"); }

std::string SecondaryClusterName(absl::string_view service) { return absl::StrCat(service, "-b"); }

std::string ServiceFileName(int index) { return absl::StrCat(ServiceName(index), ".yaml"); }

bool SelectsEditedVariant(const std::map<std::string, std::string>& params) {
  auto env = params.find("env");
  auto version = params.find("version");
  return env != params.end() && env->second == "prod" &&
         (version == params.end() || version->second != "v2");
}

std::string ListenerJson(absl::string_view service) {
  return absl::StrCat(R"({"name": ")", service,
                      R"(", "api_listener": {"api_listener": {"@type": ")",
                      kHttpConnectionManagerType, R"(", "rds": {"route_config_name": ")", service,
                      R"(", "config_source": {"ads": {}, "resource_api_version": "V3"}}, )",
                      R"("http_filters": [{"name": "envoy.filters.http.router", )",
                      R"("typed_config": {"@type": ")", kRouterType, R"("}}]}}})");
}

std::string RouteJson(absl::string_view service, const std::map<std::string, std::string>& params,
                      bool edited) {
  auto env = params.find("env");
  auto version = params.find("version");
  const bool prod = env != params.end() && env->second == "prod";
  const bool v2 = version != params.end() && version->second == "v2";
  for (const RouteVariant& variant : kRouteVariants) {
    if (variant.prod == prod && variant.v2 == v2) {
      return RouteVariantJson(service, variant, edited);
    }
  }
  return "";  // Unreachable: the variants cover every combination.
}

std::string ClusterJson(absl::string_view cluster) {
  return absl::StrCat(R"({"name": ")", cluster, R"(", "type": "EDS", )",
                      R"("eds_cluster_config": {"eds_config": {"ads": {}, )",
                      R"("resource_api_version": "V3"}}, "lb_policy": "ROUND_ROBIN"})");
}

std::string EndpointsJson(absl::string_view cluster) {
  const int port = absl::EndsWith(cluster, "-a") ? 10001 : 10002;
  return absl::StrCat(R"({"cluster_name": ")", cluster,
                      R"(", "endpoints": [{"locality": {"region": "local", "zone": "zone-a"}, )",
                      R"("load_balancing_weight": 1, "lb_endpoints": [{"endpoint": {"address": )",
                      R"({"socket_address": {"address": "127.0.0.1", "port_value": )", port,
                      "}}}}]}]}");
}

std::string ServiceManifest(int index, bool edited) {
  const std::string service = ServiceName(index);
  std::string out = absl::StrCat("# Service ", service,
                                 " of the load benchmark world (test/load/generate_world).\n");
  absl::StrAppend(&out, ObjectHeader(absl::StrCat(service, "-listener"), "listener", service),
                  "  - resource: ", ListenerJson(service), "\n---\n");
  absl::StrAppend(&out, ObjectHeader(absl::StrCat(service, "-routes"), "route", service));
  for (const RouteVariant& variant : kRouteVariants) {
    absl::StrAppend(&out, "  - name: ", variant.name, "\n    match: ", variant.match,
                    "\n    resource: ", RouteVariantJson(service, variant, edited), "\n");
  }
  for (const std::string& cluster : {PrimaryClusterName(service), SecondaryClusterName(service)}) {
    absl::StrAppend(&out, "---\n",
                    ObjectHeader(absl::StrCat(cluster, "-cluster"), "cluster", cluster),
                    "  - resource: ", ClusterJson(cluster), "\n");
  }
  for (const std::string& cluster : {PrimaryClusterName(service), SecondaryClusterName(service)}) {
    absl::StrAppend(&out, "---\n",
                    ObjectHeader(absl::StrCat(cluster, "-endpoints"), "endpoint", cluster),
                    "  - resource: ", EndpointsJson(cluster), "\n");
  }
  return out;
}

absl::Status WriteWorld(const std::string& dir, int services) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  for (int i = 0; i < services; ++i) {
    const std::string path = absl::StrCat(dir, "/", ServiceFileName(i));
    std::ofstream out(path, std::ios::trunc);
    out << ServiceManifest(i, /*edited=*/false);
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::Status WriteFileByRename(const std::string& path, absl::string_view contents,
                               absl::FunctionRef<void()> before_rename) {
  // A dot-file, so a directory watcher never reads the temporary file.
  const std::filesystem::path target(path);
  const std::string tmp =
      (target.parent_path() / absl::StrCat(".", target.filename().string(), ".tmp")).string();
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << contents;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  before_rename();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace facet::load
