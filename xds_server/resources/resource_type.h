// The xDS resource types Facet serves, described once each: type URL, aliases,
// name field, outgoing references, client-compatibility checks and how the
// protocol treats them. Everything else in Facet (decoding, validation,
// serving) is written against this table, never per type; the protocol facts
// that are not per type (the Resource wrapper's type URL, client feature
// names) live here too.
#ifndef FACET_XDS_SERVER_RESOURCES_RESOURCE_TYPE_H_
#define FACET_XDS_SERVER_RESOURCES_RESOURCE_TYPE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds {

class ResourceType;

// The type URL of the TP2 resource wrapper (envoy.service.discovery.v3.Resource),
// as SotW responses carry a wrapped resource in their Any.
inline constexpr absl::string_view kResourceWrapperTypeUrl =
    "type.googleapis.com/envoy.service.discovery.v3.Resource";

// The client feature with which a client (gRPC C++) says it reads Resource
// wrappers in SotW responses: Facet then wraps every resource it sends it.
inline constexpr char kResourceInSotwFeature[] = "xds.config.resource-in-sotw";

// A name one resource uses to refer to another.
struct ResourceReference {
  const ResourceType* target;  // Never null.
  std::string name;            // As written in the resource.
  std::string field;           // Path inside the resource, e.g. "rds.route_config_name".
};

// Something real gRPC clients would silently drop or NACK.
struct LintFinding {
  std::string field;    // Path inside the resource.
  std::string message;  // What a client does with it and how to fix it.
};

// Describes one xDS resource type. Instances are immutable singletons:
// thread-safe.
class ResourceType {
 public:
  struct Traits;  // Defined in resource_type.cc.

  explicit ResourceType(const Traits& traits) : traits_(traits) {}
  ResourceType(const ResourceType&) = delete;
  ResourceType& operator=(const ResourceType&) = delete;

  // Returns the full message name, e.g. "envoy.config.listener.v3.Listener".
  absl::string_view type_name() const;
  // Returns "type.googleapis.com/" + type_name().
  const std::string& type_url() const;
  // Returns the short alias accepted in spec.type: listener, route, cluster, endpoint.
  absl::string_view alias() const;
  // Returns the name of the field holding the resource name ("name" or "cluster_name").
  absl::string_view name_field() const;
  // Returns the make-before-break push rank: resources of a lower rank are
  // pushed before resources of a higher rank that may reference them.
  int push_rank() const;
  // Returns whether SotW responses of this type carry the complete set
  // (Listener, Cluster): a resource missing from one is deleted by the
  // client, and a client's first request naming nothing subscribes to every
  // resource (the legacy wildcard).
  bool full_state() const;

  // Returns a new empty message of this type.
  std::unique_ptr<google::protobuf::Message> New() const;
  // Returns the value of the name field.
  std::string GetName(const google::protobuf::Message& message) const;
  // Sets the name field.
  void SetName(absl::string_view name, google::protobuf::Message* message) const;

  // Returns the references `message` (named `served_name`) makes to other
  // resources. Fails with InvalidArgument when a reference cannot be derived
  // (e.g. an xdstp EDS cluster without service_name, which A47 forbids).
  absl::StatusOr<std::vector<ResourceReference>> References(
      const google::protobuf::Message& message, absl::string_view served_name) const;

  // Appends findings for content real gRPC clients reject or ignore.
  void Lint(const google::protobuf::Message& message, std::vector<LintFinding>* findings) const;

 private:
  const Traits& traits_;
};

// Returns the type named by a full type name, a type URL, or an alias; null if none.
const ResourceType* FindResourceType(absl::string_view type_or_alias);

// Returns the alias of the type `type_url` names ("listener", ...), or the
// URL itself made safe for a log line when it names no served type.
std::string ResourceTypeForLog(absl::string_view type_url);

// Returns the served types in push order (endpoints, clusters, routes, listeners).
absl::Span<const ResourceType* const> AllResourceTypes();

// Returns the served types as "listener (envoy.config.listener.v3.Listener), ...", for messages.
std::string DescribeResourceTypes();

const ResourceType& ListenerType();
const ResourceType& RouteConfigurationType();
const ResourceType& ClusterType();
const ResourceType& ClusterLoadAssignmentType();

// Decodes a resource document (proto3 JSON as YAML/JSON) of `type`. An "@type"
// member, if present, must be type.type_url(). The name field may be omitted
// (it is set to `served_name`); if present, it must normalise to `served_name`.
// `path` prefixes error messages (e.g. "spec.variants[0].resource").
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> DecodeResource(
    const ResourceType& type, const YAML::Node& document, absl::string_view path,
    absl::string_view served_name);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_RESOURCES_RESOURCE_TYPE_H_
