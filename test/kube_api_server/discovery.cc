#include "test/kube_api_server/discovery.h"

#include <algorithm>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "test/kube_api_server/resource_types.h"

namespace facet::testing {
namespace {

Json GroupVersionJson(const std::string& group, const std::string& version) {
  Json entry = Json::object();
  entry["groupVersion"] = absl::StrCat(group, "/", version);
  entry["version"] = version;
  return entry;
}

// The served versions of `group`, the preferred one first.
Json GroupJson(const ResourceTypeSet& types, const std::string& group) {
  Json api_group = Json::object();
  api_group["name"] = group;
  Json versions = Json::array();
  for (const std::string& version : types.Versions(group)) {
    versions.push_back(GroupVersionJson(group, version));
  }
  if (!versions.empty()) api_group["preferredVersion"] = versions[0];
  api_group["versions"] = std::move(versions);
  return api_group;
}

Json ResourceListFor(const ResourceTypeSet& types, const std::string& group_version) {
  Json list = Json::object();
  list["kind"] = "APIResourceList";
  list["apiVersion"] = "v1";
  list["groupVersion"] = group_version;
  Json resources = Json::array();
  for (const ResourceType* served : types.types()) {
    const ResourceType& type = *served;
    if (type.ApiVersion() != group_version) continue;
    Json resource = Json::object();
    resource["name"] = type.plural;
    resource["singularName"] = type.singular;
    resource["namespaced"] = type.namespaced;
    resource["kind"] = type.kind;
    resource["verbs"] = Json(type.verbs);
    if (!type.short_names.empty()) resource["shortNames"] = Json(type.short_names);
    if (!type.categories.empty()) resource["categories"] = Json(type.categories);
    resource["storageVersionHash"] =
        absl::WebSafeBase64Escape(absl::StrCat(type.group, type.plural)).substr(0, 11);
    resources.push_back(resource);
    if (type.status_subresource) {
      Json status = Json::object();
      status["name"] = absl::StrCat(type.plural, "/status");
      status["singularName"] = "";
      status["namespaced"] = type.namespaced;
      status["kind"] = type.kind;
      status["verbs"] = Json::array({"get", "patch", "update"});
      resources.push_back(status);
    }
  }
  list["resources"] = std::move(resources);
  return list;
}

// apidiscovery.k8s.io/v2 APIGroupDiscovery for `group` ("" = core): its
// versions, the preferred one first.
Json AggregatedGroupJson(const ResourceTypeSet& types, const std::string& group) {
  Json item = Json::object();
  item["metadata"] = Json::object();
  if (!group.empty()) item["metadata"]["name"] = group;
  item["metadata"]["creationTimestamp"] = Json();
  Json versions = Json::array();
  for (const std::string& version_name : types.Versions(group)) {
    Json version = Json::object();
    version["version"] = version_name;
    Json resources = Json::array();
    for (const ResourceType* served : types.types()) {
      const ResourceType& type = *served;
      if (type.group != group || type.version != version_name) continue;
      Json resource = Json::object();
      resource["resource"] = type.plural;
      Json kind = Json::object();
      kind["group"] = type.group;
      kind["version"] = type.version;
      kind["kind"] = type.kind;
      resource["responseKind"] = kind;
      resource["scope"] = type.namespaced ? "Namespaced" : "Cluster";
      resource["singularResource"] = type.singular;
      resource["verbs"] = Json(type.verbs);
      if (!type.short_names.empty()) resource["shortNames"] = Json(type.short_names);
      if (!type.categories.empty()) resource["categories"] = Json(type.categories);
      if (type.status_subresource) {
        Json status = Json::object();
        status["subresource"] = "status";
        status["responseKind"] = kind;
        status["verbs"] = Json::array({"get", "patch", "update"});
        resource["subresources"] = Json::array({status});
      }
      resources.push_back(resource);
    }
    version["resources"] = std::move(resources);
    version["freshness"] = "Current";
    versions.push_back(std::move(version));
  }
  item["versions"] = std::move(versions);
  return item;
}

Json AggregatedListJson(const ResourceTypeSet& types, const std::vector<std::string>& groups) {
  Json list = Json::object();
  list["kind"] = "APIGroupDiscoveryList";
  list["apiVersion"] = "apidiscovery.k8s.io/v2";
  list["metadata"] = Json::object();
  Json items = Json::array();
  for (const std::string& group : groups) items.push_back(AggregatedGroupJson(types, group));
  list["items"] = std::move(items);
  return list;
}

// ---- OpenAPI v3 (what kubectl apply's field-validation check reads) ----

std::string OpenApiPath(const ResourceType& type) {
  return type.group.empty() ? absl::StrCat("api/", type.version)
                            : absl::StrCat("apis/", type.group, "/", type.version);
}

constexpr char kOpenApiHash[] = "FACETTEST0000000000000000000000000000000000000000000000000000001";

Json OpenApiRoot(const ResourceTypeSet& types) {
  Json root = Json::object();
  root["paths"] = Json::object();
  for (const ResourceType* served : types.types()) {
    const ResourceType& type = *served;
    Json entry = Json::object();
    entry["serverRelativeURL"] =
        absl::StrCat("/openapi/v3/", OpenApiPath(type), "?hash=", kOpenApiHash);
    root["paths"][OpenApiPath(type)] = entry;
  }
  return root;
}

std::string SchemaName(const ResourceType& type) {
  std::vector<std::string> parts =
      absl::StrSplit(type.group.empty() ? "io.k8s.api.core" : type.group, '.');
  if (!type.group.empty()) std::reverse(parts.begin(), parts.end());
  return absl::StrCat(absl::StrJoin(parts, "."), ".", type.version, ".", type.kind);
}

// A GroupVersion document: for each type a PATCH operation that declares the
// fieldValidation query parameter (so kubectl leaves validation to the server)
// and a permissive schema.
Json OpenApiGroupVersion(const ResourceTypeSet& types, const std::string& path) {
  Json doc = Json::object();
  doc["openapi"] = "3.0.0";
  doc["info"]["title"] = "Kubernetes";
  doc["info"]["version"] = "v1.32.0";
  doc["paths"] = Json::object();
  doc["components"]["schemas"] = Json::object();
  for (const ResourceType* served : types.types()) {
    const ResourceType& type = *served;
    if (OpenApiPath(type) != path) continue;
    Json gvk = Json::object();
    gvk["group"] = type.group;
    gvk["version"] = type.version;
    gvk["kind"] = type.kind;
    Json parameters = Json::array();
    for (const char* name : {"dryRun", "fieldManager", "fieldValidation", "force"}) {
      Json parameter = Json::object();
      parameter["name"] = name;
      parameter["in"] = "query";
      parameter["schema"]["type"] = std::string(name) == "force" ? "boolean" : "string";
      parameter["schema"]["uniqueItems"] = true;
      parameters.push_back(parameter);
    }
    Json ref = Json::object();
    ref["$ref"] = absl::StrCat("#/components/schemas/", SchemaName(type));
    Json response = Json::object();
    response["description"] = "OK";
    response["content"]["application/json"]["schema"] = ref;
    Json operation = Json::object();
    operation["operationId"] = absl::StrCat("patch", type.kind);
    operation["parameters"] = std::move(parameters);
    operation["requestBody"]["content"]["application/merge-patch+json"]["schema"]["type"] =
        "object";
    operation["responses"]["200"] = response;
    operation["x-kubernetes-action"] = "patch";
    operation["x-kubernetes-group-version-kind"] = gvk;
    std::string item_path = type.namespaced ? absl::StrCat("/", path, "/namespaces/{namespace}/",
                                                           type.plural, "/{name}")
                                            : absl::StrCat("/", path, "/", type.plural, "/{name}");
    doc["paths"][item_path]["patch"] = operation;
    Json schema = Json::object();
    schema["type"] = "object";
    schema["x-kubernetes-preserve-unknown-fields"] = true;
    schema["x-kubernetes-group-version-kind"] = Json::array({gvk});
    doc["components"]["schemas"][SchemaName(type)] = schema;
  }
  return doc;
}

}  // namespace

const char kAggregatedDiscoveryContentType[] =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

Json VersionJson() {
  Json version = Json::object();
  version["major"] = "1";
  version["minor"] = "32";
  version["gitVersion"] = "v1.32.0-facet-test";
  version["gitCommit"] = "0000000000000000000000000000000000000000";
  version["gitTreeState"] = "clean";
  version["buildDate"] = "2025-01-01T00:00:00Z";
  version["goVersion"] = "go1.23.4";
  version["compiler"] = "gc";
  version["platform"] = "linux/amd64";
  return version;
}

Json ApiVersionsJson(int port) {
  Json versions = Json::object();
  versions["kind"] = "APIVersions";
  versions["versions"] = Json::array({"v1"});
  Json address = Json::object();
  address["clientCIDR"] = "0.0.0.0/0";
  address["serverAddress"] = absl::StrCat("127.0.0.1:", port);
  versions["serverAddressByClientCIDRs"] = Json::array({address});
  return versions;
}

Json ApiGroupListJson(const ResourceTypeSet& types) {
  Json list = Json::object();
  list["kind"] = "APIGroupList";
  list["apiVersion"] = "v1";
  Json groups = Json::array();
  for (const std::string& group : types.Groups()) groups.push_back(GroupJson(types, group));
  list["groups"] = std::move(groups);
  return list;
}

std::optional<Json> ApiGroupJson(const ResourceTypeSet& types, const std::string& group) {
  std::vector<std::string> groups = types.Groups();
  if (std::find(groups.begin(), groups.end(), group) == groups.end()) return std::nullopt;
  Json api_group = GroupJson(types, group);
  api_group["kind"] = "APIGroup";
  api_group["apiVersion"] = "v1";
  return api_group;
}

std::optional<Json> ResourceListJson(const ResourceTypeSet& types,
                                     const std::string& group_version) {
  for (const ResourceType* type : types.types()) {
    if (type->ApiVersion() == group_version) return ResourceListFor(types, group_version);
  }
  return std::nullopt;
}

Json AggregatedDiscoveryJson(const ResourceTypeSet& types, bool core) {
  return AggregatedListJson(types, core ? std::vector<std::string>{""} : types.Groups());
}

Json OpenApiRootJson(const ResourceTypeSet& types) { return OpenApiRoot(types); }

std::optional<Json> OpenApiGroupVersionJson(const ResourceTypeSet& types, const std::string& path) {
  Json doc = OpenApiGroupVersion(types, path);
  if (doc["paths"].empty()) return std::nullopt;
  return doc;
}

std::string OpenApiV2Document(bool protobuf) {
  constexpr char kTitle[] = "Kubernetes";
  constexpr char kVersion[] = "v1.32.0";
  if (!protobuf) {
    return absl::StrCat(R"({"swagger":"2.0","info":{"title":")", kTitle, R"(","version":")",
                        kVersion, R"("},"paths":{},"definitions":{}})");
  }
  // openapi.v2.Document: swagger = 1, info = 2 (Info: title = 1, version =
  // 2), paths = 8, definitions = 9; every length here fits one varint byte.
  auto field = [](int number, absl::string_view bytes) {
    std::string out;
    out.push_back(static_cast<char>(number << 3 | 2));  // Length-delimited.
    out.push_back(static_cast<char>(bytes.size()));
    out.append(bytes.data(), bytes.size());
    return out;
  };
  const std::string info = field(1, kTitle) + field(2, kVersion);
  return field(1, "2.0") + field(2, info) + field(8, "") + field(9, "");
}

}  // namespace facet::testing
