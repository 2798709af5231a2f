// The source-independent form of Facet's custom resources, as a source (the
// manifest directory, the Kubernetes reflector) parsed them: structurally
// typed, not yet validated. The snapshot builder validates them.
#ifndef FACET_XDS_SERVER_SNAPSHOT_OBJECTS_H_
#define FACET_XDS_SERVER_SNAPSHOT_OBJECTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "envoy/service/discovery/v3/discovery.pb.h"
#include "xds_server/conditional/conditional.h"
#include "xds_server/json/shared_node.h"
#include "yaml-cpp/yaml.h"

namespace facet::xds {

inline constexpr char kXdsResourceKind[] = "XdsResource";
inline constexpr char kXdsAuthorityKind[] = "XdsAuthority";
// Objects a source translated from other kinds (a Service port, GRPCRoutes)
// rather than read as written; they carry ResourceObject::generated_from.
inline constexpr char kGeneratedKind[] = "Generated";

// Identifies the object a declaration came from.
struct ObjectRef {
  std::string kind;        // kXdsResourceKind, kXdsAuthorityKind or kGeneratedKind.
  std::string namespace_;  // Empty for cluster-scoped objects.
  std::string name;

  // Returns "namespace/name" for namespaced objects, "xdsauthority/name" otherwise.
  std::string ToString() const;

  friend bool operator==(const ObjectRef& a, const ObjectRef& b) {
    return std::tie(a.kind, a.namespace_, a.name) == std::tie(b.kind, b.namespace_, b.name);
  }
  // By kind, namespace, name. One compare() per field: std::tie's operator<
  // compares each equal field twice, and maps of objects share most kinds and
  // namespaces.
  friend bool operator<(const ObjectRef& a, const ObjectRef& b) {
    if (const int kind = a.kind.compare(b.kind); kind != 0) return kind < 0;
    if (const int ns = a.namespace_.compare(b.namespace_); ns != 0) return ns < 0;
    return a.name.compare(b.name) < 0;
  }
};

enum class Severity { kError, kWarning };

// One problem found in an object. `reason` is a CamelCase word fit for a
// Kubernetes condition (InvalidSpec, InvalidResource, InvalidConstraints,
// KeySetMismatch, OverlappingVariants, VariantGap, DuplicateName,
// DanglingReference, AuthorityNotAllowed, ClientCompatibility, TooComplex).
struct Finding {
  Severity severity = Severity::kError;
  std::string reason;
  std::string field;    // e.g. "spec.variants[1].match"; empty for the whole object.
  std::string message;  // What is wrong and what to do, in words.
  // Set when the problem is another object's: a reference to an object that
  // is rejected itself. Lets reports show that object's errors first.
  std::optional<ObjectRef> cause = std::nullopt;

  friend bool operator==(const Finding& a, const Finding& b) {
    return std::tie(a.severity, a.reason, a.field, a.message, a.cause) ==
           std::tie(b.severity, b.reason, b.field, b.message, b.cause);
  }
};

// Where an endpoint variant's ClusterLoadAssignment comes from instead of a
// written resource: the EndpointSlices of a Service in the object's
// namespace.
struct EndpointsFrom {
  std::string service;
  std::string port_name;  // Set when the port is given by name.
  int port_number = 0;    // Set (1-65535) when the port is given by number.
  // The slice port is the one named `port_name`, "" naming an unnamed one,
  // never matched by number (kube-proxy's mapping of a Service port, whose
  // number is not the pod's); `port_number` is unused.
  bool match_name_only = false;
};

struct VariantSpec {
  std::string label;  // spec.variants[i].name, or "variants[i]" when unnamed.
  // Canonical constraints (compiled from `match` or parsed from `constraints`).
  envoy::service::discovery::v3::DynamicParameterConstraints constraints;
  std::string constraints_field;  // Field the constraints came from, for messages.
  // The resource document (proto3 JSON as YAML). Held, not edited: it may
  // be the watch cache's, shared with every later build.
  json::SharedNode resource;
  // Set for spec.variants[i].endpointsFrom. The Kubernetes source fills
  // `resource` from the slices; where nothing does, the variant is rejected.
  std::optional<EndpointsFrom> endpoints_from;
  // Set on the variants compiled from the conditional elements ("@when") of
  // one written variant: what was written (shared by all of them), and which
  // of its conditional elements this one includes (ascending indices into
  // origin->elements). Findings about them point at what was written.
  std::shared_ptr<const ConditionalOrigin> origin;
  std::vector<size_t> included;
};

struct ResourceSpec {
  std::string type;
  std::string name;
  std::string authority;
  std::map<std::string, std::string> context_params;
  std::vector<VariantSpec> variants;
};

// An XdsResource object, or an object a source generated in the same form.
// When the source could not parse its spec, `spec` is empty and `findings`
// says why.
struct ResourceObject {
  ObjectRef ref;
  int64_t generation = 0;
  std::string location;  // Where it was read from (file:line or API path), for messages.
  std::optional<ResourceSpec> spec;
  std::vector<Finding> findings;
  // Set for a generated object: what it was generated for, in words that
  // complete "generated for ..." (e.g. "Service demo/greeter port 50051
  // (GRPCRoutes demo/a, demo/b)"). A generated object yields its name to an
  // object in its namespace that is not generated; both are told in
  // DuplicateName findings.
  // Like generation and location, it only labels: changing it alone
  // re-validates nothing.
  std::optional<std::string> generated_from;
};

// One entry of XdsAuthority spec.allowedClients: a client identity taken
// from a verified client certificate.
struct AllowedClient {
  enum class Kind {
    kSpiffeId,  // `spiffeId`: the certificate's SPIFFE ID (its one URI SAN).
    kDnsName,   // `dnsName`: one of the certificate's DNS SANs.
  };
  Kind kind = Kind::kSpiffeId;
  // As written. A SPIFFE ID ending in "/*" admits every ID below that path.
  std::string value;

  friend bool operator==(const AllowedClient& a, const AllowedClient& b) {
    return a.kind == b.kind && a.value == b.value;
  }
};

// An XdsAuthority object.
struct AuthorityObject {
  ObjectRef ref;
  int64_t generation = 0;
  std::string location;
  std::string authority;
  std::vector<std::string> allowed_namespaces;  // "*" admits every namespace.
  // Unset: every client may read the authority's resources. Set: only the
  // clients it lists (never empty once validated).
  std::optional<std::vector<AllowedClient>> allowed_clients;
  std::vector<Finding> findings;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_SNAPSHOT_OBJECTS_H_
