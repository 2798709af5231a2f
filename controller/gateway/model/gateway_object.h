// The Gateway API objects Facet reads (GRPCRoute, Service, EndpointSlice,
// ReferenceGrant) and Facet's XdsVariantPolicy, as parsed from a manifest or
// the Kubernetes API: defaults applied, every bound of the CRD checked, the
// problems as findings. The Gateway API front end translates them.
#ifndef FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_OBJECT_H_
#define FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_OBJECT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "xds_server/snapshot/objects.h"
#include "xds_server/json/shared_node.h"
#include "yaml-cpp/yaml.h"

namespace facet::controller::gateway {

inline constexpr char kGatewayGroup[] = "gateway.networking.k8s.io";
inline constexpr char kGrpcRouteKind[] = "GRPCRoute";
inline constexpr char kReferenceGrantKind[] = "ReferenceGrant";
inline constexpr char kServiceKind[] = "Service";
inline constexpr char kEndpointSliceKind[] = "EndpointSlice";
inline constexpr char kXdsVariantPolicyKind[] = "XdsVariantPolicy";

// Whether objects of `kind` belong to other owners and Facet only reads
// them: Services, EndpointSlices and ReferenceGrants, on which it reports no
// status. One with errors is ignored; for `facet validate` that is a warning,
// while a GRPCRoute or XdsVariantPolicy with errors is not Accepted. Thread-safe.
bool IsReadOnlyKind(absl::string_view kind);

// Finding reasons besides the parser's InvalidSpec (what the CRD's schema
// or CEL rules would refuse) and InvalidConstraints (a policy's `when`).
// A value the schema may allow but Facet cannot honour: an enum value this
// version does not know, an experimental field.
inline constexpr char kUnsupportedValue[] = "UnsupportedValue";

// How a method or header match compares (GRPCMethodMatchType,
// GRPCHeaderMatchType; the default is Exact).
enum class MatchType { kExact, kRegularExpression };

// A reference to an object with an optional section or port: a parentRef,
// a backendRef, a policy's targetRef. Group and kind carry the CRD defaults
// when not written; `namespace_` is empty when not written (the referring
// object's namespace applies).
struct ObjectReference {
  std::string group;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::optional<std::string> section_name;
  std::optional<int> port;
  std::string field;  // Where it was written: "spec.parentRefs[0]".

  friend bool operator==(const ObjectReference&, const ObjectReference&) = default;
};

struct MethodMatch {
  MatchType type = MatchType::kExact;
  std::string service;  // Empty: any service.
  std::string method;   // Empty: any method.
};

struct HeaderMatch {
  MatchType type = MatchType::kExact;
  std::string name;  // As written (header names compare without case).
  std::string value;
};

// One of a rule's matches: the method AND every header.
struct RouteMatch {
  std::optional<MethodMatch> method;  // Unset: every method.
  std::vector<HeaderMatch> headers;
  std::string field;  // "spec.rules[1].matches[0]".
};

// A filter, kept as its type and where it was written: no proxyless gRPC
// client runs the Gateway API's filters, so the front end reports each one.
struct RouteFilter {
  std::string type;   // RequestHeaderModifier, ResponseHeaderModifier, RequestMirror, ExtensionRef.
  std::string field;  // "spec.rules[0].filters[1]".
};

struct BackendRef {
  ObjectReference ref;  // group "" and kind Service by default; port required for a Service.
  int weight = 1;       // 0-1,000,000; 0 means no traffic.
  std::vector<RouteFilter> filters;
};

struct RouteRule {
  std::optional<std::string> name;  // A SectionName, unique within the route.
  std::vector<RouteMatch> matches;  // Empty: matches every call.
  std::vector<RouteFilter> filters;
  std::vector<BackendRef> backend_refs;
  bool session_persistence = false;  // The experimental field is set (unsupported).
  bool has_errors = false;           // Some error finding lies inside this rule.
  std::string field;                 // "spec.rules[1]".
};

// gateway.networking.k8s.io/v1 GRPCRoute spec.
struct GrpcRoute {
  std::vector<ObjectReference>
      parent_refs;  // group gateway.networking.k8s.io, kind Gateway by default.
  std::vector<std::string> hostnames;
  std::vector<RouteRule> rules;
};

struct ServicePort {
  std::string name;         // "" when unnamed.
  int port = 0;             // 1-65535.
  std::string protocol;     // TCP (default), UDP or SCTP.
  std::string target_port;  // A number or a port name, as written; "" when unset.
};

// Core v1 Service: what the front end serves for it.
struct ServiceInfo {
  std::string type;        // ClusterIP (default), NodePort, LoadBalancer or ExternalName.
  std::string cluster_ip;  // "None" for a headless Service.
  std::vector<ServicePort> ports;
  std::string external_name;

  bool headless() const { return cluster_ip == "None"; }
};

// discovery.k8s.io/v1 EndpointSlice, kept whole: the endpoints code reads
// slices as YAML (shared with the Kubernetes watch cache).
struct SliceRef {
  std::string service;  // Label kubernetes.io/service-name; "" when unlabelled.
  json::SharedNode slice;
};

// gateway.networking.k8s.io/v1beta1 (or v1) ReferenceGrant spec.
struct ReferenceGrant {
  struct From {
    std::string group;
    std::string kind;
    std::string namespace_;
  };
  struct To {
    std::string group;
    std::string kind;
    std::optional<std::string> name;  // Unset: every object of the kind.
  };
  std::vector<From> from;
  std::vector<To> to;
};

// facet.dev/v1alpha1 XdsVariantPolicy spec.
struct VariantPolicy {
  std::vector<ObjectReference> target_refs;  // GRPCRoutes; sectionName names a rule.
  json::SharedNode when;                     // As written (the `match` syntax).
  // `when` compiled by xds::CompileMatch; unset when it does not compile.
  std::optional<envoy::service::discovery::v3::DynamicParameterConstraints> constraints;
};

// One Gateway API object or XdsVariantPolicy. Error findings make it
// invalid as a whole; the parts that parsed are kept so that statuses can
// say which rules were fine.
struct GatewayObject {
  xds::ObjectRef ref;  // kind is one of the kinds above.
  int64_t generation = 0;
  std::string creation_timestamp;  // metadata.creationTimestamp as written; "" when unset.
  // metadata.creationTimestamp read as RFC 3339; unset when not written or
  // not a time (an error finding then). Route precedence orders by it, the
  // oldest first; an unset one sorts after every set one.
  std::optional<absl::Time> creation_time;
  std::string location;            // Where it was read from (file:line or API path).
  std::variant<GrpcRoute, ServiceInfo, SliceRef, ReferenceGrant, VariantPolicy> spec;
  std::vector<xds::Finding> findings;

  bool has_errors() const;
};

static_assert(std::is_nothrow_move_constructible_v<GatewayObject>);

}  // namespace facet::controller::gateway

#endif  // FACET_CONTROLLER_GATEWAY_MODEL_GATEWAY_OBJECT_H_
