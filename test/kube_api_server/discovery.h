// The discovery documents of the test Kubernetes API server: /version, /api,
// /apis (legacy and aggregated apidiscovery.k8s.io/v2), APIResourceLists and
// the OpenAPI v3 documents kubectl reads before applying.
#ifndef FACET_TEST_KUBE_API_SERVER_DISCOVERY_H_
#define FACET_TEST_KUBE_API_SERVER_DISCOVERY_H_

#include <optional>
#include <string>

#include "test/kube_api_server/json.h"
#include "test/kube_api_server/resource_types.h"

namespace facet::testing {

// The Content-Type of aggregated discovery responses.
extern const char kAggregatedDiscoveryContentType[];

// /version: a v1.32 version.Info.
Json VersionJson();
// /api: APIVersions (v1) with this server's address.
Json ApiVersionsJson(int port);
// Each document below describes the types in `types` only: a group or
// version none of them belongs to is not served (404), as on a cluster
// without the CRDs.
// /apis: APIGroupList of every served group, each with its versions, the
// preferred one first.
Json ApiGroupListJson(const ResourceTypeSet& types);
// /apis/<group>: APIGroup, or nullopt for an unknown group.
std::optional<Json> ApiGroupJson(const ResourceTypeSet& types, const std::string& group);
// /api/v1 or /apis/<group>/<version>: APIResourceList with the main resources
// and their status subresources, or nullopt when not served.
std::optional<Json> ResourceListJson(const ResourceTypeSet& types,
                                     const std::string& group_version);
// /api (`core`) or /apis as an apidiscovery.k8s.io/v2 APIGroupDiscoveryList.
Json AggregatedDiscoveryJson(const ResourceTypeSet& types, bool core);
// /openapi/v3: the index of group-version documents.
Json OpenApiRootJson(const ResourceTypeSet& types);
// /openapi/v3/<path> ("apis/facet.dev/v1alpha1"): a document whose PATCH
// operations declare fieldValidation, or nullopt when not served.
std::optional<Json> OpenApiGroupVersionJson(const ResourceTypeSet& types, const std::string& path);

// /openapi/v2 as kube-apiserver serves it to kubectl before 1.27 (which reads
// it, as protobuf, before every `apply` and refuses to run when it is
// missing): a Swagger 2.0 document without definitions, a permissive
// placeholder as the v3 documents are (kubectl validates only the kinds it
// finds defined). `protobuf` selects the gnostic openapi.v2.Document encoding
// kubectl asks for (Accept: kOpenApiV2ProtobufContentType); JSON otherwise.
inline constexpr char kOpenApiV2ProtobufContentType[] =
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
std::string OpenApiV2Document(bool protobuf);

}  // namespace facet::testing

#endif  // FACET_TEST_KUBE_API_SERVER_DISCOVERY_H_
